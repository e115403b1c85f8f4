import Testing
import Foundation
import OpenSSLSupport
import HTTP2
import Transport
import MockAPNs
import CertificateSupport
import TestWaits

// Certificate-based authentication against the emulator over real TLS + HTTP/2 on loopback.
// The harness's emulator clock is `Wire.now` (mid-2025) while the TLS layer checks certificates
// against the machine's clock, so the certificates here start before `Wire.now`.

private enum CertWire {
    static let bundleID = "com.example.certapp"
    static let team = "CERTTEAM01"
    static let realNow = Int64(Date().timeIntervalSince1970)

    static func certificate(_ harness: Harness, notAfter: Int64? = nil,
                            environment: PushCertificateEnvironment = .universal) throws -> PushClientCertificate {
        try harness.server.certificates.issuePushClientCertificate(
            bundleID: bundleID, teamID: team, environment: environment, notBefore: Wire.now - 86_400, notAfter: notAfter)
    }

    static func tls(_ harness: Harness, presenting certificate: PushClientCertificate) throws -> TLSContext {
        try TLSContext.client(trustSystemStore: false, extraCAPEM: harness.server.caPEM, clientIdentity: .pem(certificate: certificate.certificatePEM, key: certificate.privateKeyPEM))
    }

    /// A push's headers with no `authorization`: the connection's certificate authenticates it.
    static func headers(topic: String?) -> [HTTP2Header] {
        var headers = [HTTP2Header(name: "apns-push-type", value: "alert")]
        if let topic { headers.append(HTTP2Header(name: "apns-topic", value: topic)) }
        return headers
    }
}

private func answer(_ client: Client, _ id: Int32) async throws -> (Int, String?) {
    let response = try #require(try await client.result(id)).get()
    return (response.status, reason(response))
}

@Suite("Certificate-based authentication over TLS + HTTP/2", .serialized)
struct CertificateWireTests {
    @Test("a valid certificate and no authorization: delivered with the topic left out (the UID) and with topic = UID")
    func delivered() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let tls = try CertWire.tls(harness, presenting: try CertWire.certificate(harness))
        let connection = try await harness.connect(client, tls: tls).get()
        let first = try await push(connection, headers: CertWire.headers(topic: nil))
        #expect(try await answer(client, first) == (200, nil))
        let second = try await push(connection, headers: CertWire.headers(topic: CertWire.bundleID))
        #expect(try await answer(client, second) == (200, nil))

