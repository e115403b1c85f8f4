// When a served certificate expires, read from its PEM text: base64 to DER, then the few DER
// elements in front of the validity (RFC 5280 §4.1). No OpenSSL call, no signature check: the
// context that serves the certificate has already loaded it.

/// The notAfter of the first certificate in a PEM text, in Unix seconds.
enum CertificateExpiry {
    /// nil when the text holds no certificate this reader can walk.
    static func notAfter(pem: String) -> Int64? {
        guard let der = firstCertificateDER(pem) else { return nil }
        var reader = DERReader(bytes: der)
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber,
        // signature, issuer, validity SEQUENCE { notBefore, notAfter }, … } … }
        guard var certificate = reader.enter(0x30), var tbs = certificate.enter(0x30) else { return nil }
        if tbs.peekTag == 0xA0 { guard tbs.skip() else { return nil } }
        guard tbs.skip(), tbs.skip(), tbs.skip(), var validity = tbs.enter(0x30), validity.skip() else { return nil }
        guard let tag = validity.peekTag, let text = validity.enter(tag)?.rest else { return nil }
        return time(String(decoding: text, as: UTF8.self), generalized: tag == 0x18)
    }

    /// UTCTime `YYMMDDHHMMSSZ` (years 1950–2049) or GeneralizedTime `YYYYMMDDHHMMSSZ`.
    private static func time(_ text: String, generalized: Bool) -> Int64? {
        let digits = Array(text.utf8)
        let yearDigits = generalized ? 4 : 2
        guard digits.count == yearDigits + 11, digits.last == UInt8(ascii: "Z"),
              digits.dropLast().allSatisfy({ (48...57).contains($0) }) else { return nil }
        func number(_ start: Int, _ count: Int) -> Int64 {
            digits[start..<(start + count)].reduce(0) { $0 * 10 + Int64($1 - 48) }
        }
        var year = number(0, yearDigits)
        if !generalized { year += year < 50 ? 2000 : 1900 }
        let (month, day) = (number(yearDigits, 2), number(yearDigits + 2, 2))
        let seconds = number(yearDigits + 4, 2) * 3600 + number(yearDigits + 6, 2) * 60 + number(yearDigits + 8, 2)
        return daysFromCivil(year: year, month: month, day: day) * 86_400 + seconds
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The base64 between the first BEGIN/END CERTIFICATE lines, decoded.
    private static func firstCertificateDER(_ pem: String) -> [UInt8]? {
        let text = Array(pem.utf8)
        func find(_ marker: String, from start: Int) -> Int? {
            let marker = Array(marker.utf8)
            guard text.count - start >= marker.count else { return nil }
            return (start...(text.count - marker.count)).first { text[$0..<($0 + marker.count)].elementsEqual(marker) }
        }
        let header = "-----BEGIN CERTIFICATE-----"
        guard let begin = find(header, from: 0), let end = find("-----END CERTIFICATE-----", from: begin + header.utf8.count) else {
            return nil
        }
        var der: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text[(begin + header.utf8.count)..<end] {
            let value: UInt32
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = UInt32(c - 65)
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = UInt32(c - 97 + 26)
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = UInt32(c - 48 + 52)
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            default: continue  // line breaks, padding
            }
            accumulator = accumulator << 6 | value
            bits += 6
            if bits >= 8 {
                bits -= 8
                der.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return der
    }
}

/// Reads DER elements in order from a slice of bytes.
private struct DERReader {
    var rest: ArraySlice<UInt8>

    init(bytes: [UInt8]) { rest = bytes[...] }
    private init(slice: ArraySlice<UInt8>) { rest = slice }

    var peekTag: UInt8? { rest.first }

    /// The next element's tag, its content, and what follows it.
    private func next() -> (tag: UInt8, content: ArraySlice<UInt8>, after: ArraySlice<UInt8>)? {
        var i = rest.startIndex
        guard i < rest.endIndex else { return nil }
        let tag = rest[i]
        i += 1
        guard i < rest.endIndex else { return nil }
        var length = Int(rest[i])
        i += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, rest.endIndex - i >= count else { return nil }
            length = rest[i..<(i + count)].reduce(0) { $0 << 8 | Int($1) }
            i += count
        }
        guard length >= 0, rest.endIndex - i >= length else { return nil }
        return (tag, rest[i..<(i + length)], rest[(i + length)...])
    }

    /// Steps into the next element, which must have `tag`; moves past it.
    mutating func enter(_ tag: UInt8) -> DERReader? {
        guard let element = next(), element.tag == tag else { return nil }
        rest = element.after
        return DERReader(slice: element.content)
    }

    /// Moves past the next element; false when there is none.
    mutating func skip() -> Bool {
        guard let element = next() else { return false }
        rest = element.after
        return true
    }
}
