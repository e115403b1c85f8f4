import Foundation
import Testing
import EventLoop
import Transport
import OpenSSLSupport
import CertificateSupport
import MockAPNs
@testable import APNs

/// Only failing to talk to Apple is an error, and it says which failure it was.
@Suite("Connect failures name their cause", .serialized)
struct ConnectFailureTests {
    /// The error a push to `endpoint` ends with, through the public API only.
    static func failure(host: String = "127.0.0.1", port: Int, caPEM: String? = nil,
                        configure: (inout APNsClientConfiguration) -> Void = { _ in }) async throws -> APNsError {
        var configuration = try APNsClientConfiguration(keyID: Fixture.kid, teamID: Fixture.team,
                                                        key: try APNsSigningKey(pem: Fixture.key.pemPKCS8),
                                                        topic: Fixture.topic, caPEM: caPEM)
        configuration.production = APNsEndpoint(host: host, port: port)
        configuration.poolSize = 1
        configuration.pushTimeout = .seconds(2)
        configuration.connectTimeout = .milliseconds(500)
        configuration.backoffBase = .milliseconds(100)
        configuration.backoffMax = .milliseconds(200)
        configuration.tickInterval = .milliseconds(50)
        configure(&configuration)
        return try await failure(of: APNsClient(configuration: configuration), token: 1)
    }

    /// The error one push ends with, the client shut down after it.
    static func failure(of client: APNsClient, token: Int, options: APNsPushOptions = APNsPushOptions()) async throws -> APNsError {
        let outcome: APNsError
        do {
            let response = try await client.send(try APNsAlertPayload(title: "hi").build(), to: Fixture.token("", token).hex,
                                                 options: options)
            Issue.record("expected a failure to connect, got \(response.json)")
            outcome = APNsError(code: .badConfiguration, message: "")
        } catch {
            outcome = error
        }
        await client.shutdown()
        return outcome
    }

    @Test("a closed port is reported as connection refused")
    func refused() async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team, keys: [:]))
        let port = server.port
        server.stop()
        let error = try await Self.failure(port: port)
        #expect(error.code == .unavailable)
        #expect(error.connectFailure?.code == .refused)
        #expect(error.message.contains("connection refused"))
    }

    @Test("a host that does not resolve is reported as DNS")
    func dns() async throws {
        let error = try await Self.failure(host: "no-such-host.invalid", port: 443)
        #expect(error.code == .unavailable)
        #expect(error.connectFailure?.code == .hostNotFound)
        #expect(error.message.hasPrefix("DNS: cannot resolve no-such-host.invalid"))
    }

    @Test("a certificate from a CA not given is untrusted, and the message names APNS_CA_FILE")
    func untrusted() async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team, keys: [:]))
        defer { server.stop() }
        let error = try await Self.failure(port: server.port)
        #expect(error.connectFailure?.code == .untrustedCertificate)
        #expect(error.message.contains("untrusted certificate"))
        #expect(error.message.contains("APNS_CA_FILE"))
        // One piece of advice, not a question about a setting that is not set.
        #expect(!error.message.contains("the right CA"), "\(error.message)")
        let other = try TestCertificates.make()
        let wrongCA = try await Self.failure(port: server.port, caPEM: other.caPEM)
        #expect(wrongCA.connectFailure?.code == .untrustedCertificate)
        #expect(wrongCA.message.contains("the CA in APNS_CA did not sign it"))
    }

    @Test("a TLS server that offers no h2 in ALPN is reported as such")
    func noH2() async throws {
        let server = try HTTP1OnlyTLSServer()
        defer { server.stop() }
        let error = try await Self.failure(port: server.port, caPEM: server.caPEM)
        #expect(error.code == .unavailable)
        #expect(error.connectFailure?.code == .noHTTP2)
        #expect(error.message.hasPrefix("no h2 in ALPN from 127.0.0.1:\(server.port)"), "\(error.message)")
    }

    @Test("a server that accepts but never speaks TLS is reported as a handshake timeout")
    func handshakeTimeout() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let held = HeldStreams()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { held.keep($0) }
        defer { listener.close() }
        let error = try await Self.failure(port: listener.localPort)
        #expect(error.connectFailure?.code == .tlsHandshakeTimeout)
        #expect(error.message.hasPrefix("TLS handshake timeout with 127.0.0.1:"), "\(error.message)")
    }
}

extension ConnectFailureTests {
    /// A listener that accepts and never speaks: every TLS handshake with it hangs.
    static func withSilentListener<T>(_ body: (Int) async throws -> T) async throws -> T {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let held = HeldStreams()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { held.keep($0) }
        defer { listener.close() }
        return try await body(listener.localPort)
    }

