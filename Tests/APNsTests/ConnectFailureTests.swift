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
    static func failure(host: String = "127.0.0.1", port: Int, caPEM: String? = nil) async throws -> APNsError {
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
        let client = try APNsClient(configuration: configuration)
        let alert = try APNsAlertPayload(title: "hi").build()
        let outcome: APNsError
        do {
            let response = try await client.send(alert, to: Fixture.token("", 1).hex)
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
        #expect(error.message.contains("connection refused"))
    }

    @Test("a host that does not resolve is reported as DNS")
    func dns() async throws {
        let error = try await Self.failure(host: "no-such-host.invalid", port: 443)
        #expect(error.code == .unavailable)
        #expect(error.message.hasPrefix("DNS: cannot resolve no-such-host.invalid"))
    }

    @Test("a certificate from a CA not given is untrusted, and the message names APNS_CA_FILE")
    func untrusted() async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team, keys: [:]))
        defer { server.stop() }
        let error = try await Self.failure(port: server.port)
        #expect(error.message.contains("untrusted certificate"))
        #expect(error.message.contains("APNS_CA_FILE"))
        let other = try TestCertificates.make()
        let wrongCA = try await Self.failure(port: server.port, caPEM: other.caPEM)
        #expect(wrongCA.message.contains("the CA in APNS_CA did not sign it"))
    }

    @Test("a server that negotiates no h2 in ALPN is reported as such")
    func noH2() {
        // What TLSSession says when the handshake ends without ALPN (an HTTP/1.1-only server).
        let error = TransportError(.tls, "the server did not offer h2 (no ALPN protocol negotiated); is it an HTTP/2 server?")
        let why = ConnectFailure.explain(error, endpoint: APNsEndpoint(host: "example.net"), caSetting: nil)
        #expect(why.hasPrefix("no h2 in ALPN from example.net:443"))
    }

    @Test("a server that accepts but never speaks TLS is reported as a handshake timeout")
    func handshakeTimeout() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let held = HeldStreams()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { held.keep($0) }
        defer { listener.close() }
        let error = try await Self.failure(port: listener.localPort)
        #expect(error.message.hasPrefix("TLS handshake timeout with 127.0.0.1:"), "\(error.message)")
    }
}

/// Keeps accepted sockets open and silent until the test ends.
final class HeldStreams: @unchecked Sendable {
    private let lock = NSLock()
    private var streams: [TCPStream] = []
    func keep(_ stream: TCPStream) { lock.lock(); streams.append(stream); lock.unlock() }
}
