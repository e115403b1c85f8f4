package import Basics

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

/// Swallows every record; `Logger.disabled` uses it.
package struct NullLogSink: LogSink {
    package init() {}
    package func write(_ record: LogRecord) {}
}
