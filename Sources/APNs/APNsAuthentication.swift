import Synchronization
import OpenSSLSupport

/// How a client proves itself to Apple: one of the two ways Apple offers, never both.
package enum APNsAuthentication: Sendable {
    /// A provider token signed with a `.p8` key, sent as a request header and shared by every
    /// connection (see `APNsCredentials`).
    case token(APNsCredentials)
    /// Apple's push certificate, presented in each connection's TLS handshake; requests carry no
    /// `authorization` header.
    case certificate(APNsClientCertificate)
}

/// The push certificate a certificate-authenticated client presents, replaceable while the client
/// runs (a renewed certificate, on SIGHUP). Apple checks the certificate once, in the handshake, so
/// a connection keeps the certificate it opened with: the client retires its connections when the
/// certificate changes, and their replacements present the new one.
package final class APNsClientCertificate: Sendable {
    private struct State {
        var identity: TLSClientIdentity
        var tls: TLSContext
    }

    private let state: Mutex<State>
    /// Builds a TLS context presenting an identity, with the trust the client was configured with.
    private let makeContext: @Sendable (TLSClientIdentity) throws -> TLSContext

    /// - Throws: whatever `makeContext` throws for `identity` (a key OpenSSL refuses).
    package init(_ identity: TLSClientIdentity, makeContext: @escaping @Sendable (TLSClientIdentity) throws -> TLSContext) throws {
        self.makeContext = makeContext
        self.state = Mutex(State(identity: identity, tls: try makeContext(identity)))
    }

    /// The certificate presented by connections opened from now on.
    package var identity: TLSClientIdentity { state.withLock { $0.identity } }

    /// The TLS context a new connection handshakes with.
    var tls: TLSContext { state.withLock { $0.tls } }

    /// Presents `identity` on the connections opened from now on.
    /// - Throws: when no TLS context can be made with it; the current certificate stays.
    package func replace(with identity: TLSClientIdentity) throws {
        let tls = try makeContext(identity)
        state.withLock { $0 = State(identity: identity, tls: tls) }
    }

    /// Trusts what `makeContext` trusts on the connections opened from now on, presenting the
    /// same certificate (a new CA for Apple's servers, on SIGHUP).
    /// - Throws: when no TLS context can be made; the current trust stays.
    package func replaceTrust(_ makeContext: @Sendable (TLSClientIdentity) throws -> TLSContext) throws {
        let identity = self.identity
        let tls = try makeContext(identity)
        state.withLock { $0 = State(identity: identity, tls: tls) }
    }
}

/// The TLS context a token-authenticated client's new connections handshake with once its trust
/// was replaced (a new CA for Apple's servers, on SIGHUP): a reference every copy of the
/// configuration shares; empty until then.
package final class APNsTrustOverride: Sendable {
    private let context = Mutex<TLSContext?>(nil)
    package init() {}
    var current: TLSContext? { context.withLock { $0 } }
    func replace(with tls: TLSContext) { context.withLock { $0 = tls } }
}
