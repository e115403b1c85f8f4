import EventLoop
import OpenSSLSupport
import HTTP2

/// Why a connection could not be made or was lost, as a value: a code to branch on and a
/// message that says what happened and, where it helps, what to check.
package struct TransportError: Error, Sendable, CustomStringConvertible, Equatable {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package let name: String
        init(_ name: String) { self.name = name }
        package var description: String { name }

        /// TCP could not connect (refused, unreachable, unknown host).
        package static let connectFailed = Code("connectFailed")
        /// The TCP connection, TLS handshake and the server's first SETTINGS took too long.
        package static let timedOut = Code("timedOut")
        /// TLS failed: wrong CA, host-name mismatch, no h2 offered…
        package static let tls = Code("tls")
        /// The peer broke the HTTP/2 protocol, or sent bytes that do not decode.
        package static let protocolError = Code("protocolError")
        /// The peer closed the connection or the socket failed.
        package static let closed = Code("closed")
        /// We closed the connection (shutdown, replacement).
        package static let closedLocally = Code("closedLocally")
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "\(code): \(message)" }

    package static func == (a: TransportError, b: TransportError) -> Bool { a.code == b.code }

    init(_ error: SocketError, while doing: String) {
        self.init(error.code == .timedOut ? .timedOut : .connectFailed, "\(doing): \(error.message)")
    }

    init(_ error: TLSError) {
        self.init(.tls, error.message)
    }
}
