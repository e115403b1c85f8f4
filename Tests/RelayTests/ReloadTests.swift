import Foundation
import Testing
import MockAPNs
import OpenSSLSupport
@testable import Relay

@Suite("reload (SIGHUP)", .serialized)
struct ReloadTests {
    @Test("a reload applies the new key to new connections and lists the settings that need a restart")
    func reloadAppliesTheKey() async throws {
        try await RelayHarness.with { h in
            let newKey = try ES256PrivateKey.generate()
            h.apple.rules.keys["RELOADED01"] = .es256(newKey.publicKey)
            var new = h.relay.configuration
            new.authKey = newKey.pemPKCS8
            new.keyID = "RELOADED01"
            new.maxBodyBytes = 8192
            let needRestart = try h.relay.reload(new)
            #expect(needRestart == ["max_body_bytes"])
            h.apple.rules.keys[RelayHarness.keyID] = nil
            h.apple.dropAllConnections()
            let response = try await h.push(token: token("", fill: "3"))
            #expect(response.status == 201)
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
}
