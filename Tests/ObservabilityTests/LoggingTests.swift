import Foundation
import Testing
@testable import Observability
import Basics
import ObservabilityTestSupport

/// 2024-02-29T12:34:56.789Z
private let fixedDate = WallTime(timeIntervalSince1970: 1_709_210_096.789)

private func record(
    _ message: String = "hello", level: LogLevel = .info, metadata: [String: LogValue] = [:]
) -> LogRecord {
    LogRecord(timestamp: fixedDate, level: level, label: "relay", message: message, metadata: metadata)
}

/// Reads everything `body` wrote to a real file descriptor (a temporary file, so a large
/// output cannot block the writer as a full pipe would).
private func capture(_ body: (Int32) -> Void) throws -> String {
    var template = Array("/tmp/observability-test-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    try #require(fd >= 0)
    let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    defer { unlink(path) }
    body(fd)
    close(fd)
    return try String(contentsOfFile: path, encoding: .utf8)
}

@Suite("Log levels")
struct LogLevelTests {
    @Test("levels order by severity, not alphabetically")
    func ordering() {
        #expect(LogLevel.trace < .debug)
        #expect(LogLevel.debug < .info)
        #expect(LogLevel.info < .notice)
        #expect(LogLevel.notice < .warning)
        #expect(LogLevel.warning < .error)
        #expect(LogLevel.error < .critical)
        #expect(LogLevel(rawValue: "warning") == .warning)
    }

    @Test("a logger drops lines below its level without building the message")
    func threshold() {
        let sink = InMemoryLogSink()
        let logger = Logger(label: "t", level: .warning, sink: sink)
        var built = false
        func expensive() -> String { built = true; return "x" }
        logger.info(expensive())
        #expect(!built)
        #expect(sink.records.isEmpty)
        logger.error("boom")
        #expect(sink.records.map(\.message) == ["boom"])
        #expect(sink.records.first?.level == .error)
    }
}

@Suite("Logger metadata")
struct LoggerMetadataTests {
    @Test("with(_:_:) adds context to a copy and leaves the original alone")
    func withCopies() {
        let sink = InMemoryLogSink()
        let base = Logger(label: "relay", level: .trace, sink: sink)
        let scoped = base.with("request.id", "abc").with("attempt", 2)
        scoped.info("one")
        base.info("two")
        let records = sink.records
        #expect(records[0].metadata == ["request.id": "abc", "attempt": "2"])
        #expect(records[1].metadata.isEmpty)
        #expect(records[0].label == "relay")
    }

    @Test("call metadata overrides the logger's on the same key")
    func callWins() {
        let sink = InMemoryLogSink()
        let logger = Logger(label: "relay", sink: sink).with("apns.reason", "old")
        logger.warning("m", ["apns.reason": "BadTopic", "status": 502])
        #expect(sink.records.first?.metadata == ["apns.reason": .string("BadTopic"), "status": .int(502)])
    }

    @Test("the in-memory sink keeps only the newest records past its capacity")
    func bounded() {
        let sink = InMemoryLogSink(capacity: 3)
        let logger = Logger(label: "t", sink: sink)
        for i in 0..<5 { logger.info("\(i)") }
        #expect(sink.records.map(\.message) == ["2", "3", "4"])
        sink.clear()
        #expect(sink.records.isEmpty)
    }
}

@Suite("JSON log lines")
struct JSONLogSinkTests {
    @Test("fixed fields come first, then metadata keys in order, typed")
    func layout() {
        let line = JSONLogSink().format(record(metadata: [
            "request.id": "r1", "status": 410, "degraded": true, "latency": 0.25,
        ]))
        #expect(line == #"{"ts":"2024-02-29T12:34:56.789Z","level":"info","label":"relay","msg":"hello","degraded":true,"latency":0.25,"request.id":"r1","status":410}"#)
    }

    @Test("quotes, backslashes and control characters are escaped so every line parses")
    func escaping() throws {
        let nasty = "a\"b\\c\nd\re\tf\u{01}g\u{7F}h\u{2028}é🙂"
        let line = JSONLogSink().format(record(nasty, metadata: ["k\"ey": .string(nasty)]))
        #expect(!line.contains("\n"))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == nasty)
        #expect(object["k\"ey"] as? String == nasty)
    }

    @Test("metadata cannot shadow the fixed fields")
    func reserved() throws {
        let line = JSONLogSink().format(record(metadata: ["msg": "sneaky", "level": "x"]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "hello")
        #expect(object["level"] as? String == "info")
        #expect(object["metadata.msg"] as? String == "sneaky")
    }

    @Test("numbers are written exactly as Swift prints them, latencies of every millisecond fraction included")
    func doubles() {
        func written(_ d: Double) -> String {
            String(decoding: JSONBlock.bytes { appendDouble(d, to: &$0) }, as: UTF8.self)
        }
        for thousandths in 0..<120_000 {
            let latency = Double(thousandths) / 1000
            #expect(written(latency) == String(latency))
            if written(latency) != String(latency) { return }
        }
        for d in [-0.0, -2.5, -0.001, 0.0001, 0.1234, 1e-7, 999_999_999.999, 1e9, 1e12, 1e300, 123_456.7891] {
            #expect(written(d) == String(d))
        }
    }

    @Test("non-finite numbers become strings so the line stays valid JSON")
    func nonFinite() throws {
        let line = JSONLogSink().format(record(metadata: ["x": .double(.nan), "y": .double(.infinity)]))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["x"] as? String == "nan")
        #expect(object["y"] as? String == "inf")
    }

    @Test("a line given field by field in key order is written byte for byte as its record")
    func fieldsAsTheyCome() {
        let nasty = "a\"b\\c\nd\u{01}\u{2028}é"
        let fields: [LogField] = [
            LogField("apns.id", .string("8e0f3f0c-1d5e-4c3a-9b1a-2f4e6d8c0a1b")), LogField("degraded", true),
            LogField("http.status", 201), LogField("k\"ey", .string(nasty)), LogField("latency_ms", .double(12.5)),
            LogField("level", "shadow"), LogField("nan", .double(.nan)), LogField("route", "push"),
        ]
        let sink = JSONLogSink()
        let direct = sink.format(timestamp: fixedDate, level: .warning, label: "relay", message: nasty) { line in
            for field in fields { line.add(name: field.key, field.value) }
        }
        let viaRecord = sink.format(LogRecord(timestamp: fixedDate, level: .warning, label: "relay", message: nasty, fields: fields))
        #expect(direct == viaRecord)
        #expect(direct.hasPrefix(#"{"ts":"2024-02-29T12:34:56.789Z","level":"warning","label":"relay","msg":"#))
        #expect(direct.hasSuffix(#","route":"push"}"#))

        // Keys given as LogKeys (spelled as JSON once) come out as any other key: escaped when they need it.
        let staticKeys = sink.format(timestamp: fixedDate, level: .warning, label: "relay", message: nasty) { line in
            line.add("apns.id", .string("8e0f3f0c-1d5e-4c3a-9b1a-2f4e6d8c0a1b"))
            line.add("degraded", true)
            line.add("http.status", 201)
            line.add("k\"ey", .string(nasty))
            line.add("latency_ms", .double(12.5))
            line.add("level", "shadow")
            line.add("nan", .double(.nan))
            line.add("route", "push")
            line.add("é", "accent")
        }
        let viaRecordToo = sink.format(LogRecord(timestamp: fixedDate, level: .warning, label: "relay", message: nasty,
                                                 fields: fields + [LogField("é", "accent")]))
        #expect(staticKeys == viaRecordToo)
        #expect(staticKeys.contains(#","metadata.level":"shadow","#))
    }

    @Test("a line given field by field reaches any sink as a record, with the logger's context merged in")
    func fieldsToRecordSinks() throws {
        let sink = InMemoryLogSink()
        let logger = Logger(label: "relay", sink: sink)
        logger.log(.info, "push delivered", inKeyOrder: { line in
            line.add("http.status", 201)
            line.add("route", "push")
        })
        logger.with("instance", "a").log(.info, "push delivered", inKeyOrder: { line in
            line.add("route", "relay-to")
        })
        logger.log(.debug, "dropped", inKeyOrder: { line in line.add("route", "x") })
        let records = sink.records
        try #require(records.count == 2)
        #expect(records[0].fields == [LogField("http.status", 201), LogField("route", "push")])
        #expect(records[0].message == "push delivered")
        #expect(records[1].fields == [LogField("instance", "a"), LogField("route", "relay-to")])
    }

    @Test("a line given field by field goes out through the batch like any other")
    func fieldsThroughTheWriter() throws {
        let output = try capture { fd in
            let logger = Logger(label: "relay", sink: JSONLogSink(fileDescriptor: fd))
            logger.log(.info, "push delivered", inKeyOrder: { line in line.add("http.status", 201) })
            logger.info("plain", ["http.status": 201])
        }
        let lines = output.split(separator: "\n").map(String.init)
        try #require(lines.count == 2)
        #expect(lines[0].hasSuffix(#""msg":"push delivered","http.status":201}"#))
        #expect(lines[1].hasSuffix(#""msg":"plain","http.status":201}"#))
    }

    @Test("a push's line is written byte for byte as it always was")
    func pushLineBytes() {
        let line = JSONLogSink().format(timestamp: fixedDate, level: .info, label: "relay", message: "push delivered") { line in
            line.add("apns.environment", "production")
            line.add("apns.id", "8e0f3f0c-1d5e-4c3a-9b1a-2f4e6d8c0a1b")
            line.add("apns.status", 200)
            line.add("device", "5d41402a")
            line.add("http.status", 201)
            line.add("latency_ms", .double(1.25))
            line.add("peer", "127.0.0.1")
            line.add("request.id", "0f5b8a52-7c1e-4d2b-a3f9-6e0d1c2b3a49")
            line.add("route", "push")
        }
        #expect(line == #"{"ts":"2024-02-29T12:34:56.789Z","level":"info","label":"relay","msg":"push delivered","#
            + #""apns.environment":"production","apns.id":"8e0f3f0c-1d5e-4c3a-9b1a-2f4e6d8c0a1b","apns.status":200,"#
            + #""device":"5d41402a","http.status":201,"latency_ms":1.25,"peer":"127.0.0.1","#
            + #""request.id":"0f5b8a52-7c1e-4d2b-a3f9-6e0d1c2b3a49","route":"push"}"#)

        let refused = JSONLogSink().format(timestamp: fixedDate, level: .warning, label: "relay", message: "push answered 400") { line in
            line.add("apns.environment", "sandbox")
            line.add("apns.error", "timeout")
            line.add("http.status", 400)
            line.add("latency_ms", .double(0.05))
            line.add("payload.degraded", true)
            line.add("payload.degraded_reason", "too \"big\"\n")
            line.add("reason", "bad\u{2028}é")
            line.add("request.id", "r")
            line.add("route", "relay-to")
        }
        #expect(refused == #"{"ts":"2024-02-29T12:34:56.789Z","level":"warning","label":"relay","msg":"push answered 400","#
            + #""apns.environment":"sandbox","apns.error":"timeout","http.status":400,"latency_ms":0.05,"#
            + #""payload.degraded":true,"payload.degraded_reason":"too \"big\"\n","reason":"bad\u2028é","#
            + #""request.id":"r","route":"relay-to"}"#)
    }

    @Test("a value added as bytes is written as the same text added as a string, in a JSON line and in a record",
          arguments: ["0f5b8a52-7c1e-4d2b-a3f9-6e0d1c2b3a49", "", "q\"u\\o\nte\u{7}", "bad\u{2028}é",
                      String(repeating: "\u{1}", count: 400), String(repeating: "z", count: 3000)])
    func textBytesAsString(_ text: String) {
        func line(_ fields: (inout LogFieldWriter) -> Void) -> String {
            JSONLogSink().format(timestamp: fixedDate, level: .info, label: "relay", message: "m", fields: fields)
        }
        let asString = line { $0.add("a", 1); $0.add("request.id", .string(text)); $0.add("route", "push") }
        let asBytes = line { w in
            w.add("a", 1)
            Array(text.utf8).withUnsafeBufferPointer { w.add("request.id", text: $0) }
            w.add("route", "push")
        }
        #expect(asBytes == asString)

        let sink = InMemoryLogSink()
        Logger(label: "relay", sink: sink).log(.info, "m", inKeyOrder: { w in
            Array(text.utf8).withUnsafeBufferPointer { w.add("request.id", text: $0) }
        })
        #expect(sink.records.last?.metadata["request.id"] == .string(text))
    }

    @Test("timestamps are UTC with milliseconds, zero-padded, also before 1970")
    func timestamps() {
        #expect(formatTimestamp(WallTime(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(formatTimestamp(WallTime(timeIntervalSince1970: 1.007)) == "1970-01-01T00:00:01.007Z")
        #expect(formatTimestamp(WallTime(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
        #expect(formatTimestamp(fixedDate) == "2024-02-29T12:34:56.789Z")
        // Near both ends of what a WallTime holds.
        #expect(formatTimestamp(WallTime(timeIntervalSince1970: 9_223_372_036.25)) == "2262-04-11T23:47:16.250Z")
        #expect(formatTimestamp(WallTime(timeIntervalSince1970: -9_214_560_000)) == "1678-01-01T00:00:00.000Z")
    }

    @Test("a clock reading in nanoseconds prints its milliseconds, rounded to the microsecond first as a Date was")
    func nanosecondTimestamps() {
        // 2024-02-29T12:34:56 and a fraction: below the microsecond boundary it rounds up, above it stays.
        let second: Int64 = 1_709_210_096 * 1_000_000_000
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: second + 789_999_600)) == "2024-02-29T12:34:56.790Z")
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: second + 789_999_400)) == "2024-02-29T12:34:56.789Z")
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: second + 999_999_700)) == "2024-02-29T12:34:57.000Z")
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: -1)) == "1970-01-01T00:00:00.000Z")
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: -1_000_600)) == "1969-12-31T23:59:59.998Z")
        // The last day of a leap century and the first of the next year.
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: 951_782_400 * 1_000_000_000)) == "2000-02-29T00:00:00.000Z")
        #expect(formatTimestamp(WallTime(nanosecondsSince1970: 1_767_225_599_999_000_000)) == "2025-12-31T23:59:59.999Z")
    }

    @Test("the wall clock reads what time(2) reads, to the second")
    func wallClockIsRealTime() {
        let before = Int64(time(nil))
        let now = WallTime.now
        // glibc's time(2) reads the coarse clock, up to a tick (4 ms) behind clock_gettime's: read
        // just after a second turned, `now` may be in the new second while `after` is not yet.
        let after = Int64(time(nil)) + 1
        #expect(now.unixSeconds >= before && now.unixSeconds <= after)
        #expect(now.timeIntervalSince1970 >= Double(before) && now.timeIntervalSince1970 < Double(after + 1))
    }

    @Test("lines written from many threads never interleave")
    func concurrentLines() throws {
        let output = try capture { fd in
            let logger = Logger(label: "load", sink: JSONLogSink(fileDescriptor: fd))
            let padding = String(repeating: "x", count: 300)
            DispatchQueue.concurrentPerform(iterations: 8) { thread in
                for i in 0..<25 { logger.info("line", ["thread": .int(thread), "i": .int(i), "pad": .string(padding)]) }
            }
        }
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.last == "")
        #expect(lines.count == 8 * 25 + 1)
        for line in lines.dropLast() {
            let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(object?["msg"] as? String == "line")
        }
    }
}

