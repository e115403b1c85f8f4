/// Finding, replacing and splitting on literal text with the standard library alone.
///
/// The unlabelled `contains(_:)` with a string, `replacing(_:with:)`, `split(separator:)` with a
/// string and `firstRange(of:)` come from _StringProcessing: one use anywhere links it and
/// _RegexParser (1 MB of regex engine, resident in every relay). The relay only ever looks for
/// short literal text, so these compare UTF-8 bytes: exact on Unicode scalars (the same text, not
/// merely canonically equivalent text), which is what protocol strings, PEM and env files need.
extension StringProtocol {
    /// The first place `text` occurs; nil when it does not, an empty range at the start for "".
    package func firstRange(ofText text: some StringProtocol) -> Range<Index>? {
        let bytes = utf8, needle = text.utf8
        guard let head = needle.first else { return startIndex..<startIndex }
        var from = bytes.startIndex
        while let start = bytes[from...].firstIndex(of: head) {
            var end = start, matched = true
            for byte in needle {
                guard end < bytes.endIndex, bytes[end] == byte else { matched = false; break }
                end = bytes.index(after: end)
            }
            if matched { return start..<end }
            from = bytes.index(after: start)
        }
        return nil
    }

    /// Whether `text` occurs anywhere (always, for "").
    package func contains(text: some StringProtocol) -> Bool {
        firstRange(ofText: text) != nil
    }

    /// Every occurrence of `text`, left to right and not overlapping, replaced by `replacement`.
    package func replacing(text: some StringProtocol, with replacement: some StringProtocol) -> String {
        guard !text.isEmpty else { return String(self) }
        var out = ""
        var rest = self[...]
        while let found = rest.firstRange(ofText: text) {
            out += rest[..<found.lowerBound]
            out += replacement
            rest = rest[found.upperBound...]
        }
        out += rest
        return out
    }

    /// The pieces between occurrences of `separator`, empty ones included (`"a,,b"` on `","` is
    /// `["a", "", "b"]`, `""` is `[""]`). `separator` must not be empty.
    package func split(text separator: some StringProtocol) -> [SubSequence] {
        precondition(!separator.isEmpty, "split(text:) needs a separator")
        var pieces: [SubSequence] = []
        var rest = self[...]
        while let found = rest.firstRange(ofText: separator) {
            pieces.append(rest[..<found.lowerBound])
            rest = rest[found.upperBound...]
        }
        pieces.append(rest)
        return pieces
    }
}