    @Test("with the default timeouts (scaled down), a hung TLS handshake is the answer, not a bare timeout")
    func defaultsLetTheHandshakeTimeoutAnswer() async throws {
        let defaults = try APNsClientConfiguration(keyID: Fixture.kid, teamID: Fixture.team,
                                                   key: try APNsSigningKey(pem: Fixture.key.pemPKCS8))
        let error = try await Self.withSilentListener { port in
            try await Self.failure(port: port) { configuration in
                // The defaults' relation, a tenth of the time.
                configuration.pushTimeout = defaults.pushTimeout / 10
                configuration.connectTimeout = defaults.connectTimeout / 10
                configuration.backoffBase = defaults.backoffBase / 10
                configuration.backoffMax = defaults.backoffMax / 10
                configuration.tickInterval = defaults.tickInterval / 10
            }
        }
        #expect(defaults.connectTimeout < defaults.pushTimeout)
        #expect(error.connectFailure?.code == .tlsHandshakeTimeout)
        #expect(error.message.hasPrefix("TLS handshake timeout with 127.0.0.1:"), "\(error.message)")
    }

    @Test("a push whose deadline comes while the TLS handshake still hangs says the handshake is not done")
    func deadlineDuringHandshake() async throws {
        let error = try await Self.withSilentListener { port in
            try await Self.failure(port: port) { configuration in
                configuration.pushTimeout = .milliseconds(300)
                configuration.connectTimeout = .seconds(3)
            }
        }
        #expect(error.code == .timeout)
        #expect(error.connectFailure == nil, "no connect has failed yet: the push's deadline came first")
        #expect(error.message.hasPrefix("TLS handshake with 127.0.0.1:"), "\(error.message)")
        #expect(error.message.contains("not done within"), "\(error.message)")
    }

    @Test("when the client's first connect is refused, the waiting push hears it at once, not at its deadline")
    func firstConnectRefusedFailsFast() async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team, keys: [:]))
        let port = server.port
        server.stop()
        let defaults = try APNsClientConfiguration(keyID: Fixture.kid, teamID: Fixture.team,
                                                   key: try APNsSigningKey(pem: Fixture.key.pemPKCS8))
        let error = try await Self.failure(port: port) { configuration in
            // The defaults' backoff and deadline: before, the push waited out two reconnects.
            configuration.pushTimeout = defaults.pushTimeout
            configuration.connectTimeout = defaults.connectTimeout
            configuration.backoffBase = defaults.backoffBase
            configuration.backoffMax = defaults.backoffMax
            configuration.tickInterval = defaults.tickInterval
        }
        #expect(error.code == .unavailable)
        #expect(error.connectFailure?.code == .refused)
        #expect(error.message.contains("connection refused"), "\(error.message)")
        #expect(error.message.contains("no connection to APNs could be made yet"), "\(error.message)")
    }
}

extension ConnectFailureTests {
    /// The error a sandbox push ends with, the client made from `variables` (the library's names).
    static func sandboxFailure(_ variables: [String: String]) async throws -> APNsError {
        var base = [
            "APNS_KEY": Fixture.key.pemPKCS8, "APNS_KEY_ID": Fixture.kid, "APNS_TEAM_ID": Fixture.team,
            "APNS_TOPIC": Fixture.topic,
        ]
        base.merge(variables) { $1 }
        var configuration = try APNsClientConfiguration(environment: base)
        configuration.poolSize = 1
        configuration.pushTimeout = .seconds(2)
        configuration.connectTimeout = .milliseconds(500)
        return try await failure(of: APNsClient(configuration: configuration), token: 2, options: APNsPushOptions(sandbox: true))
    }

