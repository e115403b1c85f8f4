import Foundation
import Testing

// A decision made by searching an error's words breaks the day someone rewords the message:
// causes travel as values (a code), and only people read the words. `make test` fails on any
// line in Sources that searches an error's or a cause's text.
@Suite("No decision reads an error's text")
struct ErrorTextSearchTests {
    @Test("no line in Sources searches a message, cause or description")
    func sourcesDecideOnCodes() throws {
        let sources = ImportGraphTests.root.appendingPathComponent("Sources")
        let walker = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var found: [String] = []
        var files = 0
        for case let file as URL in walker where file.pathExtension == "swift" {
            files += 1
            let text = try String(contentsOf: file, encoding: .utf8)
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where ErrorTextSearch.searchesErrorText(line) {
                found.append("\(file.path.dropFirst(sources.path.count + 1)):\(index + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(files > 100)
        #expect(found.isEmpty, Comment(rawValue: "decide on the error's code, not its words:\n" + found.joined(separator: "\n")))
    }

    @Test("the rule finds the shapes it is for and passes other searches", arguments: [
        (#"} catch let error as TLSError where StringBytes.contains(error.message, "does not match") {"#, true),
        (#"result.reason == .notSent && !(result.cause ?? "").hasPrefix(refusedBeforeSending)"#, true),
        (#"if error.message.contains("timed out") { retry() }"#, true),
        (#"guard "\(error)".hasPrefix("TLS") else { return }"#, true),
        (#"let gone = failure.description.range(of: "refused") != nil"#, true),
        (#"public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }"#, false),
        (#"guard StringBytes.contains(text, "-----BEGIN CERTIFICATE-----") else {"#, false),
        (#"} catch let error as HTTP2Error where Self.neverSent.contains(error.code) {"#, false),
        (#"/// a message.contains("x") in a comment is prose"#, false),
    ])
    func rule(line: String, flagged: Bool) {
        #expect(ErrorTextSearch.searchesErrorText(Substring(line)) == flagged)
    }
}

/// The text searches a decision must not make: a search whose searched text (the receiver, or
/// `StringBytes`' first argument) names an error's words.
enum ErrorTextSearch {
    static let searches = [".contains(", ".hasPrefix(", ".hasSuffix(", ".range(of:", ".firstRange(of:", ".starts(with:"]
    static let errorWords: Set<String> = ["message", "cause", "description", "localizedDescription"]

    static func searchesErrorText(_ line: Substring) -> Bool {
        let trimmed = line.drop(while: { $0 == " " })
        if trimmed.hasPrefix("//") { return false }
        let characters = Array(line)
        for search in searches {
            var start = line.startIndex
            while let hit = line[start...].range(of: search) {
                start = hit.upperBound
                let dot = line.distance(from: line.startIndex, to: hit.lowerBound)
                var searched = receiver(characters, endingAt: dot)
                if searched == "StringBytes" {
                    searched = firstArgument(characters, from: line.distance(from: line.startIndex, to: hit.upperBound))
                }
                if namesErrorText(searched) { return true }
            }
        }
        return false
    }

    /// The expression before `.method(`: names, dots, optional marks and bracketed groups, and a
    /// string literal.
    private static func receiver(_ line: [Character], endingAt end: Int) -> String {
        var index = end - 1
        var depth = 0
        while index >= 0 {
            let c = line[index]
            if c == ")" || c == "]" {
                depth += 1
            } else if c == "(" || c == "[" {
                if depth == 0 { break }
                depth -= 1
            } else if c == "\"" && depth == 0 {
                guard let open = line[..<index].lastIndex(of: "\"") else { break }
                index = open - 1
                continue
            } else if depth == 0 && !(c.isLetter || c.isNumber || "_.?!".contains(c)) {
                break
            }
            index -= 1
        }
        return String(line[(index + 1)..<end])
    }

    /// A call's first argument, up to its first comma or closing bracket at the same depth.
    private static func firstArgument(_ line: [Character], from start: Int) -> String {
        var depth = 0
        var index = start
        while index < line.count {
            let c = line[index]
            if c == "(" || c == "[" { depth += 1 }
            if c == ")" || c == "]" { if depth == 0 { break }; depth -= 1 }
            if c == "," && depth == 0 { break }
            index += 1
        }
        return String(line[start..<index])
    }

    private static func namesErrorText(_ expression: String) -> Bool {
        if expression.contains("\\(error") { return true }
        let words = expression.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
        return words.contains { errorWords.contains(String($0)) }
    }
}
