internal import Basics

/// Why a connection to Apple could not be made, as a value: what the operator must check
/// (`code`) and the sentence that says it (`message`, which is also the description), naming
/// the host, the setting that chose it and the CA setting where they matter.
/// Equality (and the hash) is on the code alone (`CodedError`); the description is the sentence.
package struct APNsConnectFailure: CodedError, Hashable {
    package enum Code: String, NamedCode {
        /// Nothing listens on the host and port (or a firewall rejects the connection).
        case refused
        /// The host name does not resolve (a typo, or no DNS).
        case hostNotFound
        /// The server's certificate did not verify: a CA we do not trust, or not valid for the host.
        case untrustedCertificate
        /// TLS worked but the server offered no h2 in ALPN: it is not an HTTP/2 (APNs) server.
        case noHTTP2
        /// The server accepted the TCP connection but never completed the TLS handshake.
        case tlsHandshakeTimeout
        /// The TCP connect (or the server's first HTTP/2 SETTINGS) took longer than the connect timeout.
        case connectTimeout
        /// Anything else (an unreachable network, a TLS failure of another kind); the message says it.
        case other
    }

    /// What the operator must check.
    package let code: Code
    /// One sentence: what happened, with whom, and what to check.
    package let message: String

    package init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { message }
}
