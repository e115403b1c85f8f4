import Testing
import Synchronization
@testable import APNsCore

/// The one provider token a client shares, with the time injected (Unix seconds).
@Suite("the shared provider token")
struct CredentialsTokenTests {
    private static func credentials() -> APNsCredentials {
        APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: FakeSigner()))
    }
    /// The start of a 30-minute window (1,800,000,000 is a multiple of 1800).
    private let t0: Int64 = 1_800_000_000

    @Test("signed at first use with the window's start as iat, then the same token for everyone, its signing reported once")
    func sharedAndReportedOnce() throws {
        let credentials = Self.credentials()
        #expect(credentials.generation == 0)
        let first = try credentials.current(now: t0 + 100)
        #expect(first.signed == .firstUse && first.token.issuedAt == t0 && first.renewAt == t0 + 30 * 60)
        for now: Int64 in [t0 + 101, t0 + 30 * 60 - 1] {
            let again = try credentials.current(now: now)
            #expect(again.signed == nil && again.generation == first.generation && again.token == first.token)
        }
        #expect(credentials.generation == first.generation)
    }

    @Test("the token signed at the client's start is reported by the first connection that sends it")
    func signedAtStartReportedAtFirstUse() throws {
        let credentials = Self.credentials()
        try credentials.signFirstToken(now: t0 + 100)
        try credentials.signFirstToken(now: t0 + 101)
        #expect(credentials.generation == 1)
        let first = try credentials.current(now: t0 + 102)
        #expect(first.signed == .firstUse && first.token.issuedAt == t0)
        #expect(try credentials.current(now: t0 + 103).signed == nil)
    }

    @Test("replaced when its window ends, for every connection at once, by the next window's token")
    func replacedAtTheWindow() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: t0 + 100)
        #expect(try credentials.current(now: t0 + 30 * 60 - 1).generation == first.generation)
        let renewed = try credentials.current(now: t0 + 30 * 60)
        #expect(renewed.signed == .age && renewed.generation == first.generation + 1 && renewed.token.issuedAt == t0 + 30 * 60)
        #expect(renewed.renewAt == t0 + 60 * 60)
        #expect(try credentials.current(now: t0 + 30 * 60 + 1).generation == renewed.generation)
    }

    @Test("a token first sent late in its window is kept 20 minutes, so this process never sends two new tokens within 20 minutes")
    func keptTwentyMinutes() throws {
        let credentials = Self.credentials()
        // Signed at the start, first sent 28 minutes into the window (an idle relay's first push).
        try credentials.signFirstToken(now: t0 + 5)
        let first = try credentials.current(now: t0 + 28 * 60)
        #expect(first.token.issuedAt == t0 && first.renewAt == t0 + 48 * 60)
        // The next window has begun: the token, 30 minutes old, stays until 20 minutes after its first use.
        let kept = try credentials.current(now: t0 + 48 * 60 - 1)
        #expect(kept.generation == first.generation && kept.signed == nil)
        let renewed = try credentials.current(now: t0 + 48 * 60)
        #expect(renewed.signed == .age && renewed.token.issuedAt == t0 + 30 * 60, "the current window's token, 18 minutes old")
    }

    @Test("a token signed at the start but never sent is not held: the first use in a later window takes that window's token")
    func unsentTokenNotHeld() throws {
        let credentials = Self.credentials()
        try credentials.signFirstToken(now: t0 + 5)
        let first = try credentials.current(now: t0 + 2 * 60 * 60 + 7)
        #expect(first.token.issuedAt == t0 + 2 * 60 * 60 && first.generation == 2)
    }

    @Test("Apple's ExpiredProviderToken signs again once, with iat now; a second refusal within 20 minutes does not, after them it does")
    func refusedAsExpired() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: t0 + 100)
        #expect(credentials.refusedAsExpired(generation: first.generation, now: t0 + 200))
        let second = try credentials.current(now: t0 + 200)
        #expect(second.signed == .expired && second.generation == first.generation + 1 && second.token.issuedAt == t0 + 200)
        // Refusals of the old token, answered late on other connections: the new one is there already.
        #expect(credentials.refusedAsExpired(generation: first.generation, now: t0 + 201))
        #expect(credentials.generation == second.generation)
        // The new one refused too (a clock Apple disagrees with): no signing per push.
        #expect(!credentials.refusedAsExpired(generation: second.generation, now: t0 + 200 + 19 * 60))
        #expect(credentials.generation == second.generation)
        #expect(credentials.refusedAsExpired(generation: second.generation, now: t0 + 200 + 20 * 60))
        #expect(credentials.generation == second.generation + 1)
    }

    @Test("a new key signs at once, within the window: the next push of every connection carries its token")
    func keyRotationSignsAtOnce() throws {
        let credentials = Self.credentials()
        let first = try credentials.current(now: t0 + 100)
        try credentials.replace(with: .init(keyID: "NEWKEY6789", teamID: "TEAM123456", signer: FakeSigner()), unixTime: t0 + 110)
        #expect(credentials.generation == first.generation + 1)
        let rotated = try credentials.current(now: t0 + 111)
        #expect(rotated.signed == .keyRotation && rotated.token.issuedAt == t0 && rotated.token.jwt != first.token.jwt)
    }

    @Test("a key that cannot sign its first token is a bad key; one that fails a renewal keeps the token Apple still accepts")
    func signingFailures() throws {
        let broken = APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: FailingSigner()))
        #expect(throws: APNsError(code: .badKey, message: "")) { try broken.current(now: t0) }
        let credentials = APNsCredentials(.init(keyID: "KEYID12345", teamID: "TEAM123456", signer: OnceSigner()))
        let first = try credentials.current(now: t0 + 100)
        let later = try credentials.current(now: t0 + 30 * 60)
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
