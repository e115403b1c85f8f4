package import Basics

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
