#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import OpenSSLSupport

/// Lets the OpenSSL key sign provider tokens directly; the model only knows the protocol.
extension ES256PrivateKey: ProviderTokenSigner {}

// APNsEnvironment and APNsSending live in APNsSending.swift (main's copies are kept).

/// Where a pool connects. Custom hosts point the client at the emulator in tests and the demo.
public struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The name the certificate must carry (and SNI); nil means `host`.
    public var serverName: String?

    public init(host: String, port: Int = 443, serverName: String? = nil) {
        self.host = host
        self.port = port
        self.serverName = serverName
    }

    public static let production = APNsEndpoint(host: "api.push.apple.com")
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com")

    /// Reads `host`, `host:port` or `[v6]:port` (APNS_HOST style); nil when the port is not a number.
    public static func parse(_ text: String) -> APNsEndpoint? {
        let text = text.trimmingWhitespace
        guard !text.isEmpty else { return nil }
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            if rest.isEmpty { return APNsEndpoint(host: host) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return APNsEndpoint(host: host, port: port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 1 { return APNsEndpoint(host: text) }
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port), !parts[0].isEmpty else { return nil }
        return APNsEndpoint(host: String(parts[0]), port: port)
    }

    public var description: String { "\(host):\(port)" }
}

/// Everything the client needs to reach Apple. The defaults follow Apple's guidance and the
/// lessons in docs/ARCHITECTURE.md §7; tests shrink the timings.
public struct APNsClientConfiguration: Sendable {
    /// Who signs provider tokens. A reference shared by every copy of this configuration, so a
    /// key rotated in it (SIGHUP) reaches every connection's next token without a restart.
    public let credentials: APNsCredentials
    public var keyID: String { credentials.current.keyID }
    public var teamID: String { credentials.current.teamID }
    /// Signs provider tokens; an `ES256PrivateKey` loaded from the `.p8` file in production.
    public var signer: any ProviderTokenSigner { credentials.current.signer }
    public var production: APNsEndpoint = .production
    public var sandbox: APNsEndpoint = .sandbox
    /// Client TLS with ALPN h2; keep the system store (never pin Apple's CA) plus any test CA.
    public var tls: TLSContext
    /// Connections per environment: Apple prefers a few long-lived ones to many short ones.
    public var poolSize = 2
    /// Pushes waiting for a free stream per environment; beyond it we answer `overloaded` at once.
    public var queueCapacity = 1000
    /// Below Mastodon's 10 s read timeout, so the relay can still answer 504 itself.
    public var pushTimeout: Duration = .seconds(8)
    public var connectTimeout: Duration = .seconds(10)
    /// An idle connection is PINGed this often; NAT boxes and Apple drop silent ones.
    public var idlePingInterval: Duration = .seconds(60)
    /// No PING ACK within this time means the connection is dead: replace it.
    public var pingTimeout: Duration = .seconds(5)
    /// First reconnect delay; Apple treats rapid reconnects as an attack, so it doubles to `backoffMax`.
    public var backoffBase: Duration = .seconds(1)
    public var backoffMax: Duration = .seconds(60)
    /// Extra attempts on another connection after 500/503/lost connections.
    public var maxRetries = 2
    /// How often the pool looks for expired queued pushes, stalled streams and due reconnects:
    /// a queued push hears its timeout at most this late, so it stays well under Mastodon's 10 s.
    public var tickInterval: Duration = .milliseconds(250)
    /// An unanswered stream this long past its deadline marks its connection as stalled.
    public var stallGrace: Duration = .seconds(2)
    /// Streams a connection opens before it is retired (drained while a fresh one takes its
    /// place): HTTP/2 client stream ids end at 2^31, i.e. 2^30 requests per connection.
    public var maxStreamsPerConnection = 1_000_000_000
    /// A connection that ends within this time of opening died young: its pool slot backs off
    /// before reconnecting, whatever it answered (Apple treats rapid reconnects as an attack).
    public var youngConnectionAge: Duration = .seconds(10)
    public var tokenPolicy = ProviderTokenPolicy()

    public init(keyID: String, teamID: String, signer: any ProviderTokenSigner, tls: TLSContext) {
        self.credentials = APNsCredentials(APNsCredentials.Identity(keyID: keyID, teamID: teamID, signer: signer))
        self.tls = tls
    }

    /// The common case: Apple's `.p8` key, the system trust store, plus an optional extra CA
    /// (the emulator's) for tests and the demo.
    public init(keyID: String, teamID: String, signingKey: ES256PrivateKey, extraCAFile: String? = nil,
                extraCAPEM: String? = nil) throws {
        let tls = try TLSContext.client(alpn: ["h2"], trustSystemStore: true, extraCAFile: extraCAFile, extraCAPEM: extraCAPEM)
        self.init(keyID: keyID, teamID: teamID, signer: signingKey, tls: tls)
    }
}

/// The key id, team id and key that sign provider tokens, replaceable while the client runs.
///
/// Read once per token (a connection opening, a renewal), never per push: a replacement applies
/// to new connections and to renewals, and tokens already accepted stay valid until they are
/// renewed, as Apple keeps accepting them until the old key is revoked.
public final class APNsCredentials: Sendable {
    public struct Identity: Sendable {
        public var keyID: String
        public var teamID: String
        public var signer: any ProviderTokenSigner

        public init(keyID: String, teamID: String, signer: any ProviderTokenSigner) {
            self.keyID = keyID
            self.teamID = teamID
            self.signer = signer
        }
    }

    private let identity: Mutex<Identity>

    public init(_ identity: Identity) {
        self.identity = Mutex(identity)
    }

    /// What the next provider token is made from.
    public var current: Identity { identity.withLock { $0 } }

    /// Swaps in a new identity once it has signed a token; a key that cannot sign leaves the
    /// old identity in place and throws `badKey`.
    public func replace(with new: Identity, unixTime: Int64 = Int64(Date().timeIntervalSince1970)) throws(APNsError) {
        _ = try ProviderToken(keyID: new.keyID, teamID: new.teamID, issuedAt: unixTime, signer: new.signer)
        identity.withLock { $0 = new }
    }
}

/// What the relay's metrics and logs hear about connections. Called on event-loop threads:
/// keep it short and never block. Every method has an empty default.
public protocol APNsClientObserver: Sendable {
    func connectionOpened(environment: APNsEnvironment, connection: Int)
    /// `error` is nil for a close we asked for (drained, shutdown).
    func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?)
    func connectFailed(environment: APNsEnvironment, error: String)
    func tokenRenewed(environment: APNsEnvironment, connection: Int)
    func reconnectScheduled(environment: APNsEnvironment, after delay: Duration)
    /// A connection opens to replace one that ended (every reconnect, with or without a delay).
    func reconnecting(environment: APNsEnvironment, connection: Int)
    /// A push is sent again (another connection, a fresh token); a duplicate may reach the device.
    func pushRetried(environment: APNsEnvironment)
}

extension APNsClientObserver {
    public func connectionOpened(environment: APNsEnvironment, connection: Int) {}
    public func connectionClosed(environment: APNsEnvironment, connection: Int, error: String?) {}
    public func connectFailed(environment: APNsEnvironment, error: String) {}
    public func tokenRenewed(environment: APNsEnvironment, connection: Int) {}
    public func reconnectScheduled(environment: APNsEnvironment, after delay: Duration) {}
    public func reconnecting(environment: APNsEnvironment, connection: Int) {}
    public func pushRetried(environment: APNsEnvironment) {}
}