    @Test("APNS_HOST alone serves the sandbox too, and a refused connect names the variable that chose the host")
    func hostVariableNamed() async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team, keys: [:]))
        let port = server.port
        server.stop()
        let configuration = try APNsClientConfiguration(environment: [
            "APNS_KEY": Fixture.key.pemPKCS8, "APNS_KEY_ID": Fixture.kid, "APNS_TEAM_ID": Fixture.team,
            "APNS_HOST": "127.0.0.1:\(port)",
        ])
        #expect(configuration.sandbox == APNsEndpoint(host: "127.0.0.1", port: port))
        let viaHost = try await Self.sandboxFailure(["APNS_HOST": "127.0.0.1:\(port)"])
        #expect(viaHost.connectFailure?.code == .refused)
        #expect(viaHost.message.contains("connection refused by 127.0.0.1:\(port)"), "\(viaHost.message)")
        #expect(viaHost.message.contains("check APNS_HOST"), "\(viaHost.message)")
        let viaSandbox = try await Self.sandboxFailure(["APNS_HOST": "127.0.0.1:1", "APNS_SANDBOX_HOST": "127.0.0.1:\(port)"])
        #expect(viaSandbox.message.contains("connection refused by 127.0.0.1:\(port)"), "\(viaSandbox.message)")
        #expect(viaSandbox.message.contains("check APNS_SANDBOX_HOST"), "\(viaSandbox.message)")
    }

    @Test("a host nobody set is named as Apple's default")
    func defaultHostNamed() {
        let refused = SocketError(code: .connectionRefused, errno: ECONNREFUSED, message: "connect to 17.188.1.1:443 failed")
        let error = TransportError(.connectFailed, "connecting to api.sandbox.push.apple.com:443", cause: .socket(refused))
        let why = APNsConnectFailure(error, endpoint: .sandbox, caSetting: nil, hostSetting: nil)
        #expect(why.code == .refused)
        #expect(why.description.contains("the host is Apple's default"), "\(why)")
        #expect(!why.description.contains("APNS_HOST"), "\(why)")
    }

    @Test("the kind of failure is decided on the cause's value, whatever its words say", arguments: [
        (TransportError.Cause.socket(SocketError(code: .connectionRefused, message: "DNS TLS alpn")), APNsConnectFailure.Code.refused),
        (.socket(SocketError(code: .hostNotFound, resolverCode: EAI_NONAME, message: "refused")), .hostNotFound),
        (.socket(SocketError(code: .timedOut, errno: ETIMEDOUT, message: "handshake")), .connectTimeout),
        (.socket(SocketError(code: .unreachable, errno: ENETUNREACH, message: "refused")), .other),
        (.tls(TLSError(.certificateVerificationFailed, "alpn", verifyResult: 20)), .untrustedCertificate),
        (.tls(TLSError(.hostnameMismatch, "refused", verifyResult: 62)), .untrustedCertificate),
        (.tls(TLSError(.noALPN, "certificate verification failed")), .noHTTP2),
        (.tls(TLSError(.handshakeFailed, "no ALPN")), .other),
        (.timedOut(.tlsHandshake, within: .seconds(5)), .tlsHandshakeTimeout),
        (.timedOut(.settings, within: .seconds(5)), .connectTimeout),
    ])
    func decidedOnValues(cause: TransportError.Cause, expected: APNsConnectFailure.Code) {
        let error = TransportError(.connectFailed, "connecting", cause: cause)
        #expect(APNsConnectFailure(error, endpoint: .sandbox, caSetting: nil).code == expected)
    }

    @Test("a failure is equal to another of its code, and its description is its sentence")
    func equalityOnCode() {
        let one = APNsConnectFailure(code: .refused, message: "connection refused by a:1")
        #expect(one == APNsConnectFailure(code: .refused, message: "connection refused by b:2"))
        #expect(one != APNsConnectFailure(code: .hostNotFound, message: "connection refused by a:1"))
        #expect("\(one)" == "connection refused by a:1")
        let carried = APNsError(code: .unavailable, message: "x", connectFailure: one)
        #expect(carried == APNsError(code: .unavailable, message: "y"))
        #expect(carried.connectFailure?.code == .refused)
    }
}

/// Keeps accepted sockets open and silent until the test ends.
final class HeldStreams: @unchecked Sendable {
    private let lock = NSLock()
    private var streams: [TCPStream] = []
    func keep(_ stream: TCPStream) { lock.lock(); streams.append(stream); lock.unlock() }
}

/// A TLS server on loopback whose ALPN offers http/1.1 only: an HTTPS server that is not APNs.
final class HTTP1OnlyTLSServer: @unchecked Sendable {
    let group: EventLoopGroup
    let listener: TCPListener
    /// The CA that signed its certificate, for the client to trust.
    let caPEM: String
    var port: Int { listener.localPort }

    init() throws {
        group = try EventLoopGroup(loopCount: 1)
        let certificates = try TestCertificates.make()
        caPEM = certificates.caPEM
        let tls = try TLSContext.server(certificateChainPEM: certificates.certificatePEM,
                                        privateKeyPEM: certificates.privateKeyPEM, alpn: ["http/1.1"])
        listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            guard let session = try? TLSSession(serverContext: tls) else { return stream.close() }
            stream.handler = HandshakeOnly(session)
        }
    }

    func stop() {
        listener.close()
        group.shutdown()
    }

    /// Answers the TLS handshake and nothing after it; closes once the handshake failed.
    private final class HandshakeOnly: TCPStreamHandler {
        let session: TLSSession
        init(_ session: TLSSession) { self.session = session }

        func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
            session.feed(bytes)
            let failed = (try? session.handshake()) == nil
            withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: 16) { chunk in
                while true {
                    let got = session.takeCiphertext(into: chunk)
                    if got > 0 { stream.write(UnsafeRawBufferPointer(rebasing: chunk[..<got])) }
                    if got < chunk.count { return }
                }
            }
            if failed { stream.closeAfterFlush() }
        }
        func streamDidDrainWrites(_ stream: TCPStream) {}
        func streamDidClose(_ stream: TCPStream, error: SocketError?) {}
    }
}