        let records = harness.server.records
        #expect(records.map(\.status) == [200, 200])
        #expect(records.map(\.topic) == [CertWire.bundleID, CertWire.bundleID])
        #expect(records.allSatisfy { $0.auth == .certificate(topic: CertWire.bundleID, teamID: CertWire.team) })
        #expect(records.allSatisfy { $0.header("authorization") == nil })
    }

    @Test("a topic the certificate does not cover is 400 TopicDisallowed")
    func wrongTopic() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client, tls: CertWire.tls(harness, presenting: CertWire.certificate(harness))).get()
        let id = try await push(connection, headers: CertWire.headers(topic: Wire.topic))
        #expect(try await answer(client, id) == (400, "TopicDisallowed"))
    }

    @Test("no certificate and no token is 403 MissingProviderToken")
    func neither() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let connection = try await harness.connect(client).get()
        let id = try await push(connection, headers: CertWire.headers(topic: Wire.topic))
        #expect(try await answer(client, id) == (403, "MissingProviderToken"))
        #expect(harness.server.records.first?.auth == nil)
    }

    @Test("a certificate that expires in 10 days still delivers")
    func expiresSoon() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let client = Client()
        let certificate = try CertWire.certificate(harness, notAfter: CertWire.realNow + 10 * 86_400)
        let connection = try await harness.connect(client, tls: CertWire.tls(harness, presenting: certificate)).get()
        let id = try await push(connection, headers: CertWire.headers(topic: nil))
        #expect(try await answer(client, id) == (200, nil))
    }

    @Test("an expired certificate (yesterday) gets no connection: the handshake ends with certificate_expired")
    func expired() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let certificate = try CertWire.certificate(harness, notAfter: CertWire.realNow - 86_400)
        let result = try await harness.connect(Client(), tls: CertWire.tls(harness, presenting: certificate))
        guard case .failure(let error) = result else {
            Issue.record("an expired certificate was let in")
            return
        }
        // The alert itself is asserted over memory BIOs (OpenSSLSupportTests): on a socket the
        // client may first hit the closed connection (EPIPE) writing its HTTP/2 preface.
        #expect("\(error)".contains("certificate expired") || error.code == .closed, "\(error)")
        #expect(harness.server.connectionCount == 1, "the connection reached the emulator's TLS")
        #expect(harness.server.streamCount == 0)
    }

    @Test("a certificate another CA signed gets no connection: the handshake ends with unknown_ca")
    func otherCA() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let stranger = try TestCertificates.make().issuePushClientCertificate(
            bundleID: CertWire.bundleID, teamID: CertWire.team, notBefore: Wire.now - 86_400)
        let result = try await harness.connect(Client(), tls: CertWire.tls(harness, presenting: stranger))
        guard case .failure(let error) = result else {
            Issue.record("another CA's certificate was let in")
            return
        }
        // The alert itself is asserted over memory BIOs (OpenSSLSupportTests): on a socket the
        // client may first hit the closed connection (EPIPE) writing its HTTP/2 preface.
        #expect("\(error)".contains("unknown ca") || error.code == .closed, "\(error)")
        #expect(harness.server.connectionCount == 1, "the connection reached the emulator's TLS")
        #expect(harness.server.streamCount == 0)
    }

    @Test("a development certificate on the production emulator is 403 BadCertificateEnvironment")
    func wrongEnvironment() async throws {
        let harness = try Harness(sandbox: false)
        defer { harness.shutdown() }
        let client = Client()
        let certificate = try CertWire.certificate(harness, environment: .development)
        let connection = try await harness.connect(client, tls: CertWire.tls(harness, presenting: certificate)).get()
        let id = try await push(connection, headers: CertWire.headers(topic: nil))
        #expect(try await answer(client, id) == (403, "BadCertificateEnvironment"))
    }

    @Test("each push reaches Apple with its own topic and its own credential: a team's token, another team's certificate")
    func eachItsOwn() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let tokenClient = Client(), certificateClient = Client()
        let tokenConnection = try await harness.connect(tokenClient).get()
        let certificateConnection = try await harness.connect(certificateClient,
                                                              tls: CertWire.tls(harness, presenting: CertWire.certificate(harness))).get()
        let byToken = try await push(tokenConnection, headers: Wire.headers())
        let byCertificate = try await push(certificateConnection, headers: CertWire.headers(topic: nil))
        #expect(try await answer(tokenClient, byToken) == (200, nil))
        #expect(try await answer(certificateClient, byCertificate) == (200, nil))

        let records = harness.server.records.sorted { $0.connectionID < $1.connectionID }
        #expect(records.map(\.topic) == [Wire.topic, CertWire.bundleID])
        #expect(records.map(\.auth) == [.token(teamID: Wire.team, keyID: Wire.kid), .certificate(topic: CertWire.bundleID, teamID: CertWire.team)])
    }

    @Test("a .p12 made by openssl pkcs12 -export holds the certificate, and what it holds delivers")
    func pkcs12() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let certificate = try CertWire.certificate(harness)
        let directory = try OpenSSLTool.scratchDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (fromP12, keyFromP12) = try await onOwnThread {
            let p12 = try OpenSSLTool.exportPKCS12(certificatePEM: certificate.certificatePEM, privateKeyPEM: certificate.privateKeyPEM,
                                                   password: "s3cret", in: directory)
            #expect(throws: OpenSSLTool.Failure.self) { try OpenSSLTool.readPKCS12(p12, password: "wrong") }
            return try OpenSSLTool.readPKCS12(p12, password: "s3cret")
        }
        #expect(fromP12.contains(certificate.certificatePEM.trimmingCharacters(in: .whitespacesAndNewlines)))

        let client = Client()
        let tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: harness.server.caPEM, clientIdentity: .pem(certificate: fromP12, key: keyFromP12))
        let connection = try await harness.connect(client, tls: tls).get()
        let id = try await push(connection, headers: CertWire.headers(topic: nil))
        #expect(try await answer(client, id) == (200, nil))
        #expect(harness.server.records.first?.auth == .certificate(topic: CertWire.bundleID, teamID: CertWire.team))
    }
}