@Suite("Batched log writes")
struct LogBatchingTests {
    @Test("a batching thread holds its lines for maxDelay after the turn that logged them, then writes them whole and in order")
    func heldThenWritten() throws {
        /// What the file held and what `endOfTurn` answered at each of the loop's times.
        var turns: [(written: Bool, due: Int64?)] = []
        let start: Int64 = 7_000_000_000
        let output = try capture { fd in
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var seen: [(Bool, Int64?)] = []
            let thread = Thread {
                LogBatching.begin()
                let logger = Logger(label: "t", sink: JSONLogSink(fileDescriptor: fd))
                for i in 0..<3 { logger.info("line \(i)") }
                for now in [start, start + LogBatching.maxDelay - 1, start + LogBatching.maxDelay] {
                    let due = LogBatching.endOfTurn(now: now)
                    var size = stat()
                    fstat(fd, &size)
                    seen.append((size.st_size > 0, due))
                }
                LogBatching.end()
                done.signal()
            }
            thread.start()
            done.wait()
            turns = seen
        }
        #expect(turns.map(\.written) == [false, false, true])
        #expect(turns.map(\.due) == [LogBatching.maxDelay, 1, nil], "held lines tell the loop when to come back")
        let lines = output.split(separator: "\n")
        #expect(lines.count == 3)
        for (i, line) in lines.enumerated() { #expect(line.contains("\"msg\":\"line \(i)\"")) }
    }

    @Test("a thread that does not batch writes each line at once")
    func unbatched() throws {
        let output = try capture { fd in
            Logger(label: "t", sink: JSONLogSink(fileDescriptor: fd)).info("now")
            var size = stat()
            fstat(fd, &size)
            #expect(size.st_size > 0)
        }
        #expect(output.contains(#""msg":"now""#))
    }
}

@Suite("Text log lines")
struct TextLogSinkTests {
    @Test("a human line: time, level, label, message, then key=value pairs")
    func layout() {
        let line = TextLogSink().format(record("push sent", metadata: ["status": 201, "reason": "two words"]))
        #expect(line == #"2024-02-29T12:34:56.789Z info [relay] push sent reason="two words" status=201"#)
    }

