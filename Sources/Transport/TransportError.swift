import EventLoop
import OpenSSLSupport
import HTTP2
internal import Basics

/// Why a connection could not be made or was lost, as a value: a code to branch on, the
/// layer below's own error as a `cause` (never folded into text), and a message that says
/// where it happened. Equality is on the code (`CodedError`).
package struct TransportError: CodedError {
    package enum Code: String, NamedCode {
        /// TCP could not connect (refused, unreachable, unknown host).
        case connectFailed
        /// The TCP connection, TLS handshake and the server's first SETTINGS took too long.
        case timedOut
        /// TLS failed: wrong CA, host-name mismatch, no h2 offered…
        case tls
        /// The peer broke the HTTP/2 protocol, or sent bytes that do not decode.
        case protocolError
        /// The peer closed the connection or the socket failed.
        case closed
        /// We closed the connection (shutdown, replacement).
        case closedLocally
    }

    /// The step after TCP connected that ran out of time (the TCP connect's own timeout is a
    /// `SocketError`).
    package enum Step: Sendable, Equatable, CustomStringConvertible {
        /// The TLS handshake.
        case tlsHandshake
        /// The server's first HTTP/2 SETTINGS, after TLS was established.
        case settings

        package var description: String {
            switch self {
            case .tlsHandshake: "the TLS handshake"
            case .settings: "the server's first HTTP/2 SETTINGS"
            }
        }
    }

    /// What the layer below said, as its own value.
    package enum Cause: Sendable, Equatable, CustomStringConvertible {
        /// Resolving, connecting or using the socket failed.
        case socket(SocketError)
        /// The TLS session failed: certificate, host name, ALPN, handshake, records.
        case tls(TLSError)
        /// The HTTP/2 session failed.
        case http2(HTTP2Error)
        /// A step after TCP connected did not finish within the time it had.
        case timedOut(Step, within: Duration)

        package var description: String {
            switch self {
            case .socket(let error): error.message
            case .tls(let error): error.message
            case .http2(let error): "\(error)"
            case .timedOut(let step, let within): "\(step) did not finish within \(within)"
            }
        }
    }

    package let code: Code
    /// The lower layer's error; nil when none was below (a clean close, ours or the peer's, or
    /// what the owner saw itself, like a PING left unanswered).
    package let cause: Cause?
    /// Where it happened ("connecting to api.push.apple.com:443"), without the cause's words.
    package let message: String

    package init(_ code: Code, _ message: String, cause: Cause? = nil) {
        self.code = code
        self.cause = cause
        self.message = message
    }

    package var description: String { "\(code): \(detail)" }

    /// A socket failure while `doing` something (connecting, mostly).
    init(_ error: SocketError, while doing: String) {
        self.init(error.code == .timedOut ? .timedOut : .connectFailed, doing, cause: .socket(error))
    }

    /// What a TLS session threw: a `TLSError` becomes the cause; anything else is kept as text.
    init(tls error: any Error) {
        if let error = error as? TLSError {
            self.init(.tls, "TLS", cause: .tls(error))
        } else {
            self.init(.tls, "TLS: \(error)")
        }
    }

    /// What an HTTP/2 session threw, and where: an `HTTP2Error` becomes the cause; anything else
    /// is kept as text.
    init(http2 error: any Error, _ message: String) {
        if let error = error as? HTTP2Error {
            self.init(.protocolError, message, cause: .http2(error))
        } else {
            self.init(.protocolError, "\(message): \(error)")
        }
    }

    /// The message and the cause's words as one line ("connecting to host:443: connect to … failed: …").
    package var detail: String {
        cause.map { "\(message): \($0)" } ?? message
    }
}
