// HTTP/1.1 message values shared by the parser, the serializer and the socket server.
// Pure Swift, no Foundation: the fuzz build compiles this file with the parser, with the Basics
// files it needs beside it (so it imports that module only in the package build).
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

/// Why the parser refused a request: the status to answer with (its `code`), and a one-line
/// reason that tells the sender what to fix (its `message`). The connection answers it, then
/// closes. Equal when both agree: the reason is the answer's body, not only words for a log.
package struct HTTPParseError: CodedError {
    package let status: Int
    package let reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    package var code: Int { status }
    package var message: String { reason }
    package var description: String { "\(status) \(reason)" }
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.status == rhs.status && lhs.reason == rhs.reason }
}

/// Caps that bound the memory one connection can make the server hold.
package struct HTTPParserLimits: Sendable, Equatable {
    /// Longest request line (without CRLF); beyond it the answer is 414.
    package var maxRequestLineBytes: Int
    /// Sum of header line lengths (without CRLF); beyond it the answer is 431.
    /// Trailers of a chunked body get a budget of the same size.
    package var maxHeaderBytes: Int
    /// Most header fields; beyond it the answer is 431.
    package var maxHeaderCount: Int
    /// Largest body; a declared length above it is refused with 413 before reading.
    package var maxBodyBytes: Int

    package init(
        maxRequestLineBytes: Int = 8192, maxHeaderBytes: Int = 16384,
        maxHeaderCount: Int = 100, maxBodyBytes: Int = 65536
    ) {
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.maxHeaderCount = maxHeaderCount
        self.maxBodyBytes = maxBodyBytes
    }
}
