internal import Basics

/// Why a connection to Apple could not be made, as a value: what the operator must check
/// (`code`) and the sentence that says it (`message`, which is also the description), naming
/// the host, the setting that chose it and the CA setting where they matter.
///
/// A struct with a code rather than a package enum, like `APNsError`, so new kinds do not break
/// callers' `switch`es; equality is on the code alone.
package struct APNsConnectFailure: Error, Sendable, Hashable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        init(_ raw: String) { self.raw = raw }
        package var description: String { raw }

        /// Nothing listens on the host and port (or a firewall rejects the connection).
        package static let refused = Code("refused")
        /// The host name does not resolve (a typo, or no DNS).
        package static let hostNotFound = Code("hostNotFound")
        /// The server's certificate did not verify: a CA we do not trust, or not valid for the host.
        package static let untrustedCertificate = Code("untrustedCertificate")
        /// TLS worked but the server offered no h2 in ALPN: it is not an HTTP/2 (APNs) server.
        package static let noHTTP2 = Code("noHTTP2")
        /// The server accepted the TCP connection but never completed the TLS handshake.
        package static let tlsHandshakeTimeout = Code("tlsHandshakeTimeout")
        /// The TCP connect (or the server's first HTTP/2 SETTINGS) took longer than the connect timeout.
        package static let connectTimeout = Code("connectTimeout")
        /// Anything else (an unreachable network, a TLS failure of another kind); the message says it.
        package static let other = Code("other")
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

    package static func == (lhs: APNsConnectFailure, rhs: APNsConnectFailure) -> Bool { lhs.code == rhs.code }
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension APNsConnectFailure: CodedError {}
