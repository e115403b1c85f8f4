internal import Basics

/// One HTTP/2 header field as our callers see it.
///
/// Names are lower-cased when a request or response is submitted, because HTTP/2 forbids
/// upper-case names and a peer's nghttp2 resets such a stream with PROTOCOL_ERROR.
package struct HTTP2Header: Sendable, Equatable, Hashable {
    package var name: String
    package var value: String
    /// Keeps the field out of the HPACK dynamic table (NGHTTP2_NV_FLAG_NO_INDEX): per-request
    /// values such as `:path` or `apns-id` would only evict the stable ones (`authorization`, topic).
    package var neverIndex: Bool

    package init(name: String, value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }
}

/// HTTP/2 error codes (RFC 9113 §7) as the raw values carried by RST_STREAM and GOAWAY,
/// so callers can compare `HTTP2StreamError.errorCode` without importing nghttp2.
package enum HTTP2ErrorCode {
    package static let noError: UInt32 = 0x0
    package static let protocolError: UInt32 = 0x1
    package static let internalError: UInt32 = 0x2
    package static let flowControlError: UInt32 = 0x3
    package static let settingsTimeout: UInt32 = 0x4
    package static let streamClosed: UInt32 = 0x5
    package static let frameSizeError: UInt32 = 0x6
    /// The peer did not process the stream at all: safe to retry on another connection.
    package static let refusedStream: UInt32 = 0x7
    package static let cancel: UInt32 = 0x8
    package static let compressionError: UInt32 = 0x9
    package static let connectError: UInt32 = 0xa
    package static let enhanceYourCalm: UInt32 = 0xb
    package static let inadequateSecurity: UInt32 = 0xc
    package static let http11Required: UInt32 = 0xd
}

/// A connection-level failure of an HTTP/2 session, or a call the session cannot honour.
///
/// Equality is on the code only (`CodedError`): the message is for humans and logs.
package struct HTTP2Error: CodedError {
    package enum Code: String, NamedCode {
        /// The peer broke the protocol (or sent bytes that are not HTTP/2): flush the output
        /// (it carries our GOAWAY), then `terminate()` the session and close the connection.
        case protocolError
        /// All 2^30 client stream ids were used: open a new connection.
        case streamIDsExhausted
        /// The session was terminated or has already failed: open a new connection.
        case sessionClosed
        /// A GOAWAY was received or sent: no new stream may start here; use another connection.
        case goingAway
        /// A header name or value is not valid HTTP/2: fix the caller's header.
        case invalidHeader
        /// The stream is not open (already answered, reset or closed).
        case noSuchStream
        /// nghttp2 failed for a reason that is not the peer's (out of memory, bad argument).
        case internalError
    }

    package let code: Code
    package let message: String

    package init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

/// Why one client stream ended without a response. Every submitted stream ends exactly once,
/// either with a response or with this, so a caller can always decide: retry or give up.
package struct HTTP2StreamError: Error, Sendable, CustomStringConvertible, Equatable {
    /// How the stream ended.
    package enum Reason: String, NamedCode {
        /// The server (or nghttp2 on its behalf) sent RST_STREAM with `errorCode`.
        case reset
        /// The server's GOAWAY named a last_stream_id below this stream: it was never processed.
        case refusedByGoAway
        /// The connection ended (`terminate()`, or the request could not be sent) before a response.
        case connectionClosed
        /// We cancelled it with `cancel(stream:)`.
        case cancelled
        /// The response body passed the session's `maxResponseBodySize`; we reset the stream.
        case responseTooLarge
    }

    /// The RST_STREAM or GOAWAY code (see `HTTP2ErrorCode`); REFUSED_STREAM = 7 means "not processed".
    package let errorCode: UInt32
    package let reason: Reason
    /// False only when the server provably never acted on the request (REFUSED_STREAM, a stream
    /// above a GOAWAY's last_stream_id, or a request that never left us): it is safe to send it
    /// again elsewhere. True means it may have been processed.
    package var wasProcessed: Bool

    package init(errorCode: UInt32, reason: Reason, wasProcessed: Bool) {
        self.errorCode = errorCode
        self.reason = reason
        self.wasProcessed = wasProcessed
    }

    package var description: String {
        "HTTP2StreamError(\(reason), errorCode: \(errorCode), wasProcessed: \(wasProcessed))"
    }
}

/// A complete response to one client stream.
package struct HTTP2Response: Sendable, Equatable {
    package var status: Int
    /// Regular header fields only (and trailers, if any), as received, packed: a response makes
    /// no string per field (see `header(_:reusing:)`). Pseudo-headers are excluded, `:status` is `status`.
    package var fields: HTTP2HeaderBlock
    package var body: [UInt8]

    package init(status: Int, headers: [HTTP2Header], body: [UInt8]) {
        self.init(status: status, fields: HTTP2HeaderBlock(headers), body: body)
    }

    package init(status: Int, fields: HTTP2HeaderBlock, body: [UInt8]) {
        self.status = status
        self.fields = fields
        self.body = body
    }

    /// The fields as a list (strings made for each).
    package var headers: [HTTP2Header] { fields.fields }

    /// The first value of a header, by lower-case name, because HTTP/2 names are lower-case. A
    /// value equal to `known` is `known` itself, no new string (see `HTTP2HeaderBlock.value`).
    package func header(_ name: String, reusing known: String? = nil) -> String? {
        fields.value(name, reusing: known)
    }
}

/// A complete request received by a server session.
package struct HTTP2Request: Sendable, Equatable {
    package var method: String
    package var path: String
    package var authority: String
    package var scheme: String
    /// Regular header fields only; the pseudo-headers are in `method`, `path`, `authority`, `scheme`.
    package var headers: [HTTP2Header]
    package var body: [UInt8]

    package init(method: String, path: String, authority: String = "", scheme: String = "https",
                headers: [HTTP2Header], body: [UInt8]) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by lower-case name, because HTTP/2 names are lower-case.
    package func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}
