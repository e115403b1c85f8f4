// Logging shaped like swift-log: a `Logger` value is passed in (never a global), it carries
// its own metadata, and where the lines go is a `LogSink` chosen once at start-up.
import Foundation
import Synchronization

/// How serious a log line is; ordered so a logger can drop everything below its threshold.
public enum LogLevel: String, Sendable, Comparable, CaseIterable {
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

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.severity < rhs.severity }
}

/// A metadata value. Numbers and booleans stay typed so JSON log consumers can filter on them
/// (`"status": 410` rather than `"status": "410"`).
public enum LogValue: Sendable, Equatable, CustomStringConvertible,
    ExpressibleByStringLiteral, ExpressibleByStringInterpolation,
    ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }

    public var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): String(d)
        case .bool(let b): b ? "true" : "false"
        }
    }
}

/// One log line before formatting; sinks receive it whole so a line is never split across writes.
public struct LogRecord: Sendable, Equatable {
    public var timestamp: Date
    public var level: LogLevel
    public var label: String
    public var message: String
    /// The logger's metadata merged with the call's (the call wins on a clash).
    public var metadata: [String: LogValue]

    public init(timestamp: Date, level: LogLevel, label: String, message: String, metadata: [String: LogValue]) {
        self.timestamp = timestamp
        self.level = level
        self.label = label
        self.message = message
        self.metadata = metadata
    }
}

/// Where formatted lines go. A sink is shared by every logger of a process, so it must be
/// safe to call from any thread and must never interleave two lines.
public protocol LogSink: Sendable {
    func write(_ record: LogRecord)
}

/// A cheap value to copy and pass down: each layer adds its own context with `with(_:_:)`
/// instead of repeating it on every call.
public struct Logger: Sendable {
    public let label: String
    /// Lines below this level are dropped before their message is even built.
    public var level: LogLevel
    public let sink: any LogSink
    /// Context attached to every line (dotted keys such as `request.id`).
    public var metadata: [String: String]

    public init(label: String, level: LogLevel = .info, sink: any LogSink) {
        self.label = label
        self.level = level
        self.sink = sink
        self.metadata = [:]
    }

    /// A logger that drops everything: for libraries and tests that are handed no logger.
    public static func disabled(label: String = "disabled") -> Logger {
        Logger(label: label, level: .critical, sink: NullLogSink())
    }

    /// Whether a line at `level` would be written, to skip expensive metadata when it would not.
    public func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    /// The message is an autoclosure so a disabled debug line costs no string building.
    public func log(
        _ level: LogLevel, _ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil,
        at timestamp: Date? = nil
    ) {
        guard level >= self.level else { return }
        var merged = [String: LogValue](minimumCapacity: self.metadata.count + (metadata?.count ?? 0))
        for (key, value) in self.metadata { merged[key] = .string(value) }
        if let metadata { for (key, value) in metadata { merged[key] = value } }
        sink.write(LogRecord(timestamp: timestamp ?? Date(), level: level, label: label, message: message(), metadata: merged))
    }

    public func trace(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.trace, message(), metadata)
    }
    public func debug(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.debug, message(), metadata)
    }
    public func info(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.info, message(), metadata)
    }
    public func notice(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.notice, message(), metadata)
    }
    public func warning(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.warning, message(), metadata)
    }
    public func error(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.error, message(), metadata)
    }
    public func critical(_ message: @autoclosure () -> String, _ metadata: [String: LogValue]? = nil) {
        log(.critical, message(), metadata)
    }

    /// A copy that carries one more piece of context, so the caller's logger is left untouched.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    /// Numbers and other printable values, stored as their description.
    public func with(_ key: String, _ value: some CustomStringConvertible) -> Logger {
        with(key, value.description)
    }
}

/// Swallows every record; `Logger.disabled` uses it.
public struct NullLogSink: LogSink {
    public init() {}
    public func write(_ record: LogRecord) {}
}

// MARK: - Sinks

/// One JSON object per line, for log shippers: `ts`, `level`, `label`, `msg`, then the metadata
/// keys in sorted order so lines diff and grep predictably.
public struct JSONLogSink: LogSink {
    let output: LineWriter

    /// `fileDescriptor` defaults to stderr, where containers and systemd collect logs.
    public init(fileDescriptor: Int32 = 2) {
        output = LineWriter(fileDescriptor: fileDescriptor)
    }

