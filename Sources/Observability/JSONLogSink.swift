#if canImport(Glibc)
import Glibc
#endif
package import Basics

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
