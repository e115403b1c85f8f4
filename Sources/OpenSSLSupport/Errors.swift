internal import COpenSSL

/// A TLS failure with a code callers switch on and a message that says what to do,
/// because "handshake failed" alone leaves an operator guessing.
public struct TLSError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value: a struct over names rather than a public enum so
    /// new codes do not break callers' switches.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The peer's certificate chain did not verify (unknown issuer, expired, …).
        public static let certificateVerificationFailed = Code("certificateVerificationFailed")
        /// The certificate is valid but not for the host name (or IP address) we dialled.
        public static let hostnameMismatch = Code("hostnameMismatch")
        /// The handshake finished without HTTP/2 negotiated, or the peer refused every protocol we offered.
        public static let noALPN = Code("noALPN")
        /// The peer closed the TLS session (close_notify or EOF) before we were done.
        public static let peerClosed = Code("peerClosed")
        /// Any other handshake failure; the message carries OpenSSL's reason.
        public static let handshakeFailed = Code("handshakeFailed")
        /// A context, certificate, key or CA could not be loaded.
        public static let badConfiguration = Code("badConfiguration")
        /// Bad TLS data after the handshake (a corrupt record, an unexpected alert).
        public static let protocolError = Code("protocolError")
        /// Plaintext was written before the handshake completed: a bug in the caller.
        public static let notEstablished = Code("notEstablished")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "TLS \(code): \(message)" }
}

/// Reads OpenSSL's per-thread error queue into text, because its numeric codes mean
/// nothing in a log line and a stale entry would be blamed on the next failure.
public enum OpenSSLError {
    /// Empties the calling thread's error queue and returns its entries, oldest first,
    /// joined with "; " (empty when there were none).
    public static func drainQueue() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            parts.append(text(for: code))
        }
        return parts.joined(separator: "; ")
    }

    /// Forgets every queued error: call before an operation whose failure you will report.
    public static func clearQueue() {
        ERR_clear_error()
    }

    /// The reason code of the oldest queued error, without removing it (0 when empty).
    static func peekReason() -> Int32 {
        ERR_GET_REASON(ERR_peek_error())
    }

    static func text(for code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `what` followed by whatever OpenSSL queued, so the message carries both our
    /// context and the library's reason.
    package static func message(_ what: String) -> String {
        let queued = drainQueue()
        return queued.isEmpty ? what : "\(what) (\(queued))"
    }
}
