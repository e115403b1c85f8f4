import Foundation
import Testing
import OpenSSLSupport
@testable import APNsCore
@testable import APNs

/// Replicas of a relay share one provider token without talking to each other: the same key,
/// team and 30-minute window sign the same bytes in every process (a restart is a new process).
@Suite("one provider token for a fleet")
struct FleetTokenTests {
    /// The start of a 30-minute window (a multiple of 1800).
    static let t0: Int64 = 1_800_000_000
    static let key = try! APNsSigningKey.generate()

    /// A process's credentials: the key loaded from the .p8 text by that process.
    func process(_ pem: String) throws -> APNsCredentials {
        APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: try APNsSigningKey(pem: pem)))
    }

    /// True when the JWT's signature verifies with `key`'s public half.
    func verifies(_ token: ProviderToken, _ key: APNsSigningKey) -> Bool {
        let parts = token.jwt.split(separator: ".").map(String.init)
        guard parts.count == 3 else { return false }
        var text = parts[2].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let signature = Data(base64Encoded: text) else { return false }
        return key.key.publicKey.verify(signature: Array(signature), message: Array((parts[0] + "." + parts[1]).utf8))
    }

    @Test("two processes with the same key and clock present byte-identical tokens all window long, a restarted one too; the next window, the next token in each")
    func sameBytes() throws {
        let pem = Self.key.pem
        let first = try process(pem).current(now: Self.t0 + 3).token
        #expect(first.issuedAt == Self.t0 && verifies(first, Self.key))
        #expect(try process(pem).current(now: Self.t0 + 4).token == first)
        // Restarted a second before the window ends: a new process, the same token.
        #expect(try process(pem).current(now: Self.t0 + 30 * 60 - 1).token == first)
        let next = try process(pem).current(now: Self.t0 + 30 * 60).token
        #expect(next != first && next.issuedAt == Self.t0 + 30 * 60 && verifies(next, Self.key))
        #expect(try process(pem).current(now: Self.t0 + 30 * 60 + 5).token == next)
    }

    @Test("a key rotated within the window gets its own token at once; the same key loaded again is no new token")
    func rotation() throws {
        let credentials = try process(Self.key.pem)
        let first = try credentials.current(now: Self.t0 + 100)
        let newKey = try APNsSigningKey.generate()
        try credentials.replace(with: .init(keyID: "KEYID12345", teamID: "TEAM123456", signer: newKey), unixTime: Self.t0 + 200)
        let rotated = try credentials.current(now: Self.t0 + 201)
        #expect(rotated.signed == .keyRotation && rotated.generation == first.generation + 1)
        #expect(rotated.token != first.token && rotated.token.issuedAt == Self.t0 && verifies(rotated.token, newKey))
        // The same key again (SIGHUP reading the file anew): the same bytes, so nothing new to send.
        try credentials.replace(with: .init(keyID: "KEYID12345", teamID: "TEAM123456", signer: try APNsSigningKey(pem: newKey.pem)),
                                unixTime: Self.t0 + 300)
        let again = try credentials.current(now: Self.t0 + 301)
        #expect(again.signed == nil && again.generation == rotated.generation && again.token == rotated.token)
        // Another replica that loaded the new key signs the same token.
        #expect(try process(newKey.pem).current(now: Self.t0 + 400).token == rotated.token)
    }
}
