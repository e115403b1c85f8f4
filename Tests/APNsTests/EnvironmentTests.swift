import Foundation
import Testing
import CertificateSupport
@testable import APNsCore
@testable import APNs

/// `APNsClientConfiguration(environment:)`: the names the library and `apns-relay send` read.
@Suite("Library environment")
struct EnvironmentTests {
    static let pem = Fixture.key.pemPKCS8
    static let minimal = [
        "APNS_KEY": pem.replacingOccurrences(of: "\n", with: "\\n"), "APNS_KEY_ID": Fixture.kid,
        "APNS_TEAM_ID": Fixture.team, "APNS_TOPIC": Fixture.topic,
    ]

    func failure(_ overrides: [String: String?]) -> APNsError? {
        var variables = Self.minimal
        for (name, value) in overrides { variables[name] = value }
        do { _ = try APNsClientConfiguration(environment: variables); return nil } catch { return error }
    }

    @Test("APNS_KEY with literal \\n, the ids and the topic make a configuration that signs tokens")
    func minimal() throws {
        let configuration = try APNsClientConfiguration(environment: Self.minimal)
        #expect(configuration.keyID == Fixture.kid && configuration.teamID == Fixture.team && configuration.topic == Fixture.topic)
        #expect(configuration.production == .production && configuration.caSetting == nil)
        let identity = try #require(configuration.credentials).current
        let token = try ProviderToken(keyID: identity.keyID, teamID: identity.teamID, issuedAt: 1, signer: identity.signer)
        #expect(token.jwt.split(separator: ".").count == 3)
    }

    @Test("APNS_KEY_FILE names the key's file when APNS_KEY is not set")
    func keyFile() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("key-\(UUID().uuidString).p8").path
        try Self.pem.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var variables = Self.minimal
        variables["APNS_KEY"] = nil
        variables["APNS_KEY_FILE"] = path
        #expect(try APNsClientConfiguration(environment: variables).keyID == Fixture.kid)
    }

    @Test("APNS_HOST takes host, host:port, https://host[:port] and a trailing slash", arguments: [
        ("127.0.0.1", APNsEndpoint(host: "127.0.0.1")), ("localhost:2197", APNsEndpoint(host: "localhost", port: 2197)),
        ("https://localhost:2197", APNsEndpoint(host: "localhost", port: 2197)),
        ("https://api.push.apple.com/", APNsEndpoint(host: "api.push.apple.com")), ("[::1]:443", APNsEndpoint(host: "::1")),
    ])
    func hosts(text: String, endpoint: APNsEndpoint) throws {
        var variables = Self.minimal
        variables["APNS_HOST"] = text
        #expect(try APNsClientConfiguration(environment: variables).production == endpoint)
    }

    @Test("APNS_CA_FILE and APNS_CA add a CA, and the configuration remembers which setting did")
    func caSettings() throws {
        let certificates = try TestCertificates.make()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ca-\(UUID().uuidString).pem").path
        try certificates.caPEM.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        var variables = Self.minimal
        variables["APNS_CA_FILE"] = path
        #expect(try APNsClientConfiguration(environment: variables).caSetting == "APNS_CA_FILE")
        variables["APNS_CA_FILE"] = nil
        variables["APNS_CA"] = certificates.caPEM.replacingOccurrences(of: "\n", with: "\\n")
        #expect(try APNsClientConfiguration(environment: variables).caSetting == "APNS_CA")
    }

    @Test("each wrong variable is named in one line", arguments: [
        (["APNS_KEY": nil] as [String: String?], "APNS_KEY or APNS_KEY_FILE must be set"),
        (["APNS_KEY": "not a key"], "APNS_KEY is not a usable .p8 key"),
        (["APNS_KEY": nil, "APNS_KEY_FILE": "/no/such/key.p8"], "APNS_KEY_FILE (/no/such/key.p8)"),
        (["APNS_KEY_ID": nil], "APNS_KEY_ID is not set"),
        (["APNS_TEAM_ID": nil], "APNS_TEAM_ID is not set"),
        (["APNS_HOST": "ftp://host"], "APNS_HOST=ftp://host is not"),
        (["APNS_HOST": "host:99999"], "APNS_HOST=host:99999 is not"),
        (["APNS_CA_FILE": "/no/such/ca.pem"], "APNS_CA_FILE (/no/such/ca.pem) is not a usable CA"),
        (["APNS_TOPIC": "com example"], "APNS_TOPIC=com example is not a bundle id"),
        (["APNS_HOST": "garbage host"], "APNS_HOST=garbage host is not"),
        (["APNS_HOST": "user@127.0.0.1:43599"], "APNS_HOST=user@127.0.0.1:43599 is not"),
        (["APNS_HOST": "127.0.0.1:+43599"], "APNS_HOST=127.0.0.1:+43599 is not"),
        (["APNS_HOST": "::1"], "APNS_HOST=::1 is not"),
    ])
    func wrongVariable(overrides: [String: String?], says: String) throws {
        let error = try #require(failure(overrides))
        #expect(error.message.hasPrefix(says), "\(error.message)")
        #expect(!error.message.contains("\n"))
    }

    @Test("a refused bare IPv6 host points at the bracket form")
    func ipv6Hint() throws {
        let error = try #require(failure(["APNS_HOST": "::1"]))
        #expect(error.message.hasSuffix("an IPv6 address goes in brackets, e.g. [::1]:443"), "\(error.message)")
    }

    @Test("a bad key is named once, without repeating what is wrong")
    func keyMessageReadsOnce() throws {
        let error = try #require(failure(["APNS_KEY": "not a key"]))
        #expect(error.message.components(separatedBy: "not a usable .p8 key").count == 2, "\(error.message)")
    }
}