    public func write(_ record: LogRecord) {
        output.writeLine(format(record))
    }

    /// The line without its newline; public so tests and tools can check the exact output.
    public func format(_ record: LogRecord) -> String {
        var out = "{\"ts\":\""
        out += formatTimestamp(record.timestamp)
        out += "\",\"level\":\""
        out += record.level.rawValue
        out += "\",\"label\":"
        appendJSONString(record.label, to: &out)
        out += ",\"msg\":"
        appendJSONString(record.message, to: &out)
        for key in record.metadata.keys.sorted() {
            let value = record.metadata[key]!
            // A metadata key must not shadow a fixed field: parsers keep only one of two equal keys.
            let name = Self.reservedKeys.contains(key) ? "metadata." + key : key
            out += ","
            appendJSONString(name, to: &out)
            out += ":"
            switch value {
            case .string(let s): appendJSONString(s, to: &out)
            case .int(let i): out += String(i)
            case .bool(let b): out += b ? "true" : "false"
            case .double(let d):
                // JSON has no NaN or infinity; a string keeps the line parseable.
                if d.isFinite { out += String(d) } else { appendJSONString(String(d), to: &out) }
            }
        }
        out += "}"
        return out
    }

    static let reservedKeys: Set<String> = ["ts", "level", "label", "msg"]
}

/// `2025-01-02T03:04:05.678Z level [label] message key=value`, for a terminal.
public struct TextLogSink: LogSink {
    let output: LineWriter

    public init(fileDescriptor: Int32 = 2) {
        output = LineWriter(fileDescriptor: fileDescriptor)
    }

    public func write(_ record: LogRecord) {
        output.writeLine(format(record))
    }

    /// One record stays one line, and a value can never read as more keys: backslashes, quotes
    /// and control characters are escaped, and a value that needed escaping (or holds a space or
    /// `=`) is quoted, so `k="a\\\" forged=yes"` parses back as the single value it was.
    public func format(_ record: LogRecord) -> String {
        var out = formatTimestamp(record.timestamp)
        out += " "
        out += record.level.rawValue
        out += " ["
        out += record.label
        out += "] "
        out += Self.escaped(record.message)
        for key in record.metadata.keys.sorted() {
            let raw = record.metadata[key]!.description
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
public final class InMemoryLogSink: LogSink {
    private let storage: Mutex<[LogRecord]>
    public let capacity: Int

    public init(capacity: Int = 10_000) {
        self.capacity = max(1, capacity)
        storage = Mutex([])
    }

    public func write(_ record: LogRecord) {
        storage.withLock { records in
            if records.count >= capacity { records.removeFirst(records.count - capacity + 1) }
            records.append(record)
        }
    }

    /// A snapshot, oldest first.
    public var records: [LogRecord] { storage.withLock { $0 } }

    public func clear() { storage.withLock { $0.removeAll() } }
}

// MARK: - Helpers

/// Writes each line with a single write(2): writes to a pipe or terminal up to PIPE_BUF are
/// atomic, so lines from different threads never interleave. Longer lines, or a write cut
/// short by a signal, continue in a loop under a lock so no other line lands in the middle.
final class LineWriter: Sendable {
    let fileDescriptor: Int32
    private let lock = Mutex(())

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    func writeLine(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Foundation.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
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

/// ISO 8601 UTC with milliseconds, built by hand: a shared `DateFormatter` is slow and not
/// safe to share across threads.
func formatTimestamp(_ date: Date) -> String {
    // Whole microseconds first, so 1.007 s (stored as 1.00699999…) still prints .007.
    let micros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
    let totalMillis = micros >= 0 ? micros / 1000 : (micros - 999) / 1000
    var seconds = time_t(totalMillis >= 0 ? totalMillis / 1000 : (totalMillis - 999) / 1000)
    let millis = Int(totalMillis - Int64(seconds) * 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    func pad(_ value: Int32, _ width: Int) -> String {
        let s = String(value)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
    return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
        + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
}

/// RFC 8259 string escaping: quotes, backslashes and every control character.
func appendJSONString(_ s: String, to out: inout String) {
    out += "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case "\u{08}": out += "\\b"
        case "\u{0C}": out += "\\f"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F || scalar.value == 0x2028 || scalar.value == 0x2029 {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    out += "\""
}
