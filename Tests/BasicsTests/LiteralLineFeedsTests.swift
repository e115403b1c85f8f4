import Testing
import Basics

@Suite("literal \\n in one-line PEM text")
struct LiteralLineFeedsTests {
    @Test("every backslash-n becomes a line feed; other backslashes stay")
    func unescaping() {
        #expect("-----BEGIN KEY-----\\nabc\\n-----END KEY-----".unescapingLineFeeds == "-----BEGIN KEY-----\nabc\n-----END KEY-----")
        #expect("a\\\\nb".unescapingLineFeeds == "a\\\nb", "the backslash before the one that starts \\n stays")
        #expect("a\\tb\\".unescapingLineFeeds == "a\\tb\\")
        #expect("\\n".unescapingLineFeeds == "\n")
        #expect("".unescapingLineFeeds == "")
        #expect("no escapes".dropFirst(3).unescapingLineFeeds == "escapes")
    }
}
