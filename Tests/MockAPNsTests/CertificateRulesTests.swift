import Testing
import Foundation
import MockAPNs
import CertificateSupport

/// A connection whose TLS handshake verified a client certificate with these facts.
private func certificateConnection(uid: String? = "com.example.certapp", commonName: String? = nil,
                                   team: String? = "CERTTEAM01", notBefore: Int64? = Fixture.now - 86_400,
                                   notAfter: Int64? = Fixture.now + 86_400) -> MockConnectionState {
    var connection = MockConnectionState(connectionID: 1)
    connection.clientCertificate = MockClientCertificate(
        uid: uid, commonName: commonName ?? uid.map { "Apple Push Services: \($0)" }, organizationalUnit: team,
        notBefore: notBefore, notAfter: notAfter)
    return connection
}

/// A certificate-authenticated request: no `authorization`, the topic as given (nil: none).
private func certificateRequest(topic: String?, pushType: String = "alert") -> MockRequestHead {
    let set: [String: String?] = ["authorization": nil, "apns-topic": topic, "apns-push-type": pushType]
    return Fixture.request(set: set)
}

private func decide(_ request: MockRequestHead, on connection: MockConnectionState = certificateConnection(),
                    now: Int64 = Fixture.now) -> (Int?, String?) {
    decide(Fixture.rules(), request, on: connection, now: now)
}

private func decide(_ rules: MockAPNsRules, _ request: MockRequestHead,
                    on connection: MockConnectionState = certificateConnection(), now: Int64 = Fixture.now) -> (Int?, String?) {
    var connection = connection
    let response = rules.decide(request, connection: &connection, now: now).response
    return (response?.status, response?.reason)
}

@Suite("Certificate-based authentication in the emulator's rules")
struct CertificateRulesTests {
    @Test("without apns-topic the push is for the certificate's topic (its UID), and the record says which certificate")
    func topicOmitted() throws {
        let rules = Fixture.rules()
        #expect(decide(rules, certificateRequest(topic: nil)) == (200, nil))
        let record = try #require(rules.records.last)
        #expect(record.auth == .certificate(topic: "com.example.certapp", teamID: "CERTTEAM01"))
        #expect(record.topic == "com.example.certapp")
        #expect(record.header("apns-topic") == nil)
    }

    @Test("the certificate's own topic is delivered, though the token's configured topics do not list it")
    func ownTopic() {
        #expect(decide(certificateRequest(topic: "com.example.certapp")) == (200, nil))
    }

    @Test("a topic the certificate does not cover is 400 TopicDisallowed, the configured token topic included",
          arguments: [Fixture.topic, "com.example.other", "com.example.certapp2", "com.example"])
    func otherTopic(topic: String) {
        #expect(decide(certificateRequest(topic: topic)) == (400, "TopicDisallowed"))
    }

    @Test("the push type's suffix is still checked against the certificate's topic")
    func suffix() {
        #expect(decide(certificateRequest(topic: "com.example.certapp", pushType: "voip")) == (400, "BadTopic"))
        #expect(decide(certificateRequest(topic: "com.example.certapp.voip", pushType: "alert")) == (400, "BadTopic"))
    }

    @Test("no certificate and no token is 403 MissingProviderToken, and nothing authenticated it")
    func neither() throws {
        let rules = Fixture.rules()
        #expect(decide(rules, certificateRequest(topic: Fixture.topic), on: MockConnectionState(connectionID: 1)) == (403, "MissingProviderToken"))
        #expect(try #require(rules.records.last).auth == nil)
    }

    @Test("a certificate without a UID, or with dates the emulator could not read, is 403 BadCertificate")
    func unreadable() {
        #expect(decide(certificateRequest(topic: nil), on: certificateConnection(uid: nil, commonName: "Apple Push Services")) == (403, "BadCertificate"))
        #expect(decide(certificateRequest(topic: nil), on: certificateConnection(uid: "")) == (403, "BadCertificate"))
        #expect(decide(certificateRequest(topic: nil), on: certificateConnection(notAfter: nil)) == (403, "BadCertificate"))
    }

    @Test("a certificate not valid at the emulator's clock is 403 BadCertificate, valid to its last second")
    func clock() {
        let connection = certificateConnection(notBefore: Fixture.now - 10, notAfter: Fixture.now + 10)
        #expect(decide(certificateRequest(topic: nil), on: connection, now: Fixture.now + 10) == (200, nil))
        #expect(decide(certificateRequest(topic: nil), on: connection, now: Fixture.now + 11) == (403, "BadCertificate"))
        #expect(decide(certificateRequest(topic: nil), on: connection, now: Fixture.now - 11) == (403, "BadCertificate"))
    }

