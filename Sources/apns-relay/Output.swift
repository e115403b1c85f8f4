import Foundation

/// Stops with one line on stderr that says what to fix.
func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("apns-relay: \(message)\n".utf8))
    exit(code)
}

func say(_ text: String) {
    FileHandle.standardOutput.write(Data((text + "\n").utf8))
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

