// Logging shaped like swift-log: a `Logger` value is passed in (never a global), it carries
// its own metadata, and where the lines go is a `LogSink` chosen once at start-up.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
package import Encoders

/// How serious a log line is; ordered so a logger can drop everything below its threshold.
package enum LogLevel: String, Sendable, Comparable, CaseIterable {
    case trace, debug, info, notice, warning, error, critical

    /// Declaration order is severity order, so the comparison follows it rather than the raw strings.
    private var severity: Int {
        switch self {
        case .trace: 0
        case .debug: 1
        case .info: 2
        case .notice: 3
        case .warning: 4
        case .error: 5
        case .critical: 6
        }
    }

    package static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.severity < rhs.severity }
}

/// A metadata value. Numbers and booleans stay typed so JSON log consumers can filter on them
/// (`"status": 410` rather than `"status": "410"`).
package enum LogValue: Sendable, Equatable, CustomStringConvertible,
    ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    package init(stringLiteral value: String) { self = .string(value) }
    package init(integerLiteral value: Int) { self = .int(value) }
    package init(floatLiteral value: Double) { self = .double(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }

    package var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        }
    }
}

/// One metadata entry of a line.
package struct LogField: Sendable, Equatable {
    package var key: String
    package var value: LogValue

    package init(_ key: String, _ value: LogValue) {
        self.key = key
        self.value = value
    }
}

/// One log line before formatting; sinks receive it whole so a line is never split across writes.
package struct LogRecord: Sendable, Equatable {
    package var timestamp: WallTime
    package var level: LogLevel
    package var label: String
    package var message: String
    /// The metadata sorted by key, one entry per key: the order lines are written in, kept as a
    /// list so a hot line is formatted without hashing a dictionary twice.
    package private(set) var fields: [LogField]

    /// The logger's metadata merged with the call's (the call wins on a clash).
    package var metadata: [String: LogValue] {
        get { Dictionary(fields.map { ($0.key, $0.value) }, uniquingKeysWith: { _, last in last }) }
        set { fields = newValue.map { LogField($0.key, $0.value) }.sorted { $0.key < $1.key } }
    }

    package init(timestamp: WallTime, level: LogLevel, label: String, message: String, metadata: [String: LogValue]) {
        self.timestamp = timestamp
        self.level = level
        self.label = label
        self.message = message
        self.fields = metadata.map { LogField($0.key, $0.value) }.sorted { $0.key < $1.key }
    }

    /// `fields` in any order; sorted here unless they already are (a caller that writes them in
    /// key order pays one comparison per field). Of two equal keys the later one is kept.
    package init(timestamp: WallTime, level: LogLevel, label: String, message: String, fields: [LogField]) {
        self.timestamp = timestamp
        self.level = level
        self.label = label
        self.message = message
        var sorted = true
        for i in fields.indices.dropFirst() where !(fields[i - 1].key < fields[i].key) {
            sorted = false
            break
        }
        if sorted {
            self.fields = fields
        } else {
            var unique: [String: LogValue] = [:]
            for field in fields { unique[field.key] = field.value }
            self.fields = unique.map { LogField($0.key, $0.value) }.sorted { $0.key < $1.key }
        }
    }
}

/// Where formatted lines go. A sink is shared by every logger of a process, so it must be
/// safe to call from any thread and must never interleave two lines.
package protocol LogSink: Sendable {
    func write(_ record: LogRecord)

    /// A line whose fields `fields` adds in key order, each key once: a sink that formats
    /// bytes writes them as they come, with no list and no record made for the line. The
    /// default collects them into a `LogRecord` for `write(_:)`.
    func write(timestamp: WallTime, level: LogLevel, label: String, message: String,
               fields: (inout LogFieldWriter) -> Void)
}

extension LogSink {
    package func write(timestamp: WallTime, level: LogLevel, label: String, message: String,
                       fields: (inout LogFieldWriter) -> Void) {
        var writer = LogFieldWriter()
        fields(&writer)
        write(LogRecord(timestamp: timestamp, level: level, label: label, message: message, fields: writer.fields))
    }
}

/// A field's key with its JSON (`,"key":`, escaped and kept off the fixed fields as
/// `JSONLogSink` writes any key) made once, for `LogFieldWriter.add(_:_:)`.
package struct LogKey: Sendable, ExpressibleByStringLiteral {
    package let name: String
    fileprivate let json: [UInt8]

    package init(_ name: String) {
        self.name = name
        json = JSONBlock.bytes { JSONLogSink.appendKey(name, to: &$0) }
    }

    package init(stringLiteral name: String) { self.init(name) }
}

