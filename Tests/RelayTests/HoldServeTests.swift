import Foundation
import Synchronization
import Testing
import MockAPNs
import CertificateSupport
import TestWaits
#if canImport(Glibc)
import Glibc
#endif

/// The shipped binary holding pushes while Apple is away, killed with SIGKILL at random moments
/// and restarted on the same store: nothing answered 201 is lost, nothing is delivered twice.
@Suite("Holding in the shipped binary: kill -9 while Apple is away", .serialized, .timeLimit(.minutes(5)))
struct HoldServeTests {
    /// What the senders heard, across the relay's lives.
    final class Answers: Sendable {
        private let state = Mutex<(held: Set<String>, refused: [String], unanswered: Int)>(([], [], 0))
        private let sent = Mutex(0)
        /// The next push's number, nil once `total` were sent.
        func next(of total: Int) -> Int? {
            sent.withLock { n in
                guard n < total else { return nil }
                defer { n += 1 }
                return n
            }
        }
        func add(_ response: TestHTTP.Response) {
            state.withLock { state in
                if response.status == 201, response.header("X-Relay-Held") == "true", let id = response.header("apns-id") {
                    state.held.insert(id)
                } else {
                    state.refused.append("\(response.status) \(response.reason ?? "")")
                }
            }
        }
        func lost() { state.withLock { $0.unanswered += 1 } }
        var held: Set<String> { state.withLock { $0.held } }
        var refused: [String] { state.withLock { $0.refused } }
        var unanswered: Int { state.withLock { $0.unanswered } }
    }

    /// An emulator presenting `certificates`' server certificate, and `serve`'s settings for it
    /// (the relay trusting RelayHarness's CA, through APNS_CA_FILE) with a store of its own.
    struct Setup {
        let apple: MockAPNsServer
        let files: TemporaryFiles
        let ca: URL
        let port: Int

        init(certificates: TestCertificates) throws {
            apple = try MockAPNsServer.start(
                configuration: MockAPNsConfiguration(topics: [RelayHarness.topic], teamID: RelayHarness.teamID,
                                                     keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
                certificates: certificates)
            files = try TemporaryFiles()
            ca = try TemporaryFiles.caFile()
            port = try freePort()
            try files.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple, ca: ca, port: port, pool: 2)
            let store = files.directory.appendingPathComponent("held.sqlite").path
            try (String(contentsOf: files.envFile, encoding: .utf8) + "\nSTORE_PATH=\(store)\nPUSH_TIMEOUT_MS=2000\n")
                .write(to: files.envFile, atomically: true, encoding: .utf8)
        }

        /// `serve` on these settings, once it answers /health.
        func start() async throws -> ServeProcess {
            let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log)
            let up = try await eventually(within: .seconds(15)) {
                guard relay.isRunning else { throw TestHTTP.Failure(description: "the relay exited: \(relay.logText)") }
                return (try? await TestHTTP.get(port: port, target: "/health"))?.status == 200
            }
            guard up else { throw TestHTTP.Failure(description: "the relay never answered /health: \(relay.logText)") }
            return relay
        }