    @Test("newlines in a message cannot forge a second line")
    func oneLine() throws {
        let output = try capture { fd in
            Logger(label: "t", sink: TextLogSink(fileDescriptor: fd)).error("a\nfake line", ["k": "v\nw"])
        }
        #expect(output.filter { $0 == "\n" }.count == 1)
        #expect(output.contains(#"a\nfake line"#))
    }

    @Test("a value with a backslash and a quote cannot forge more keys")
    func noForgedKeys() {
        let hostile = #"x\" http.status=201 device=00000000 forged=yes z=""#
        let line = TextLogSink().format(record("push delivered", metadata: ["request.id": .string(hostile), "http.status": 503]))
        let pairs = logfmtPairs(line)
        #expect(pairs.map(\.key) == ["http.status", "request.id"])
        #expect(pairs.first { $0.key == "request.id" }?.value == hostile)
        #expect(pairs.first { $0.key == "http.status" }?.value == "503")
    }

    @Test("control characters and backslashes are escaped, and such a value is quoted")
    func controlCharacters() {
        let line = TextLogSink().format(record("m", metadata: ["k": "a\\b\u{1B}[31m"]))
        #expect(line.hasSuffix(#" k="a\\b\u{1b}[31m""#))
        #expect(!line.unicodeScalars.contains { $0.value < 0x20 })
    }
}

/// The `key=value` pairs after the message, read the way logfmt readers do: a quoted value ends
/// at the first quote not escaped by a backslash.
private func logfmtPairs(_ line: String) -> [(key: String, value: String)] {
    let scalars = Array(line.unicodeScalars)
    var pairs: [(key: String, value: String)] = []
    var i = 0
    while i < scalars.count {
        // A key is a run of non-space characters followed by `=`, after a space.
        guard scalars[i] == " " else { i += 1; continue }
        var j = i + 1
        while j < scalars.count, scalars[j] != " ", scalars[j] != "=" { j += 1 }
        guard j < scalars.count, scalars[j] == "=", j > i + 1 else { i = j; continue }
        let key = String(String.UnicodeScalarView(scalars[(i + 1)..<j]))
        var value = String.UnicodeScalarView()
        var k = j + 1
        if k < scalars.count, scalars[k] == "\"" {
            k += 1
            while k < scalars.count, scalars[k] != "\"" {
                if scalars[k] == "\\", k + 1 < scalars.count { k += 1 }
                value.append(scalars[k])
                k += 1
            }
            k += 1
        } else {
            while k < scalars.count, scalars[k] != " " { value.append(scalars[k]); k += 1 }
        }
        pairs.append((key, String(value)))
        i = k
    }
    return pairs
}

@Suite("Calendar dates of timestamps")
struct CivilDateTests {
    @Test("every day a timestamp can fall on has the date gmtime_r gives it")
    func everyDayAsGmtime() {
        // WallTime reaches from 1677-09-21 to 2262-04-11: about 106,752 days either side of 1970.
        for days in -106_752...106_751 {
            var seconds = time_t(days) * 86_400
            var parts = tm()
            gmtime_r(&seconds, &parts)
            let expected = CivilDate(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1, day: Int(parts.tm_mday))
            let date = CivilDate(daysSince1970: days)
            if date != expected {
                Issue.record("day \(days): \(date), gmtime_r says \(expected)")
                return
            }
        }
    }

    @Test("a timestamp at any instant reads as gmtime_r and its milliseconds spell it")
    func instantsAsGmtime() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let nanos = Int64.random(in: -9_214_560_000_000_000_000...9_223_372_036_000_000_000, using: &rng)
            let date = WallTime(nanosecondsSince1970: nanos)
            let micros = date.unixMicroseconds
            let millis = micros >= 0 ? micros / 1000 : (micros - 999) / 1000
            var seconds = time_t(millis >= 0 ? millis / 1000 : (millis - 999) / 1000)
            var parts = tm()
            gmtime_r(&seconds, &parts)
            func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
            let fraction = Int(millis - Int64(seconds) * 1000)
            let expected = "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
                + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
                + String(repeating: "0", count: 3 - String(fraction).count) + "\(fraction)Z"
            if formatTimestamp(date) != expected {
                Issue.record("\(nanos) ns: \(formatTimestamp(date)), gmtime_r says \(expected)")
                return
            }
        }
    }
}
