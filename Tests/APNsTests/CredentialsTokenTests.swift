import Testing
import Synchronization
@testable import APNsCore

/// The one provider token a client shares, with the time injected (Unix seconds).
@Suite("the shared provider token")
struct CredentialsTokenTests {
    private static func credentials() -> APNsCredentials {
        APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: FakeSigner()))
    }
    private let policy = ProviderTokenPolicy()

    @Test("signed at first use, then the same token for everyone, its signing reported once")
    func sharedAndReportedOnce() throws {
        let credentials = Self.credentials()
        #expect(credentials.generation == 0)
        let first = try credentials.current(now: 1000, policy: policy)
        #expect(first.signed == .firstUse && first.token.issuedAt == 1000)
        for now: Int64 in [1001, 1000 + 49 * 60] {
            let again = try credentials.current(now: now, policy: policy)
            #expect(again.signed == nil && again.generation == first.generation && again.token == first.token)
        }
        #expect(credentials.generation == first.generation)
    }

    @Test("the token signed at the client's start is reported by the first connection that sends it")
    func signedAtStartReportedAtFirstUse() throws {
        let credentials = Self.credentials()
        try credentials.signFirstToken(now: 1000)
        try credentials.signFirstToken(now: 1001)
        #expect(credentials.generation == 1)
        let first = try credentials.current(now: 1002, policy: policy)
        #expect(first.signed == .firstUse && first.token.issuedAt == 1000)
        #expect(try credentials.current(now: 1003, policy: policy).signed == nil)
    }

    @Test("renewed once at 50 minutes, for every connection at once")
    func renewedAtFiftyMinutes() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: 1000, policy: policy)
        let renewed = try credentials.current(now: 1000 + 50 * 60, policy: policy)
        #expect(renewed.signed == .age && renewed.generation == first.generation + 1 && renewed.token.issuedAt == 1000 + 50 * 60)
        #expect(try credentials.current(now: 1000 + 50 * 60 + 1, policy: policy).generation == renewed.generation)
    }

    @Test("Apple's ExpiredProviderToken signs again once; a second refusal within 20 minutes does not, after them it does")
    func refusedAsExpired() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: 1000, policy: policy)
        #expect(credentials.refusedAsExpired(generation: first.generation, now: 1100, policy: policy))
        let second = try credentials.current(now: 1100, policy: policy)
        #expect(second.signed == .expired && second.generation == first.generation + 1)
        // Refusals of the old token, answered late on other connections: the new one is there already.
        #expect(credentials.refusedAsExpired(generation: first.generation, now: 1101, policy: policy))
        #expect(credentials.generation == second.generation)
        // The new one refused too (a clock Apple disagrees with): no signing per push.
        #expect(!credentials.refusedAsExpired(generation: second.generation, now: 1100 + 19 * 60, policy: policy))
        #expect(credentials.generation == second.generation)
        #expect(credentials.refusedAsExpired(generation: second.generation, now: 1100 + 20 * 60, policy: policy))
        #expect(credentials.generation == second.generation + 1)
    }

    @Test("a new key signs at once: the next push of every connection carries its token")
    func keyRotationSignsAtOnce() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: 1000, policy: policy)
        try credentials.replace(with: .init(keyID: "NEWKEY6789", teamID: "TEAM123456", signer: FakeSigner()), unixTime: 1010)
        #expect(credentials.generation == first.generation + 1)
        let rotated = try credentials.current(now: 1011, policy: policy)
        #expect(rotated.signed == .keyRotation && rotated.token.issuedAt == 1010 && rotated.token.jwt != first.token.jwt)
    }

    @Test("a key that cannot sign its first token is a bad key; one that fails a renewal keeps the token Apple still accepts")
    func signingFailures() throws {
        let broken = APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: FailingSigner()))
        #expect(throws: APNsError(code: .badKey, message: "")) { try broken.current(now: 1000, policy: policy) }
        let credentials = APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: OnceSigner()))
        let first = try credentials.current(now: 1000, policy: policy)
        let later = try credentials.current(now: 1000 + 50 * 60, policy: policy)
        #expect(later.token == first.token && later.generation == first.generation)
    }
}

/// Signs once, then fails: a key that breaks after start-up.
private final class OnceSigner: ProviderTokenSigner {
    private let used = Atomic<Bool>(false)
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        if used.exchange(true, ordering: .relaxed) { throw FailingSigner.Broken() }
        return Array(0..<64)
    }
}
