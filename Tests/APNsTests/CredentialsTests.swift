import Foundation
import Testing
import OpenSSLSupport
import MockAPNs
@testable import APNsCore
@testable import APNs

/// The `kid` of the provider token a request carried, read from the JWT header.
func keyID(of record: MockRecord) -> String? {
    guard let authorization = record.header("authorization"), authorization.hasPrefix("bearer ") else { return nil }
    guard var header = authorization.dropFirst("bearer ".count).split(separator: ".").first.map(String.init) else { return nil }
    header = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while header.count % 4 != 0 { header += "=" }
    guard let data = Data(base64Encoded: header),
          let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
    return json["kid"] as? String
}

@Suite("reloadable credentials", .serialized)
struct CredentialsTests {
    static let newKeyID = "NEWKEY6789"
    static let newKey = try! ES256PrivateKey.generate()

    @Test("a replaced key signs the next renewal on a kept connection, and the old key is no longer needed")
    func renewalUsesTheNewKey() async throws {
        let harness = try ClientHarness(poolSize: 1)
        let first = Fixture.notification("", 1)
        #expect(try await harness.client.send(first, environment: .production).get().ok)

        harness.server.rules.keys[Self.newKeyID] = .es256(Self.newKey.publicKey)
        try harness.client.configuration.credentials!.replace(
            with: .init(keyID: Self.newKeyID, teamID: Fixture.team, signer: Self.newKey))
        harness.server.rules.keys[Fixture.kid] = nil
        // 51 minutes later on both clocks: the connection's token is due for renewal.
        harness.clocks.client.store(51 * 60, ordering: .relaxed)
        harness.clocks.server.store(51 * 60, ordering: .relaxed)
        let second = Fixture.notification("", 2)
        let response = try await harness.client.send(second, environment: .production).get()
        #expect(response.ok)
        let before = try #require(harness.records(for: first.token).first)
        let after = try #require(harness.records(for: second.token).last)
        #expect(keyID(of: before) == Fixture.kid)
        #expect(keyID(of: after) == Self.newKeyID)
        #expect(before.connectionID == after.connectionID)
        await harness.close()
    }

    @Test("a replaced key signs the token of a new connection")
    func newConnectionUsesTheNewKey() async throws {
        let harness = try ClientHarness(poolSize: 1)
        #expect(try await harness.waitUntilReady())
        harness.server.rules.keys[Self.newKeyID] = .es256(Self.newKey.publicKey)
        try harness.client.configuration.credentials!.replace(
            with: .init(keyID: Self.newKeyID, teamID: "NEWTEAM123", signer: Self.newKey))
        harness.server.dropAllConnections()
        let notification = Fixture.notification("", 3)
        let response = try await harness.client.send(notification, environment: .production).get()
        // The emulator's team is still Fixture.team: the new team id reached the token and was refused.
        #expect(response.status == 403)
        let record = try #require(harness.records(for: notification.token).last)
        #expect(keyID(of: record) == Self.newKeyID)
        await harness.close()
    }

    @Test("a key that cannot sign is refused and the old identity stays")
    func unusableKeyIsRefused() throws {
        let credentials = APNsCredentials(.init(keyID: Fixture.kid, teamID: Fixture.team, signer: Fixture.key))
        #expect(throws: APNsError.self) {
            try credentials.replace(with: .init(keyID: Self.newKeyID, teamID: Fixture.team, signer: FailingSigner()))
        }
        #expect(credentials.current.keyID == Fixture.kid)
    }
}
