/// One HTTP/2 header field as our callers see it.
///
/// Names are lower-cased when a request or response is submitted, because HTTP/2 forbids
/// upper-case names and a peer's nghttp2 resets such a stream with PROTOCOL_ERROR.
public struct HTTP2Header: Sendable, Equatable, Hashable {
    public var name: String
    public var value: String
    /// Keeps the field out of the HPACK dynamic table (NGHTTP2_NV_FLAG_NO_INDEX): per-request
    /// values such as `:path` or `apns-id` would only evict the stable ones (`authorization`, topic).
    public var neverIndex: Bool

    public init(name: String, value: String, neverIndex: Bool = false) {
        self.name = name
        self.value = value
        self.neverIndex = neverIndex
    }
}

/// HTTP/2 error codes (RFC 9113 §7) as the raw values carried by RST_STREAM and GOAWAY,
/// so callers can compare `HTTP2StreamError.errorCode` without importing nghttp2.
public enum HTTP2ErrorCode {
    public static let noError: UInt32 = 0x0
    public static let protocolError: UInt32 = 0x1
    public static let internalError: UInt32 = 0x2
    public static let flowControlError: UInt32 = 0x3
    public static let settingsTimeout: UInt32 = 0x4
    public static let streamClosed: UInt32 = 0x5
    public static let frameSizeError: UInt32 = 0x6
    /// The peer did not process the stream at all: safe to retry on another connection.
    public static let refusedStream: UInt32 = 0x7
    public static let cancel: UInt32 = 0x8
    public static let compressionError: UInt32 = 0x9
    public static let connectError: UInt32 = 0xa
    public static let enhanceYourCalm: UInt32 = 0xb
    public static let inadequateSecurity: UInt32 = 0xc
    public static let http11Required: UInt32 = 0xd
}

/// A connection-level failure of an HTTP/2 session, or a call the session cannot honour.
///
/// A struct over a code rather than a public enum, so new codes never break callers.
/// Equality is on the code only: the message is for humans and logs.
public struct HTTP2Error: Error, Sendable, CustomStringConvertible, Equatable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public var description: String { raw }

        /// The peer broke the protocol (or sent bytes that are not HTTP/2): flush the output
        /// (it carries our GOAWAY), then `terminate()` the session and close the connection.
        public static let protocolError = Code(raw: "protocolError")
        /// All 2^30 client stream ids were used: open a new connection.
        public static let streamIDsExhausted = Code(raw: "streamIDsExhausted")
        /// The session was terminated or has already failed: open a new connection.
        public static let sessionClosed = Code(raw: "sessionClosed")
        /// A GOAWAY was received or sent: no new stream may start here; use another connection.
        public static let goingAway = Code(raw: "goingAway")
        /// A header name or value is not valid HTTP/2: fix the caller's header.
        public static let invalidHeader = Code(raw: "invalidHeader")
        /// The stream is not open (already answered, reset or closed).
        public static let noSuchStream = Code(raw: "noSuchStream")
        /// nghttp2 failed for a reason that is not the peer's (out of memory, bad argument).
        public static let internalError = Code(raw: "internalError")
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "HTTP2Error.\(code): \(message)" }

    public static func == (lhs: HTTP2Error, rhs: HTTP2Error) -> Bool { lhs.code == rhs.code }
}

/// Why one client stream ended without a response. Every submitted stream ends exactly once,
/// either with a response or with this, so a caller can always decide: retry or give up.
public struct HTTP2StreamError: Error, Sendable, CustomStringConvertible, Equatable {
    /// How the stream ended. A struct over an internal value, so new reasons never break callers.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        public var description: String { raw }

        /// The server (or nghttp2 on its behalf) sent RST_STREAM with `errorCode`.
        public static let reset = Reason(raw: "reset")
        /// The server's GOAWAY named a last_stream_id below this stream: it was never processed.
        public static let refusedByGoAway = Reason(raw: "refusedByGoAway")
        /// The connection ended (`terminate()`, or the request could not be sent) before a response.
        public static let connectionClosed = Reason(raw: "connectionClosed")
        /// We cancelled it with `cancel(stream:)`.
        public static let cancelled = Reason(raw: "cancelled")
        /// The response body passed the session's `maxResponseBodySize`; we reset the stream.
        public static let responseTooLarge = Reason(raw: "responseTooLarge")
    }

    /// The RST_STREAM or GOAWAY code (see `HTTP2ErrorCode`); REFUSED_STREAM = 7 means "not processed".
    public let errorCode: UInt32
    public let reason: Reason
    /// False only when the server provably never acted on the request (REFUSED_STREAM, a stream
    /// above a GOAWAY's last_stream_id, or a request that never left us): it is safe to send it
    /// again elsewhere. True means it may have been processed.
    public var wasProcessed: Bool

    public init(errorCode: UInt32, reason: Reason, wasProcessed: Bool) {
        self.errorCode = errorCode
        self.reason = reason
        self.wasProcessed = wasProcessed
    }

    public var description: String {
        "HTTP2StreamError(\(reason), errorCode: \(errorCode), wasProcessed: \(wasProcessed))"
    }
}

/// A complete response to one client stream.
public struct HTTP2Response: Sendable, Equatable {
    public var status: Int
    /// Regular header fields only (and trailers, if any); pseudo-headers are excluded, `:status` is `status`.
    public var headers: [HTTP2Header]
    public var body: [UInt8]

    public init(status: Int, headers: [HTTP2Header], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by lower-case name, because HTTP/2 names are lower-case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}

/// A complete request received by a server session.
public struct HTTP2Request: Sendable, Equatable {
    public var method: String
    public var path: String
    public var authority: String
    public var scheme: String
    /// Regular header fields only; the pseudo-headers are in `method`, `path`, `authority`, `scheme`.
    public var headers: [HTTP2Header]
    public var body: [UInt8]

    public init(method: String, path: String, authority: String = "", scheme: String = "https",
                headers: [HTTP2Header], body: [UInt8]) {
        self.method = method
        self.path = path
        self.authority = authority
        self.scheme = scheme
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by lower-case name, because HTTP/2 names are lower-case.
    public func header(_ name: String) -> String? {
        headers.first { $0.name == name }?.value
    }
}
