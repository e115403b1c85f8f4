extension StringProtocol {
    /// Every `\n` written literally (a backslash, then `n`) turned into a line feed. Env files and
    /// Docker's `--env-file` cannot hold multi-line values, so PEM text comes on one line that way.
    /// It splits on the backslash, a Character, with the standard library: `replacing(_:with:)`
    /// with a string would link _StringProcessing, a regex engine of 2 MB the relay never runs.
    package var unescapingLineFeeds: String {
        let pieces = split(separator: "\\", omittingEmptySubsequences: false)
        var out = String(pieces[0])
        for piece in pieces.dropFirst() {
            if piece.first == "n" {
                out += "\n"
                out += piece.dropFirst()
            } else {
                out += "\\"
                out += piece
            }
        }
        return out
    }
}
