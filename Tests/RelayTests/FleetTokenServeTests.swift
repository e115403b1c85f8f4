import Foundation
import Testing
import MockAPNs
import OpenSSLSupport
import BuiltProducts
import TestWaits
#if canImport(Glibc)
import Glibc
#endif

/// Replicas share one provider token without talking to each other, tested on the shipped binary:
/// `apns-relay token` run twice, and two `apns-relay serve` processes with one key against an
/// emulator that counts new tokens per key as Apple does (429 TooManyProviderTokenUpdates within
/// 20 minutes of the last new one).
@Suite("one provider token for a fleet of relays", .serialized, .enabled(if: BuiltProducts.runsRelay))
struct FleetTokenServeTests {
    /// The relay's token window (`ProviderTokenPolicy.windowSeconds`).
    static let window: Int64 = 30 * 60

    static func window(of seconds: Int64) -> Int64 { seconds / window }
    static var nowSeconds: Int64 { Int64(Date().timeIntervalSince1970) }

    /// The JWT's `iat` and whether its signature verifies with the harness's key.
    static func inspect(_ jwt: String) -> (issuedAt: Int64?, verifies: Bool) {
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3 else { return (nil, false) }
        let claims = try? JSONSerialization.jsonObject(with: Data(base64URLDecode(parts[1]))) as? [String: Any]
        let issuedAt = (claims?["iat"] as? NSNumber)?.int64Value
        let verifies = RelayHarness.key.publicKey.verify(signature: base64URLDecode(parts[2]), message: Array((parts[0] + "." + parts[1]).utf8))
        return (issuedAt, verifies)
    }

    @Test("apns-relay token: two runs print the same bytes (iat the window's start, a deterministic signature), which verify")
    func tokenCommand() async throws {
        let environment = ["APNS_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID, "APNS_TEAM_ID": RelayHarness.teamID]
        var runs: [(jwt: String, issuedAt: Int64)] = []
        // A window boundary may fall between two runs (the second then prints the next window's
        // token); it cannot fall twice within seconds, so a third run matches the second.
        while runs.count < 3 {
            let before = Self.nowSeconds
            let result = try await run(["token"], environment: environment)
            let after = Self.nowSeconds
            try #require(result.status == 0, "\(result)")
            let jwt = result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let (issuedAt, verifies) = Self.inspect(jwt)
            let iat = try #require(issuedAt, "no integer iat in \(jwt)")
            #expect(verifies, "\(jwt)")
            #expect(iat % Self.window == 0 && iat >= before - Self.window && iat <= after, "iat \(iat), run between \(before) and \(after)")
            runs.append((jwt, iat))
            if runs.count >= 2, runs[runs.count - 2].issuedAt == iat { break }
            if runs.count == 2 { #expect(iat == runs[0].issuedAt + Self.window, "a boundary fell between the runs: the next window's token") }
        }
        let last = runs[runs.count - 1], previous = runs[runs.count - 2]
        #expect(last.issuedAt == previous.issuedAt && last.jwt == previous.jwt, "\(runs)")
    }

    @Test("two serve processes with one key, started one after the other, then one restarted: the emulator sees one token, and no push is answered 502")
    func twoRelaysOneToken() async throws {
        // A window boundary inside the scenario makes two tokens, the second refused: that is the
        // boundary, not the relays. It cannot fall inside two runs 30 minutes apart, so run again.
        for attempt in 1...2 {
            let started = Self.nowSeconds
            let seen = try await serveScenario()
            if Self.window(of: Self.nowSeconds) != Self.window(of: started), attempt == 1 { continue }
            #expect(seen.statuses.allSatisfy { $0 == 201 }, "\(seen.statuses)")
            #expect(seen.newTokens == [RelayHarness.keyID: 1], "\(seen.newTokens)")
            #expect(seen.refused == 0)
            #expect(seen.tokens.count == 1, "\(seen.tokens.count) distinct tokens")
            let iat = try #require(seen.tokens.first.flatMap { Self.inspect(String($0.dropFirst("bearer ".count))).issuedAt })
            #expect(iat % Self.window == 0 && iat <= started)
            return
        }
    }

    private struct Seen {
        var statuses: [Int] = []
        var newTokens: [String: Int] = [:]
        var refused = 0
        var tokens: Set<String> = []
    }

    /// Relay A starts and pushes, relay B starts and pushes, A is stopped and started again and
    /// pushes, B pushes again; what the emulator saw.
    private func serveScenario() async throws -> Seen {
        let apple = try startEmulator()
        defer { apple.stop() }
        let ca = try TemporaryFiles.caFile()
        defer { try? FileManager.default.removeItem(at: ca) }
        let filesA = try TemporaryFiles(), filesB = try TemporaryFiles()
        defer { filesA.remove(); filesB.remove() }
        let portA = try freePort(), portB = try freePort()
        try filesA.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple, ca: ca, port: portA, pool: 2)
        try filesB.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple, ca: ca, port: portB, pool: 2)
        var seen = Seen()
        func push(_ port: Int) async throws {
            let response = try await TestHTTP.post(
                port: port, target: "/push/\(token("", fill: "3"))/\(UUID().uuidString)",
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)")],
                body: Sample.body)
            seen.statuses.append(response.status)
        }
        func start(_ files: TemporaryFiles, port: Int) async throws -> ServeProcess {
            let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log)
            do { try await relay.waitUntilReady(port: port) } catch { relay.forceStop(); throw error }
            return relay
        }
        let a = try await start(filesA, port: portA)
        defer { a.forceStop() }
        try await push(portA)
        let b = try await start(filesB, port: portB)
        defer { b.forceStop() }
        try await push(portB)
        try await push(portA)
        #expect(try await a.stop() == 0)
        let restarted = try await start(filesA, port: portA)
        defer { restarted.forceStop() }
        try await push(portA)
        try await push(portB)
        #expect(try await restarted.stop() == 0)
        #expect(try await b.stop() == 0)
        seen.newTokens = apple.rules.newTokensAccepted
        seen.refused = apple.rules.tokenUpdatesRefused
        seen.tokens = Set(apple.records.compactMap { $0.header("authorization") })
        return seen
    }
}
