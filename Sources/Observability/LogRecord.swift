package import Basics

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
