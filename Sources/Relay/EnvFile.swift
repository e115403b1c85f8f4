import Observability
import EventLoop
import Basics

/// `--env-file`: the `KEY=VALUE` lines that fill in what the environment leaves unset.
extension RelayConfiguration {
    /// Parses env-file text: `KEY=VALUE` lines, `#` comments and blank lines skipped, an optional
    /// `export ` prefix, and values optionally wrapped in single quotes (literal) or double quotes
    /// (where `\"` and `\\` are unescaped). Unquoted values are taken as written (surrounding spaces
    /// trimmed); a `#` inside a value is part of it, as Docker and systemd read it.
    static func parseEnvFile(text: String, path: String) throws(ConfigurationError) -> [String: String] {
        var values = [String: String]()
        var lineNumber = 0
        for rawLine in text.split(separator: "\n", omittingEmptySubsequences: false) {
            lineNumber += 1
            var line = rawLine.trimmingWhitespace[...]
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("export ") || line.hasPrefix("export\t") {
                line = line.dropFirst(7).drop(while: { $0 == " " || $0 == "\t" })
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw ConfigurationError(
                    .envFileSyntax, path,
                    "--env-file \(path) line \(lineNumber) must be KEY=VALUE, got \(quoted(String(line.prefix(40))))")
            }
            let key = line[..<equals].trimmingWhitespace
            guard isVariableName(key) else {
                throw ConfigurationError(
                    .envFileSyntax, path,
                    "--env-file \(path) line \(lineNumber) must start with a variable name (letters, digits, _), got \(quoted(key))")
            }
            var value = line[line.index(after: equals)...].trimmingWhitespace
            if value.count >= 2, value.hasPrefix("'"), value.hasSuffix("'") {
                value = String(value.dropFirst().dropLast())
            } else if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                var unescaped = ""
                var escaping = false
                for c in value.dropFirst().dropLast() {
                    if escaping {
                        if c != "\"" && c != "\\" { unescaped.append("\\") }
                        unescaped.append(c)
                        escaping = false
                    } else if c == "\\" {
                        escaping = true
                    } else {
                        unescaped.append(c)
                    }
                }
                if escaping { unescaped.append("\\") }
                value = unescaped
            }
            values[key] = value
        }
        return values
    }

    static func parseEnvFile(at path: String) throws(ConfigurationError) -> [String: String] {
        guard let text = LocalFile.text(atPath: path) else {
            throw ConfigurationError(
                .unreadableFile, path, "--env-file must name a readable UTF-8 file of KEY=VALUE lines, could not read \(quoted(path))")
        }
        return try parseEnvFile(text: text, path: path)
    }

    static func isVariableName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, !(first >= "0" && first <= "9") else { return false }
        return s.unicodeScalars.allSatisfy { ($0 >= "A" && $0 <= "Z") || ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "_" }
    }
}
