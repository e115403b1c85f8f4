// Small text rules every module's parsing shares; the standard library has no
// `trimmingCharacters(in:)`, and the relay links no Foundation, to stay small.

extension StringProtocol {
    /// The text without leading and trailing whitespace (spaces, tabs, newlines).
    package var trimmingWhitespace: String {
        guard let first = firstIndex(where: { !$0.isWhitespace }),
              let last = lastIndex(where: { !$0.isWhitespace }) else { return "" }
        return String(self[first...last])
    }
}