/// Takes a line's fields in key order: into a list for a record, or (`JSONLogSink`) straight
/// into the line's bytes, formatted exactly as the record's fields would be.
package struct LogFieldWriter {
    /// The fields so far, when they are collected for a record.
    fileprivate(set) var fields: [LogField] = []
    /// The line's text, when the fields are formatted as they come.
    fileprivate var line: JSONBlock?
    #if DEBUG
    private var lastKey: String?
    #endif

    init() {}

    /// Adds one field; keys must come in increasing order (the order the line is written in).
    /// The key's JSON was made when the key was: a line written often keeps its keys in
    /// `static let`s, so writing one is a single copy.
    package mutating func add(_ key: LogKey, _ value: LogValue) {
        guard line != nil else { return add(name: key.name, value) }
        #if DEBUG
        checkOrder(key.name)
        #endif
        key.json.withUnsafeBytes { line!.append($0) }
        JSONLogSink.appendValue(value, to: &line!)
    }

    /// Adds one field whose value is text lent as UTF-8 bytes, as `.string` of that text would:
    /// a value written where it is needed (the relay's generated request id) is made no String
    /// for a JSON line.
    package mutating func add(_ key: LogKey, text: UnsafeBufferPointer<UInt8>) {
        guard line != nil else { return add(name: key.name, .string(String(decoding: text, as: UTF8.self))) }
        #if DEBUG
        checkOrder(key.name)
        #endif
        key.json.withUnsafeBytes { line!.append($0) }
        line!.appendQuoted(utf8: text)
    }

    /// Adds one field whose key is made at run time; keys must come in increasing order.
    package mutating func add(name key: String, _ value: LogValue) {
        #if DEBUG
        checkOrder(key)
        #endif
        if line != nil {
            JSONLogSink.appendField(key, value, to: &line!)
        } else {
            fields.append(LogField(key, value))
        }
    }

    /// Lends `text` to a writer for `fields` and takes it back; its array is moved, never copied
    /// (a second reference to it would make the next append copy the whole batch).
    fileprivate static func formatting(_ text: inout JSONBlock, _ fields: (inout LogFieldWriter) -> Void) {
        var writer = LogFieldWriter()
        writer.line = text
        text.out = []
        fields(&writer)
        text = writer.line!
        writer.line = nil
    }

    #if DEBUG
    private mutating func checkOrder(_ key: String) {
        assert(lastKey.map { $0 < key } ?? true, "log fields out of key order: \(key) after \(lastKey!)")
        lastKey = key
    }
    #endif
}

/// A cheap value to copy and pass down: each layer adds its own context with `with(_:_:)`
/// instead of repeating it on every call.
package struct Logger: Sendable {
    package let label: String
    /// Lines below this level are dropped before their message is even built.
    package var level: LogLevel
    package let sink: any LogSink
    /// Context attached to every line (dotted keys such as `request.id`).
    package var metadata: [String: String]

    package init(label: String, level: LogLevel = .info, sink: any LogSink) {
        self.label = label
        self.level = level
        self.sink = sink
        self.metadata = [:]
    }

    /// A logger that drops everything: for libraries and tests that are handed no logger.
    package static func disabled(label: String = "disabled") -> Logger {
        Logger(label: label, level: .critical, sink: NullLogSink())
    }

    /// Whether a line at `level` would be written, to skip expensive metadata when it would not.
    package func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// The message is an autoclosure so a disabled debug line costs no string building.
    package func log(
        _ level: LogLevel, _ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil,
        at timestamp: WallTime? = nil
    ) {
        guard level >= self.level else { return }
        let merged: [String: LogValue]
        if self.metadata.isEmpty {
            // The usual case on the hot path: the call's metadata is the line's, no second dictionary.
            merged = metadata ?? [:]
        } else {
            var all = [String: LogValue](minimumCapacity: self.metadata.count + (metadata?.count ?? 0))
            for (key, value) in self.metadata { all[key] = .string(value) }
            if let metadata { for (key, value) in metadata { all[key] = value } }
            merged = all
        }
        sink.write(LogRecord(timestamp: timestamp ?? .now, level: level, label: label, message: message(), metadata: merged))
    }

    /// `log` with the fields added by `fields` in key order, each key once: the push's line. A
    /// JSON sink formats them straight into the line, without a list or a record; the logger's
    /// own context, when it has some, comes first in a record, so the call's value wins on a clash.
    package func log(_ level: LogLevel, _ message: @autoclosure () -> String,
                     inKeyOrder fields: (inout LogFieldWriter) -> Void) {
        guard level >= self.level else { return }
        guard !self.metadata.isEmpty else {
            return sink.write(timestamp: .now, level: level, label: label, message: message(), fields: fields)
        }
        var writer = LogFieldWriter()
        fields(&writer)
        let all = self.metadata.map { LogField($0.key, .string($0.value)) } + writer.fields
        sink.write(LogRecord(timestamp: .now, level: level, label: label, message: message(), fields: all))
    }

    package func trace(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.trace, message(), metadata)
    }
    package func debug(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.debug, message(), metadata)
    }
    package func info(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.info, message(), metadata)
    }
    package func notice(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.notice, message(), metadata)
    }
    package func warning(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.warning, message(), metadata)
    }
    package func error(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.error, message(), metadata)
    }
    package func critical(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.critical, message(), metadata)
    }

    /// A copy that carries one more piece of context, so the caller's logger is left untouched.
    package func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    /// Numbers and other printable values, stored as their description.
    package func with(_ key: String, _ value: some CustomStringConvertible) -> Logger {
        with(key, value.description)
    }
}

