internal import Basics

/// safe to share across threads.
func formatTimestamp(_ date: WallTime) -> String {
    String(decoding: JSONBlock.bytes { appendTimestamp(date, to: &$0) }, as: UTF8.self)
}

func appendTimestamp(_ date: WallTime, to out: inout JSONBlock) {
    // Whole microseconds first (rounded, as when the clock was read as a Double), then milliseconds.
    let micros = date.unixMicroseconds
    let totalMillis = micros >= 0 ? micros / 1000 : (micros - 999) / 1000
    let seconds = totalMillis >= 0 ? totalMillis / 1000 : (totalMillis - 999) / 1000
    let millis = Int(totalMillis - seconds * 1000)
    let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
    let secondOfDay = Int(seconds - days * 86_400)
    let date = CivilDate(daysSince1970: Int(days))
    // `YYYY-MM-DDTHH:MM:SS.mmmZ`, written straight into the line; a WallTime lies between the
    // years 1677 and 2262, so the year has four digits.
    out.append(upTo: 24) { b in
        func put(_ value: Int, at i: Int, width: Int) {
            var v = value
            for k in (0..<width).reversed() {
                b[i + k] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: v % 10)
                v /= 10
            }
        }
        put(date.year, at: 0, width: 4); b[4] = UInt8(ascii: "-")
        put(date.month, at: 5, width: 2); b[7] = UInt8(ascii: "-")
        put(date.day, at: 8, width: 2); b[10] = UInt8(ascii: "T")
        put(secondOfDay / 3600, at: 11, width: 2); b[13] = UInt8(ascii: ":")
        put(secondOfDay / 60 % 60, at: 14, width: 2); b[16] = UInt8(ascii: ":")
        put(secondOfDay % 60, at: 17, width: 2); b[19] = UInt8(ascii: ".")
        put(millis, at: 20, width: 3); b[23] = UInt8(ascii: "Z")
        return 24
    }
}

/// A day of the proleptic Gregorian calendar, what `gmtime_r` gives for it without its lock and
/// time-zone bookkeeping (every line has a timestamp). Howard Hinnant's `civil_from_days`: the
/// year is counted from March so the leap day comes last, in eras of 400 years.
struct CivilDate: Equatable {
    var year: Int, month: Int, day: Int

    init(daysSince1970 days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    }

    init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }
}