    @Test("a development certificate on production, or a production one on the sandbox, is 403 BadCertificateEnvironment")
    func environment() {
        let development = certificateConnection(commonName: "Apple Development IOS Push Services: com.example.certapp")
        let production = certificateConnection(commonName: "Apple Production IOS Push Services: com.example.certapp")
        let universal = certificateConnection()
        let request = certificateRequest(topic: nil)
        #expect(decide(Fixture.rules(sandbox: false), request, on: development) == (403, "BadCertificateEnvironment"))
        #expect(decide(Fixture.rules(sandbox: true), request, on: development) == (200, nil))
        #expect(decide(Fixture.rules(sandbox: true), request, on: production) == (403, "BadCertificateEnvironment"))
        #expect(decide(Fixture.rules(sandbox: false), request, on: production) == (200, nil))
        #expect(decide(Fixture.rules(sandbox: true), request, on: universal) == (200, nil))
        #expect(decide(Fixture.rules(sandbox: false), request, on: universal) == (200, nil))
    }

    @Test("a request that carries authorization is judged by its token even on a certificate connection")
    func tokenWins() throws {
        let rules = Fixture.rules()
        #expect(decide(rules, Fixture.request(), on: certificateConnection()) == (200, nil))
        #expect(try #require(rules.records.last).auth == .token(teamID: Fixture.team, keyID: Fixture.kid))
        #expect(decide(rules, Fixture.request(jwt: "not.a.jwt"), on: certificateConnection()) == (403, "InvalidProviderToken"))
        // The token's topics, not the certificate's, apply to it.
        #expect(decide(rules, Fixture.request(set: ["apns-topic": "com.example.certapp"]), on: certificateConnection()) == (400, "TopicDisallowed"))
    }

    @Test("a token push records its team and key, also when reused on its connection")
    func tokenRecorded() throws {
        let rules = Fixture.rules()
        var connection = MockConnectionState(connectionID: 1)
        for _ in 0..<2 { _ = rules.decide(Fixture.request(), connection: &connection, now: Fixture.now) }
        #expect(rules.records.map(\.auth) == [.token(teamID: Fixture.team, keyID: Fixture.kid), .token(teamID: Fixture.team, keyID: Fixture.kid)])
        #expect(rules.records.map(\.topic) == [Fixture.topic, Fixture.topic])
    }

    @Test("a certificate connection is authenticated, so its success raises the stream limit")
    func streamLimit() {
        let rules = Fixture.rules()
        var connection = certificateConnection()
        let decision = rules.decide(certificateRequest(topic: nil), connection: &connection, now: Fixture.now)
        #expect(connection.authenticated)
        #expect(decision.newMaxConcurrentStreams == 1000)
    }
}

@Suite("The emulator's own reading of a client certificate's DER")
struct ClientCertificateReaderTests {
    static let certificates = Result { try TestCertificates.make() }

    private func der(_ pem: String) -> [UInt8] {
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(Data(base64Encoded: body) ?? Data())
    }

    @Test("UID, CN, OU and both dates of an issued certificate are read exactly")
    func issued() throws {
        let certificate = try Self.certificates.get().issuePushClientCertificate(
            bundleID: "com.example.certapp", teamID: "CERTTEAM01", organization: "Example Developer",
            notBefore: 1_700_000_000, notAfter: 1_700_000_000 + 10 * 86_400)
        let read = MockClientCertificate(der: der(certificate.certificatePEM))
        #expect(read == MockClientCertificate(uid: "com.example.certapp", commonName: "Apple Push Services: com.example.certapp",
                                             organizationalUnit: "CERTTEAM01", notBefore: 1_700_000_000,
                                             notAfter: 1_700_000_000 + 10 * 86_400))
        #expect(read.environment == .both)
    }

    @Test("dates from 2050 on (GeneralizedTime) and each environment's common name are read")
    func generalizedTimeAndEnvironment() throws {
        let development = try Self.certificates.get().issuePushClientCertificate(
            bundleID: "com.example.certapp", teamID: "CERTTEAM01", environment: .development, notAfter: 2_524_608_005)
        let read = MockClientCertificate(der: der(development.certificatePEM))
        #expect(read.notAfter == 2_524_608_005)  // 2050-01-01T00:00:05Z
        #expect(read.environment == .sandboxOnly)
        let production = try Self.certificates.get().issuePushClientCertificate(
            bundleID: "com.example.certapp", teamID: "CERTTEAM01", environment: .production)
        #expect(MockClientCertificate(der: der(production.certificatePEM)).environment == .productionOnly)
    }

    @Test("a certificate without a UID, and bytes that are no certificate, leave the facts unread")
    func noUID() throws {
        let server = MockClientCertificate(der: der(try Self.certificates.get().certificatePEM))
        #expect(server.uid == nil)
        #expect(server.commonName == "localhost")
        #expect(server.notAfter != nil)
        let truncated = Array(der(try Self.certificates.get().certificatePEM).prefix(40))
        #expect(MockClientCertificate(der: truncated) == MockClientCertificate(uid: nil, commonName: nil, organizationalUnit: nil, notBefore: nil, notAfter: nil))
        #expect(MockClientCertificate(der: []).uid == nil)
    }
}