        func remove() {
            apple.stop()
            files.remove()
            try? FileManager.default.removeItem(at: ca)
        }
    }

    /// Sends push `n` (a Mastodon-shaped one, a day's TTL) to the device of that number on `port`
    /// and records its answer; one that meets no relay counts as lost, after a short pause (a
    /// sender would send it again).
    static func post(_ n: Int, id: String, port: Int, answers: Answers) async {
        do {
            let response = try await TestHTTP.post(
                port: port, target: "/push/\(token(String(format: "%08x", n)))/\(id)",
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"),
                          ("Crypto-Key", "dh=\(Sample.dh)"), ("TTL", "86400")],
                body: Sample.body)
            answers.add(response)
        } catch {
            answers.lost()
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    @Test("Apple away: 10,000 pushes answered 201 while the relay is SIGKILLed twice at random moments and restarted on the same store; Apple back: each reaches it exactly once")
    func killedWhileHolding() async throws {
        let setup = try Setup(certificates: RelayHarness.certificates)
        defer { setup.remove() }
        let (apple, port) = (setup.apple, setup.port)
        apple.stop()  // Apple is away from the start: its port refuses connections.

        let total = 10_000
        let firstArrival = Int64(Date().timeIntervalSince1970)
        let answers = Answers()
        var relay = try await setup.start()
        // 16 senders, each a push at a time to a device of its own number; a push that meets a
        // dead relay is not answered (the sender would send it again) and counts apart.
        let senders = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        while let n = answers.next(of: total) {
                            await Self.post(n, id: "s\(n)", port: port, answers: answers)
                        }
                    }
                }
            }
        }
        // Two kills, each after a random number of answers, so each falls at another moment of
        // the group commit (a put being written, synced, or answered).
        var killedAt: [Int] = []
        for round in 1...2 {
            let target = round * total / 3 + Int.random(in: -500...500)
            #expect(try await eventually(within: .seconds(60)) { answers.held.count >= target })
            relay.signal(SIGKILL)
            killedAt.append(answers.held.count)
            _ = try await relay.stop()
            relay = try await setup.start()
        }
        await senders.value
        #expect(answers.refused.isEmpty, "every answer was 201 held: \(answers.refused.prefix(10))")
        let held = answers.held
        #expect(held.count + answers.unanswered == total, "\(held.count) held, \(answers.unanswered) unanswered")
        #expect(held.count > total * 9 / 10, "\(held.count) held")

        // Apple is back: every push answered 201 reaches it, once.
        try apple.restart()
        let delivered = try await eventually(within: .seconds(120)) {
            Set(apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }).isSuperset(of: held)
        }
        let accepted = apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }
        let missing = held.subtracting(accepted)
        #expect(delivered && missing.isEmpty, "\(missing.count) of \(held.count) held pushes never reached Apple (killed at \(killedAt))")
        // Each as it was sent: the sender's encrypted body whole (the device decrypts it), and
        // apns-expiration = arrival + TTL, as if it had gone out when it arrived.
        let lastArrival = Int64(Date().timeIntervalSince1970)
        let body = "\"m\":\"" + base64URLPadded(Sample.body) + "\",\"s\":\"" + Sample.salt + "\",\"k\":\"" + Sample.dh + "\""
        for record in apple.records where record.status == 200 {
            #expect(String(decoding: record.payload, as: UTF8.self).contains(body), "\(String(decoding: record.payload, as: UTF8.self))")
            let expiration = Int64(record.header("apns-expiration") ?? "") ?? 0
            #expect(expiration >= firstArrival + 86_400 && expiration <= lastArrival + 86_400, "apns-expiration \(expiration)")
        }
        let twice = Dictionary(grouping: accepted, by: { $0 }).filter { $0.value.count > 1 }
        #expect(twice.isEmpty, "\(twice.count) pushes reached Apple twice")
        let drained = try await eventually(within: .seconds(10)) {
            let health = try await TestHTTP.get(port: port, target: "/health")
            let text = String(decoding: health.body, as: UTF8.self)
            return text.hasPrefix(#"{"status":"alive","held":0,"store":"sqlite:"#) && text.hasSuffix(#""store_ok":true}"#)
        }
        #expect(drained)
        #expect(try await relay.stop() == 0)
    }

    @Test("Apple's certificate from a CA the relay does not trust (Apple moving to a new root): pushes are held; the operator adds the new CA to APNS_CA_FILE and sends SIGHUP; every held push is delivered")
    func caChange() async throws {
        // "Apple" presents a certificate of a CA of its own; the relay trusts only the old one.
        let newRoot = try TestCertificates.make()
        let setup = try Setup(certificates: newRoot)
        defer { setup.remove() }
        let (apple, port, ca) = (setup.apple, setup.port, setup.ca)
        let relay = try await setup.start()
        defer { relay.forceStop() }

        var ids: Set<String> = []
        for n in 0..<20 {
            let response = try await TestHTTP.post(
                port: port, target: "/push/\(token(String(format: "ca%06x", n)))/c\(n)",
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)"), ("TTL", "3600")],
                body: Sample.body)
            #expect(response.status == 201 && response.header("X-Relay-Held") == "true", "\(response.status) \(response.reason ?? "")")
            if let id = response.header("apns-id") { ids.insert(id) }
        }
        #expect(relay.logText.contains("certificate verification failed"), "the held lines say why: \(relay.logText.suffix(2000))")
        #expect(apple.records.isEmpty, "no push reached the untrusted server")

        // The operator adds Apple's new root to the CA file and reloads.
        try (RelayHarness.certificates.caPEM + newRoot.caPEM).write(to: ca, atomically: true, encoding: .utf8)
        relay.signal(SIGHUP)
        let delivered = try await eventually(within: .seconds(30)) {
            Set(apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") }).isSuperset(of: ids)
        }
        #expect(delivered, "\(apple.records.count) records; \(relay.logText.suffix(3000))")
        #expect(apple.records.filter { $0.status == 200 }.count == ids.count, "each once")
        #expect(relay.logText.contains("the CAs trusted for Apple's servers changed"))
        #expect(try await relay.stop() == 0)
    }
}
