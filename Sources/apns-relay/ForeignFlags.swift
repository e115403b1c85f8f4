/// webpush-apn-relay's command-line flags (its main.go, 2026: `flag.IntVar` for
/// `max-queue-size` and `max-workers`), accepted by `serve` and ignored, so its manifests' `args:`
/// keep starting the relay. Go's flag package takes `-name value`, `-name=value` and the same
/// with `--`, and refuses a value that is no integer; so does this.
enum ForeignFlags {
    static let names: Set<String> = ["max-queue-size", "max-workers"]

    /// When `flag` is one of them: takes its value (from `flag` or the next argument) and
    /// returns `-name value` for the log line; nil for any other flag. Exits 2, as Go did, when
    /// the value is missing or not a whole number.
    static func take(_ flag: String, _ arguments: inout Arguments) -> String? {
        var name = Substring(flag)
        guard name.hasPrefix("-") else { return nil }
        name = name.dropFirst()
        if name.hasPrefix("-") { name = name.dropFirst() }
        var value: String?
        if let equals = name.firstIndex(of: "=") {
            value = String(name[name.index(after: equals)...])
            name = name[..<equals]
        }
        guard names.contains(String(name)) else { return nil }
        let given = value ?? arguments.next()
        guard let given, Int(given) != nil else {
            fail("serve: -\(name) (webpush-apn-relay's flag, ignored here) needs a whole number, got \(given.map { "\"\($0)\"" } ?? "nothing")", code: 2)
        }
        return "-\(name) \(given)"
    }

    /// One line for all of them.
    static func ignoredLine(_ given: [String]) -> String {
        "ignored webpush-apn-relay's flags \(given.joined(separator: ", ")): this relay bounds its queue with MAX_QUEUED_PUSHES and sends on its event loops (EVENT_LOOPS), with no workers to size"
    }
}
