import Testing
import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
@testable import Transport
import CertificateSupport

/// Keeps accepted sockets open and silent until the test ends: every TLS handshake with the
/// listener hangs.
final class SilentStreams: @unchecked Sendable {
    private let lock = NSLock()
    private var streams: [TCPStream] = []
    func keep(_ stream: TCPStream) { lock.lock(); streams.append(stream); lock.unlock() }
}

/// Each way a connect fails, produced for real on loopback, reaches the caller with the lower
/// layer's own error as its `cause`: a value to decide on, not words to search.
@Suite("Transport errors carry their cause as a value")
struct TransportCauseTests {
    /// How `HTTP2ClientConnection.connect` to `host:port` ended, from a loop of `group`.
    static func failure(host: String = "127.0.0.1", port: Int, serverName: String? = nil, tls: TLSContext,
                        group: EventLoopGroup, timeout: Duration = .seconds(5)) throws -> TransportError {
        let box = Mutex<Handover<Result<HTTP2ClientConnection, TransportError>>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let loop = group.loops[0]
        loop.execute {
            HTTP2ClientConnection.connect(host: host, port: port, serverName: serverName, tls: tls, on: loop, timeout: timeout,
                                          delegate: Recorder(expected: 0)) { result in
                box.withLock { $0 = Handover(value: result) }
                done.signal()
            }
        }
        #expect(done.wait(timeout: .now() + 15) == .success)
        let result = try #require(box.withLock { $0 }?.value)
        guard case .failure(let error) = result else {
            Issue.record("connected to \(host):\(port)")
            return TransportError(.closedLocally, "connected")
        }
        return error
    }

    @Test("a closed port: connectFailed, caused by the socket's connectionRefused with its errno")
    func refused() throws {
        let fixture = try Fixture { EchoServerDelegate() }
        let port = fixture.server.port
        fixture.server.close()
        defer { fixture.group.shutdown() }
        let error = try Self.failure(port: port, tls: fixture.clientTLS, group: fixture.group)
        #expect(error.code == .connectFailed)
        guard case .socket(let socket)? = error.cause else {
            Issue.record("cause \(String(describing: error.cause))")
            return
        }
        #expect(socket.code == .connectionRefused)
        #expect(socket.errno == ECONNREFUSED)
    }

    @Test("a name under .invalid: connectFailed, caused by the socket's hostNotFound with getaddrinfo's code")
    func hostNotFound() throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let tls = try TLSContext.client(trustSystemStore: false)
        let error = try Self.failure(host: "no-such-host.invalid", port: 443, tls: tls, group: group)
        #expect(error.code == .connectFailed)
        guard case .socket(let socket)? = error.cause else {
            Issue.record("cause \(String(describing: error.cause))")
            return
        }
        #expect(socket.code == .hostNotFound)
        // EAI_NONAME where a resolver answers, EAI_AGAIN where none can be reached.
        #expect([EAI_NONAME, EAI_AGAIN].contains(socket.resolverCode), "\(socket.resolverCode)")
    }

    @Test("a CA the client does not trust: tls, caused by certificateVerificationFailed with OpenSSL's verify result")
    func untrustedCertificate() throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let other = try TestCertificates.make()
        let tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: other.caPEM)
        let error = try Self.failure(port: fixture.server.port, tls: tls, group: fixture.group)
        #expect(error.code == .tls)
        guard case .tls(let cause)? = error.cause else {
            Issue.record("cause \(String(describing: error.cause))")
            return
        }
        #expect(cause.code == .certificateVerificationFailed)
        #expect(cause.verifyResult != 0)
    }

    @Test("a certificate for another name: tls, caused by hostnameMismatch")
    func hostnameMismatch() throws {
        let fixture = try Fixture { EchoServerDelegate() }
        defer { fixture.shutdown() }
        let error = try Self.failure(port: fixture.server.port, serverName: "not-this-host.example", tls: fixture.clientTLS,
                                     group: fixture.group)
        #expect(error.cause == .tls(TLSError(.hostnameMismatch, "")))
    }

    @Test("a TLS server that offers no h2: tls, caused by noALPN")
    func noH2() throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let certificates = try TestCertificates.make()
        let serverTLS = try TLSContext.server(certificateChainPEM: certificates.certificatePEM,
                                              privateKeyPEM: certificates.privateKeyPEM, alpn: ["http/1.1"])
        let server = try HTTP2Server.start(tls: serverTLS, group: group, maxConcurrentStreams: 10) { _ in EchoServerDelegate() }
        defer { server.close() }
        let tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: certificates.caPEM)
        let error = try Self.failure(port: server.port, tls: tls, group: group)
        #expect(error.code == .tls)
        #expect(error.cause == .tls(TLSError(.noALPN, "")))
    }

    @Test("a listener that accepts and never speaks TLS: timedOut, caused by the TLS handshake step")
    func handshakeTimeout() throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let held = SilentStreams()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { held.keep($0) }
        defer { listener.close() }
        let tls = try TLSContext.client(trustSystemStore: false)
        let error = try Self.failure(port: listener.localPort, tls: tls, group: group, timeout: .milliseconds(300))
        #expect(error.code == .timedOut)
        guard case .timedOut(let step, _)? = error.cause else {
            Issue.record("cause \(String(describing: error.cause))")
            return
        }
        #expect(step == .tlsHandshake)
        #expect(error.description.contains("the TLS handshake did not finish within"), "\(error)")
    }

    @Test("equality is on the code: the message and the cause are words and detail")
    func equalityOnCode() {
        let refused = SocketError(code: .connectionRefused, errno: ECONNREFUSED, message: "one")
        #expect(TransportError(.connectFailed, "a", cause: .socket(refused)) == TransportError(.connectFailed, "b"))
        #expect(TransportError(.connectFailed, "a") != TransportError(.timedOut, "a"))
        #expect(TransportError.Cause.socket(refused) == .socket(SocketError(code: .connectionRefused, message: "two")))
        #expect(TransportError.Cause.socket(refused) != .socket(SocketError(code: .timedOut, message: "one")))
        #expect(HTTP2Error(code: .goingAway, message: "x") == HTTP2Error(code: .goingAway, message: "y"))
        #expect(HTTP2Error(code: .goingAway, message: "x") != HTTP2Error(code: .sessionClosed, message: "x"))
    }
}
