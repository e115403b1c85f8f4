import Foundation
import Testing
import MockAPNs
import OpenSSLSupport
import APNs
@testable import Relay

@Suite("reload (SIGHUP)", .serialized)
struct ReloadTests {
    @Test("a reload signs the new key's token at once: the next push on a kept connection carries it, counted and logged as key_rotation")
    func reloadAppliesTheKey() async throws {
        try await RelayHarness.with { h in
            #expect(try await h.push(token: token("", fill: "2")).status == 201)
            let connections = h.apple.connectionCount
            let newKey = try ES256PrivateKey.generate()
            h.apple.rules.keys["RELOADED01"] = .es256(newKey.publicKey)
            var new = h.relay.configuration
            new.authKey = newKey.pemPKCS8
            new.keyID = "RELOADED01"
            new.maxBodyBytes = 8192
            let needRestart = try h.relay.reload(new).needRestart
            #expect(needRestart == ["max_body_bytes"])
            // The old key revoked right after the reload: nothing sends its token any more.
            h.apple.rules.keys[RelayHarness.keyID] = nil
            let device = token("", fill: "3")
            let response = try await h.push(token: device)
            #expect(response.status == 201, "\(response.status) \(response.reason ?? "")")
            #expect(h.apple.connectionCount == connections, "a connection was replaced for the new key")
            #expect(h.apple.rules.newTokensAccepted == [RelayHarness.keyID: 1, "RELOADED01": 1])
            func signed(_ reason: String) -> Int {
                h.relay.metrics.registry.counter("relay_apns_provider_tokens_signed_total", help: "", labels: ["reason": reason]).value
            }
            #expect(signed("first_use") == 1 && signed("key_rotation") == 1 && signed("age") == 0 && signed("expired") == 0)
            #expect(h.logs.records.contains { $0.message == "provider token signed" && $0.metadata["apns.token_reason"] == .string("key_rotation") })
        }
    }

    @Test("a reload with a key that is not a key throws naming its variable and keeps the old key")
    func invalidKeyKeepsTheOld() async throws {
        try await RelayHarness.with { (h: RelayHarness) async throws(any Error) in
            var new = h.relay.configuration
            new.authKey = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
            new.authKeyVariable = "APNS_AUTH_KEY_FILE"
            new.keyID = "RELOADED02"
            do throws(ConfigurationError) {
                _ = try h.relay.reload(new)
                Issue.record("a key OpenSSL cannot read was accepted")
            } catch {
                #expect(error.variable == "APNS_AUTH_KEY_FILE")
            }
            #expect(h.relay.client.configuration.keyID == RelayHarness.keyID)
            h.apple.dropAllConnections()
            #expect(try await h.push(token: token("", fill: "4")).status == 201)
        }
    }

    @Test("a reload from a key to a push certificate is refused (it needs a restart) and the key stays")
    func switchingNeedsARestart() async throws {
        try await RelayHarness.with { (h: RelayHarness) async throws(any Error) in
            let files = try PushCertificateFiles(uid: RelayHarness.topic)
            defer { files.remove() }
            var new = h.relay.configuration
            new.credentials = .certificate(try PushCertificate.load(.p12File(path: files.p12, password: "secret"), variable: "APNS_P12_FILE",
                                                                    now: Int64(Date().timeIntervalSince1970)))
            do throws(ConfigurationError) {
                _ = try h.relay.reload(new)
                Issue.record("a switch from a key to a certificate was applied in place")
            } catch {
                #expect(error.variable == "APNS_P12_FILE" && error.message.contains("needs a restart"))
            }
            #expect(h.relay.client.configuration.keyID == RelayHarness.keyID)
            #expect(try await h.push(token: token("", fill: "5")).status == 201)
        }
    }

    @Test("a key rotated while APPS_FILE still names the old one: the app keeps the old key on a client of its own")
    func appKeepsItsKey() async throws {
        try await RelayHarness.with { (h: RelayHarness) async throws(any Error) in
            let newKey = try ES256PrivateKey.generate()
            h.apple.rules.keys["RELOADED03"] = .es256(newKey.publicKey)
            let old = TokenKey(authKey: RelayHarness.key.pemPKCS8, variable: "key_file", keyID: RelayHarness.keyID, teamID: RelayHarness.teamID)
            var new = h.relay.configuration
            new.authKey = newKey.pemPKCS8
            new.keyID = "RELOADED03"
            new.appsFile = "apps.json"
            new.apps = [RelayApp(name: "beta", topic: RelayHarness.topic, credentials: .token(old))]
            _ = try h.relay.reload(new)
            guard case .app(let beta) = h.relay.responder.apps.lookup("beta") else { Issue.record("no app beta"); return }
            let sender = try #require(beta.sender as? APNsClient)
            #expect(sender !== h.relay.client)
            #expect(sender.configuration.keyID == RelayHarness.keyID && h.relay.client.configuration.keyID == "RELOADED03")
        }
    }
}