/// Swallows every record; `Logger.disabled` uses it.
package struct NullLogSink: LogSink {
    package init() {}
    package func write(_ record: LogRecord) {}
}

// MARK: - Sinks

/// One JSON object per line, for log shippers: `ts`, `level`, `label`, `msg`, then the metadata
/// keys in sorted order so lines diff and grep predictably.
package struct JSONLogSink: LogSink {
    let output: LineWriter

    /// `fileDescriptor` defaults to stderr, where containers and systemd collect logs.
    package init(fileDescriptor: Int32 = 2) {
        output = LineWriter(fileDescriptor: fileDescriptor)
    }

    package func write(_ record: LogRecord) {
        output.writeLine { out in JSONBlock.write(into: &out) { Self.append(record, to: &$0) } }
    }

    /// The line without its newline; `package` so tests and tools can check the exact output.
    package func format(_ record: LogRecord) -> String {
        String(decoding: JSONBlock.bytes { Self.append(record, to: &$0) }, as: UTF8.self)
    }

    /// The line's fields as they come, in the buffer of the loop's batch: the push's line.
    package func write(timestamp: WallTime, level: LogLevel, label: String, message: String,
                       fields: (inout LogFieldWriter) -> Void) {
        output.writeLine { out in
            JSONBlock.write(into: &out) { Self.append(timestamp: timestamp, level: level, label: label, message: message, fields: fields, to: &$0) }
        }
    }

    /// `format` for a line written with `write(timestamp:level:label:message:fields:)`.
    package func format(timestamp: WallTime, level: LogLevel, label: String, message: String,
                        fields: (inout LogFieldWriter) -> Void) -> String {
        let line = JSONBlock.bytes { Self.append(timestamp: timestamp, level: level, label: label, message: message, fields: fields, to: &$0) }
        return String(decoding: line, as: UTF8.self)
    }

    /// Writes the line as bytes straight into the writer's buffer: no intermediate strings.
    static func append(_ record: LogRecord, to out: inout JSONBlock) {
        appendHead(timestamp: record.timestamp, level: record.level, label: record.label, message: record.message, to: &out)
        for field in record.fields { appendField(field.key, field.value, to: &out) }
        out.append(UInt8(ascii: "}"))
    }

    static func append(timestamp: WallTime, level: LogLevel, label: String, message: String,
                       fields: (inout LogFieldWriter) -> Void, to out: inout JSONBlock) {
        appendHead(timestamp: timestamp, level: level, label: label, message: message, to: &out)
        LogFieldWriter.formatting(&out, fields)
        out.append(UInt8(ascii: "}"))
    }

    private static func appendHead(timestamp: WallTime, level: LogLevel, label: String, message: String, to out: inout JSONBlock) {
        out.append(#"{"ts":""#)
        appendTimestamp(timestamp, to: &out)
        out.append(#"","level":""#)
        out.append(raw: level.rawValue)
        out.append(#"","label":"#)
        out.appendQuoted(label)
        out.append(#","msg":"#)
        out.appendQuoted(message)
    }

    /// `,"key":value`, the one way a field is written, whether from a record or as it comes.
    static func appendField(_ key: String, _ value: LogValue, to out: inout JSONBlock) {
        appendKey(key, to: &out)
        appendValue(value, to: &out)
    }

    /// `,"key":`, the one way a key is written.
    static func appendKey(_ key: String, to out: inout JSONBlock) {
        out.append(UInt8(ascii: ","))
        // A metadata key must not shadow a fixed field: parsers keep only one of two equal keys.
        out.appendQuoted(isReserved(key) ? "metadata." + key : key)
        out.append(UInt8(ascii: ":"))
    }

    /// A field's value as JSON.
    static func appendValue(_ value: LogValue, to out: inout JSONBlock) {
        switch value {
        case .string(let s): out.appendQuoted(s)
        case .int(let i): out.append(i)
        case .bool(let b): out.append(b ? "true" : "false")
        case .double(let d):
            // JSON has no NaN or infinity; a string keeps the line parseable.
            if d.isFinite { appendDouble(d, to: &out) } else { out.appendQuoted(String(d)) }
        }
    }

    /// The fixed fields' names; compared directly, cheaper than hashing every key into a set.
    static func isReserved(_ key: String) -> Bool {
        key.utf8.count <= 5 && (key == "ts" || key == "level" || key == "label" || key == "msg")
    }
}

/// `2025-01-02T03:04:05.678Z level [label] message key=value`, for a terminal.
package struct TextLogSink: LogSink {
    let output: LineWriter

    package init(fileDescriptor: Int32 = 2) {
        output = LineWriter(fileDescriptor: fileDescriptor)
    }

    package func write(_ record: LogRecord) {
        let line = format(record)
        output.writeLine { $0.append(contentsOf: line.utf8) }
    }

    /// One record stays one line, and a value can never read as more keys: backslashes, quotes
    /// and control characters are escaped, and a value that needed escaping (or holds a space or
    /// `=`) is quoted, so `k="a\\\" forged=yes"` parses back as the single value it was.
    package func format(_ record: LogRecord) -> String {
        var out = formatTimestamp(record.timestamp)
        out += " "
        out += record.level.rawValue
        out += " ["
        out += record.label
        out += "] "
        out += Self.escaped(record.message)
        for field in record.fields {
            let key = field.key
            let raw = field.value.description
            let text = Self.escaped(raw)
            out += " "
            out += key
            out += "="
            if text.isEmpty || text.utf8.count != raw.utf8.count
                || raw.utf8.contains(where: { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "=") }) {
                out += "\""
                out += text
                out += "\""
            } else {
                out += text
            }
        }
        return out
    }

    /// `\` → `\\`, `"` → `\"`, newline, return and tab as `\n` `\r` `\t`, other control
    /// characters as `\u{…}`.
    static func escaped(_ s: String) -> String {
        guard s.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == "\\" || $0 == "\"" }) else {
            return s
        }
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += "\\u{\(String(scalar.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}

/// Keeps records in memory so tests can assert on what was logged. Bounded: past `capacity`
/// the oldest records are dropped, so a chatty test cannot exhaust memory.
package final class InMemoryLogSink: LogSink {
    private let storage: Mutex<[LogRecord]>
    package let capacity: Int

    package init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        storage = Mutex([])
    }

    package func write(_ record: LogRecord) {
        storage.withLock { records in
            if records.count >= capacity { records.removeFirst(records.count - capacity + 1) }
            records.append(record)
        }
    }

    /// A snapshot, oldest first.
    package var records: [LogRecord] { storage.withLock { $0 } }

    package func clear() { storage.withLock { $0.removeAll() } }
}

// MARK: - Helpers

/// Writes whole lines to a file descriptor, never interleaving two.
///
/// On a thread that called `LogBatching.begin()` (every event loop does) a line is only appended
/// to that thread's buffer, which the loop writes in one write(2) when its turn ends (every
/// `LogBatching.maxDelay` on a busy loop): no write and no lock per line. Elsewhere each line is written at once. A write
/// takes a lock so that a batch longer than PIPE_BUF, or one cut short by a signal, is never
/// split by another thread's.
final class LineWriter: Sendable {
    let fileDescriptor: Int32
    private let lock = Mutex(())

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// `build` appends one line without its newline.
    func writeLine(_ build: (inout [UInt8]) -> Void) {
        if let batch = LogBatching.current() {
            if batch.writer !== self {
                batch.flush()
                batch.writer = self
            }
            // The held bytes are reached once for the whole line: each access to a class's
            // stored array is checked for exclusivity at run time.
            if Self.appendLine(to: &batch.bytes, build) { batch.flush() }
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        build(&bytes)
        bytes.append(0x0A)
        write(bytes)
    }

    /// Appends a line and its newline to a batch's bytes: whether they now hold enough to be
    /// written at once.
    private static func appendLine(to bytes: inout [UInt8], _ build: (inout [UInt8]) -> Void) -> Bool {
        build(&bytes)
        bytes.append(0x0A)
        return bytes.count >= LogBatching.flushBytes
    }

    func write(_ bytes: [UInt8]) {
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                    if n > 0 {
                        offset += n
                    } else if n < 0 && errno == EINTR {
                        continue
                    } else {
                        return  // A broken log stream must never take the relay down with it.
                    }
                }
            }
        }
    }
}

