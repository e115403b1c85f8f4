#if canImport(Glibc)
import Glibc
#endif

/// Stops with one line on stderr that says what to fix.
func fail(_ message: String, code: Int32 = 1) -> Never {
    writeStandardError("apns-relay: \(message)\n")
    exit(code)
}

func say(_ text: String) {
    writeAll(1, text + "\n")
}

/// The command-line options after the command name, read one flag at a time.
struct Arguments {
    var rest: ArraySlice<String>

    mutating func next() -> String? { rest.popFirst() }

    mutating func value(for flag: String) -> String {
        guard let v = rest.popFirst() else { fail("\(flag) needs a value (see --help)") }
        return v
    }
}


func writeStandardError(_ text: String) {
    writeAll(2, text)
}

/// The whole text with write(2), resumed after a short write or a signal.
func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)
    bytes.withUnsafeMutableBytes { raw in
        var offset = 0
        while offset < raw.count {
            let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
            if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
        }
    }
}
