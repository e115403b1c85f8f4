#if canImport(Glibc)
import Glibc
#endif
internal import Basics

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
