import Foundation
import Synchronization
import Testing
import BuiltProducts
import TestWaits

/// `apns-mock`'s outages as a script drives them: SIGUSR1/SIGUSR2 and --outage-after/--outage-for,
/// each checked with curl presenting the emulator's push client certificate (no token needed).
@Suite("apns-mock outages", .serialized,
       .enabled(if: BuiltProducts.executable("apns-mock") != nil && FileManager.default.isExecutableFile(atPath: "/usr/bin/curl")))
struct MockOutageExecutableTests {
    @Test("SIGUSR1 begins away, unavailable, other-ca and silent in turn, SIGUSR2 ends each; curl sees refused, 503, an unknown CA, a timeout, then 200")
    func signalledOutages() async throws {
        let mock = try await WatchedMock(["--outage", "away,unavailable,other-ca,silent"])
        defer { mock.stop() }
        #expect(try await mock.push().code == "200")

        mock.signal(SIGUSR1)
        #expect(try await mock.waitFor("outage away begins"))
        #expect(try await mock.push().status == 7, "curl: couldn't connect (refused)")
        mock.signal(SIGUSR2)
        #expect(try await mock.waitFor("outage away ends"))
        #expect(try await mock.push().code == "200")

        mock.signal(SIGUSR1)
        #expect(try await mock.waitFor("outage unavailable begins"))
        let unavailable = try await mock.push()
        #expect(unavailable.code == "503")
        #expect(unavailable.body == #"{"reason":"ServiceUnavailable"}"#)
        mock.signal(SIGUSR2)
        #expect(try await mock.waitFor("outage unavailable ends"))
        #expect(try await mock.push().code == "200")

        mock.signal(SIGUSR1)
        #expect(try await mock.waitFor("outage other-ca begins"))
        #expect(try await mock.push().status == 60, "curl: the peer's certificate cannot be verified")
        #expect(try await mock.push(ca: mock.otherCA).code == "200", "the CA --other-ca-out wrote is the one presented")
        mock.signal(SIGUSR2)
        #expect(try await mock.waitFor("outage other-ca ends"))
        #expect(try await mock.push().code == "200")

        mock.signal(SIGUSR1)
        #expect(try await mock.waitFor("outage silent begins"))
        #expect(try await mock.push(limit: 1).status == 28, "curl: timed out (the handshake was never answered)")
        mock.signal(SIGUSR2)
        #expect(try await mock.waitFor("outage silent ends"))
        #expect(try await mock.push().code == "200")

        // After the last, the first again.
        mock.signal(SIGUSR1)
        #expect(try await mock.waitFor("outage away begins", occurrence: 2))
    }

    @Test("--outage-after and --outage-for: the outage begins and ends by itself, once through the list")
    func timedOutage() async throws {
        let mock = try await WatchedMock(["--outage", "unavailable", "--outage-after", "1", "--outage-for", "3"])
        defer { mock.stop() }
        #expect(try await mock.waitFor("outage unavailable begins"))
        #expect(try await mock.push().code == "503")
        #expect(try await mock.waitFor("outage unavailable ends"))
        #expect(try await mock.push().code == "200")
    }

    @Test("a bad --outage stops start-up with one line naming it")
    func badOutage() async throws {
        let run = try await runProcess(BuiltProducts.executable("apns-mock")!, ["--port", "0", "--outage", "away,gone"], environment: [:], limit: 20)
        #expect(run.status == 2)
        #expect(run.stderr == "apns-mock: --outage: \"gone\" is no outage (away, silent, other-ca, unavailable, comma-separated)\n")
    }
}

/// An apns-mock process with a push client certificate and the other CA written to a scratch
/// folder; its stdout gathered as it comes, for `waitFor`. `@unchecked Sendable`: `process` is
/// only signalled and stopped from the test; the output is behind its Mutex.
private final class WatchedMock: @unchecked Sendable {
    let process: Process
    let directory: URL
    let port: String
    var ca: String { directory.path + "/ca.pem" }
    var otherCA: String { directory.path + "/other-ca.pem" }
    private let output = Output()

    init(_ arguments: [String]) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-outage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = BuiltProducts.executable("apns-mock")!
        process.arguments = ["--port", "0", "--ca-out", directory.path + "/ca.pem", "--other-ca-out", directory.path + "/other-ca.pem",
                             "--client-cert-out", directory.path] + arguments
        let out = Pipe()
        process.standardOutput = out
        let output = self.output
        out.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            if data.isEmpty { handle.readabilityHandler = nil }
            output.text.withLock { $0 += String(decoding: data, as: UTF8.self) }
        }
        try process.run()
        _ = try await eventually { output.text.withLock { $0.contains("\n") } }
        let banner = output.text.withLock { $0 }
        port = banner.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }.map { String($0.dropFirst("127.0.0.1:".count)) } ?? "0"
    }

    func signal(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Whether `line` has been printed `occurrence` times, within 10 s.
    func waitFor(_ line: String, occurrence: Int = 1) async throws -> Bool {
        let output = self.output
        return try await eventually {
            output.text.withLock { $0.components(separatedBy: "\n").filter { $0 == line }.count >= occurrence }
        }
    }

    /// One push with curl (`limit` seconds at most): its exit status, HTTP code and body.
    func push(ca: String? = nil, limit: Int = 10) async throws -> (status: Int32, code: String, body: String) {
        let run = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), [
            "-s", "--http2", "-m", String(limit), "--cacert", ca ?? self.ca,
            "--cert", directory.path + "/push-cert.pem", "--key", directory.path + "/push-key.pem",
            "-H", "apns-push-type: alert", "-d", #"{"aps":{}}"#, "-w", "\n%{http_code}",
            "https://127.0.0.1:\(port)/3/device/\(token("", 0x53))",
        ], environment: [:], limit: Double(limit + 10))
        let parts = run.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        return (run.status, String(parts.last ?? ""), parts.dropLast().joined(separator: "\n"))
    }

    func stop() {
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }
}

private final class Output: Sendable {
    let text = Mutex("")
}
