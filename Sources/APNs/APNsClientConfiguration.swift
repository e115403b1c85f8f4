#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import OpenSSLSupport

/// Everything the client needs to reach Apple. The defaults follow Apple's guidance and the
/// lessons in docs/ARCHITECTURE.md §7; tests shrink the timings.
public struct APNsClientConfiguration: Sendable {
    /// A provider token or a push certificate. A reference shared by every copy of this
    /// configuration, so a key or certificate replaced in it (SIGHUP) reaches every connection
    /// without a restart.
    package let authentication: APNsAuthentication
    /// Who signs provider tokens, and the one token every connection sends; nil with a certificate.
    package var credentials: APNsCredentials? {
        if case .token(let credentials) = authentication { return credentials }
        return nil
    }
    /// The key and team of the provider tokens; nil when the client authenticates with a certificate.
    public var keyID: String? { credentials?.current.keyID }
    public var teamID: String? { credentials?.current.teamID }
    public var production: APNsEndpoint = .production
    public var sandbox: APNsEndpoint = .sandbox
    /// The setting that chose each host (`APNS_HOST`, `APNS_SANDBOX_HOST`, a flag), named when
    /// the host cannot be reached; nil means Apple's default host.
    package var productionHostSetting: String?
    package var sandboxHostSetting: String?
    /// Client TLS with ALPN h2; keep the system store (never pin Apple's CA) plus any test CA.
    /// With a certificate, the context presenting the certificate when the client was made;
    /// connections use `connectionTLS`, which follows a replaced certificate.
    package var tls: TLSContext
    /// The context a connection opened now handshakes with.
    var connectionTLS: TLSContext {
        if case .certificate(let certificate) = authentication { return certificate.tls }
        return trustOverride.current ?? tls
    }
    /// `tls` as replaced by `APNsClient.replaceTrust`, shared by every copy of this configuration.
    package let trustOverride = APNsTrustOverride()
    /// The topic (the app's bundle id) of a push sent without one: `APNS_TOPIC`.
    public var topic: String?
    /// Where the extra CA came from (`APNS_CA_FILE`, `APNS_CA`), named when a certificate is not trusted.
    package var caSetting: String?
    /// Connections per environment: Apple prefers a few long-lived ones to many short ones.
    public var poolSize = APNsClientConfiguration.machine.poolSize
    /// Pushes waiting for a free stream per environment; beyond it we answer `overloaded` at once.
    public var queueCapacity = APNsClientConfiguration.machine.queueCapacity
    /// Below Mastodon's 10 s read timeout, so the relay can still answer 504 itself.
    public var pushTimeout: Duration = .seconds(8)
    /// TCP, TLS and Apple's first SETTINGS together. Below `pushTimeout`, so a push waiting
    /// for a connect that fails (a hung handshake) gets that failure, not a bare timeout; keep
    /// it so when changing either.
    public var connectTimeout: Duration = .seconds(5)
    /// An idle connection is PINGed this often; NAT boxes and Apple drop silent ones.
    public var idlePingInterval: Duration = .seconds(60)
    /// No PING ACK within this time means the connection is dead: replace it.
    public var pingTimeout: Duration = .seconds(5)
    /// First reconnect delay after a connection that failed or carried no work; Apple treats rapid
    /// reconnects as an attack, so it doubles to `backoffMax`. A pool slot never connects twice
    /// within `2 × backoffBase`, whatever ended its connection (a GOAWAY after every request).
    public var backoffBase: Duration = APNsClientConfiguration.machine.backoffBase
    public var backoffMax: Duration = APNsClientConfiguration.machine.backoffMax
    /// Extra attempts on another connection after 500/503/Shutdown/lost connections.
    public var maxRetries: Int {
        get { retryPolicy.maxRetries }
        set { retryPolicy.maxRetries = newValue }
    }
    /// Which of Apple's answers are retried, how often and after how long.
    package var retryPolicy = APNsRetryPolicy.library
    /// How often the pool looks for expired queued pushes, stalled streams and due reconnects:
    /// a queued push hears its timeout at most this late, so it stays well under Mastodon's 10 s.
    public var tickInterval: Duration = .milliseconds(250)
    /// An unanswered stream this long past its deadline marks its connection as stalled.
    public var stallGrace: Duration = APNsClientConfiguration.machine.stallGrace
    /// Streams a connection opens before it is retired (drained while a fresh one takes its
    /// place): HTTP/2 client stream ids end at 2^31, i.e. 2^30 requests per connection.
    public var maxStreamsPerConnection = APNsClientConfiguration.machine.maxStreamsPerConnection

    /// The pool's defaults live with the state machine that enforces them, written once.
    private static let machine = PoolConfiguration()

    package init(keyID: String, teamID: String, signer: any ProviderTokenSigner, tls: TLSContext) {
        self.authentication = .token(APNsCredentials(APNsCredentials.Identity(keyID: keyID, teamID: teamID, signer: signer)))
        self.tls = tls
    }

    /// Certificate-based authentication: `identity` (Apple's push certificate and its key) is the
    /// TLS client certificate of every connection, with the system store and the extra CA as
    /// trust (or only `extraCAFile` when `trustSystemStore` is false).
    package init(certificate identity: TLSClientIdentity, trustSystemStore: Bool = true, extraCAFile: String? = nil,
                 extraCAPEM: String? = nil) throws {
        let certificate = try APNsClientCertificate(identity) { identity in
            try TLSContext.client(alpn: ["h2"], trustSystemStore: trustSystemStore, extraCAFile: extraCAFile,
                                  extraCAPEM: extraCAPEM, clientIdentity: identity)
        }
        self.authentication = .certificate(certificate)
        self.tls = certificate.tls
        caSetting = extraCAFile != nil ? "APNS_CA_FILE" : extraCAPEM != nil ? "APNS_CA" : nil
    }

    /// The relay's form, with the OpenSSL key it already holds.
    package init(keyID: String, teamID: String, signingKey: ES256PrivateKey, trustSystemStore: Bool = true,
                 extraCAFile: String? = nil, extraCAPEM: String? = nil) throws {
        let tls = try TLSContext.client(alpn: ["h2"], trustSystemStore: trustSystemStore, extraCAFile: extraCAFile, extraCAPEM: extraCAPEM)
        self.init(keyID: keyID, teamID: teamID, signer: signingKey, tls: tls)
        caSetting = extraCAFile != nil ? "APNS_CA_FILE" : extraCAPEM != nil ? "APNS_CA" : nil
    }

    /// The common case: Apple's `.p8` key, the system trust store, plus an optional extra CA
    /// (the emulator's, as a file or PEM text) for tests.
    /// - Throws: `APNsError.badConfiguration` when the CA cannot be read.
    public init(keyID: String, teamID: String, key: APNsSigningKey, topic: String? = nil,
                caFile: String? = nil, caPEM: String? = nil) throws(APNsError) {
        let tls: TLSContext
        do {
            tls = try TLSContext.client(alpn: ["h2"], trustSystemStore: true, extraCAFile: caFile, extraCAPEM: caPEM)
        } catch {
            let setting = caFile != nil ? "APNS_CA_FILE (\(caFile!))" : "APNS_CA"
            throw APNsError(code: .badConfiguration, message: "\(setting) is not a usable CA: \(error)")
        }
        self.init(keyID: keyID, teamID: teamID, signer: key, tls: tls)
        self.topic = topic
        caSetting = caFile != nil ? "APNS_CA_FILE" : caPEM != nil ? "APNS_CA" : nil
    }
}