/// Holds the log lines of an event-loop thread and writes them in one write(2) at the end of a
/// loop turn: once `maxDelay` has passed since the end of the turn that logged the oldest held
/// line, or `flushBytes / 2` are held, so on a busy loop a write carries many lines. Lines stay
/// in order; a loop holding lines sleeps at most `maxDelay` before writing them.
///
/// It reads no clock: the loop passes its own time to `endOfTurn(now:)`, so logging a line costs
/// no clock read.
package enum LogBatching {
    /// Past this a batch is written at once, so one long turn cannot hold much memory.
    static let flushBytes = 64 * 1024
    /// How long, in nanoseconds, a line may wait for company; short beside anything that reads logs.
    package static let maxDelay: Int64 = 5_000_000

    final class Buffer {
        var writer: LineWriter?
        var bytes: [UInt8] = []
        /// The loop's time at the end of the turn that found the oldest held line; nil while
        /// nothing is held or that turn has not ended yet.
        var firstHeldTurn: Int64?

        init() { bytes.reserveCapacity(flushBytes + 4096) }

        func flush() {
            firstHeldTurn = nil
            guard let writer, !bytes.isEmpty else { return }
            writer.write(bytes)
            bytes.removeAll(keepingCapacity: true)
        }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    static func current() -> Buffer? {
        guard let raw = pthread_getspecific(key) else { return nil }
        return Unmanaged<Buffer>.fromOpaque(raw).takeUnretainedValue()
    }

    /// From now on, lines logged on this thread wait for `flush()`.
    package static func begin() {
        guard current() == nil else { return }
        pthread_setspecific(key, Unmanaged.passRetained(Buffer()).toOpaque())
    }

    /// The end of a loop turn at `now` (nanoseconds of the loop's monotonic clock): writes the
    /// held lines once they are `maxDelay` old (or many); returns how many nanoseconds the loop
    /// may sleep before it must call again, nil when nothing is held.
    package static func endOfTurn(now: Int64) -> Int64? {
        guard let buffer = current(), !buffer.bytes.isEmpty else { return nil }
        let since = buffer.firstHeldTurn ?? now
        buffer.firstHeldTurn = since
        let waited = now - since
        if waited >= maxDelay || buffer.bytes.count >= flushBytes / 2 {
            buffer.flush()
            return nil
        }
        return maxDelay - waited
    }

    /// Writes what is held and goes back to writing each line at once.
    package static func end() {
        guard let raw = pthread_getspecific(key) else { return }
        let buffer = Unmanaged<Buffer>.fromOpaque(raw)
        buffer.takeUnretainedValue().flush()
        pthread_setspecific(key, nil)
        buffer.release()
    }
}

/// ISO 8601 UTC with milliseconds, built by hand: a shared `DateFormatter` is slow and not
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

/// `d` as `String(d)` spells it, without making a String when it has at most 3 decimals and
/// fewer than 10 integer digits (every push's `latency_ms`): then the shortest decimal that reads
/// back as `d` is its thousandths with the trailing zeros cut, keeping one (`12.0`, `0.05`).
func appendDouble(_ d: Double, to out: inout JSONBlock) {
    let thousandths = (d * 1000).rounded()
    guard d.isFinite, thousandths.magnitude < 1e12, thousandths / 1000 == d else {
        out.append(raw: String(d))
        return
    }
    if d.sign == .minus { out.append(UInt8(ascii: "-")) }
    let whole = Int(thousandths.magnitude)
    out.append(whole / 1000)
    out.append(UInt8(ascii: "."))
    var fraction = whole % 1000
    var width = 3
    while width > 1 && fraction % 10 == 0 { fraction /= 10; width -= 1 }
    if width >= 3 { out.append(UInt8(ascii: "0") + UInt8(fraction / 100)) }
    if width >= 2 { out.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10)) }
    out.append(UInt8(ascii: "0") + UInt8(fraction % 10))
}

