// HTTP/1.1 message values shared by the parser, the serializer and the socket server.
// Pure Swift, no Foundation: the fuzz build compiles this file with the parser, with the Basics
// files it needs beside it (so it imports that module only in the package build).
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

package struct HTTPResponse: Sendable, Equatable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: [UInt8]

    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A plain-text body, the form for one-line error reasons that humans read in logs.
    package init(status: Int, text: String, headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "text/plain; charset=utf-8") }
        self.init(status: status, headers: headers, body: Array(text.utf8))
    }

    /// An already-encoded JSON body (e.g. `{"reason":…,"timestamp":…}` for a 410),
    /// so this module needs no JSON encoder.
    package init(status: Int, json: String, headers: HTTPHeaders = HTTPHeaders()) {
        var headers = headers
        if !headers.contains("Content-Type") { headers.add("Content-Type", "application/json") }
        self.init(status: status, headers: headers, body: Array(json.utf8))
    }

    /// An error answer: `{"reason": "…"}`, one line saying what was wrong, the form every
    /// non-2xx answer of the relay takes so senders and operators can read it the same way.
    package init(status: Int, reason: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.init(status: status, json: JSONString.reasonBody(reason), headers: headers)
    }

    /// The answer to a request the parser rejected: its status and its one-line reason.
    package init(parseError: HTTPParseError) {
        self.init(status: parseError.status, reason: parseError.reason)
    }

    /// `HTTP/1.1 100 Continue` followed by the blank line, sent as-is on `.expectContinue`.
    package static let continueHead: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
}

/// Why the parser refused a request: the status to answer with, and a one-line reason
/// that tells the sender what to fix. The connection answers it, then closes.
