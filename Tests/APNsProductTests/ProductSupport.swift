import Foundation
import Synchronization
import Testing
import MockAPNs
import OpenSSLSupport

struct ProcessRun {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `executable` with exactly `environment`, `input` on its standard input; killed after
/// `limit` seconds, so a hung child cannot outlive the test.
func runProcess(_ executable: URL, _ arguments: [String], environment: [String: String], input: String = "",
                directory: URL? = nil, limit: Double = 60) async throws -> ProcessRun {
    try await withCheckedThrowingContinuation { (c: CheckedContinuation<ProcessRun, Error>) in
        Thread {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.environment = environment
            if let directory { process.currentDirectoryURL = directory }
            let out = Pipe(), err = Pipe(), stdin = Pipe()
            process.standardOutput = out
            process.standardError = err
            process.standardInput = stdin
            do { try process.run() } catch {
                c.resume(throwing: error)
                return
            }
            // A child that stops before reading its input (a refused option) may close the pipe
            // first. The write then meets EPIPE, which is the child's business, not the test's:
            // SIGPIPE is ignored (it would kill the test process) and the error is dropped (the
            // non-throwing write(_:) traps on it).
            signal(SIGPIPE, SIG_IGN)
            try? stdin.fileHandleForWriting.write(contentsOf: Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
            let killer = DispatchWorkItem { process.terminate() }
            DispatchQueue.global().asyncAfter(deadline: .now() + limit, execute: killer)
            // Both pipes drain at once, so a child that fills stderr cannot block on it.
            let stderrBox = Mutex(Data())
            let errDone = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                let data = err.fileHandleForReading.readDataToEndOfFile()
                stderrBox.withLock { $0 = data }
                errDone.signal()
            }
            let stdoutData = out.fileHandleForReading.readDataToEndOfFile()
            errDone.wait()
            let stderrData = stderrBox.withLock { $0 }
            process.waitUntilExit()
            killer.cancel()
            c.resume(returning: ProcessRun(status: process.terminationStatus, stdout: String(decoding: stdoutData, as: UTF8.self),
                                           stderr: String(decoding: stderrData, as: UTF8.self)))
        }.start()
    }
}

/// An emulator on 127.0.0.1 that trusts one fresh key, with its CA in a file, and the
/// environment (the library's names) that points a client at it.
final class Emulator: Sendable {
    static let team = "TEAM123456", kid = "KEYID12345", topic = "com.example.app"
    let server: MockAPNsServer
    let key: ES256PrivateKey
    let directory: URL
    let caFile: URL

    init() throws {
        key = try ES256PrivateKey.generate()
        server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(
            topics: [Self.topic], teamID: Self.team, keys: [Self.kid: .es256(key.publicKey)], requirePushType: true, strictPayload: true))
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-product-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        caFile = directory.appendingPathComponent("ca.pem")
        try server.caPEM.write(to: caFile, atomically: true, encoding: .utf8)
    }

    /// The variables the library page's block (docs/LIBRARY.md) and the CLI read; the key with literal `\n`, as env files hold it.
    var environment: [String: String] {
        [
            "APNS_KEY": key.pemPKCS8.replacingOccurrences(of: "\n", with: "\\n"),
            "APNS_KEY_ID": Self.kid, "APNS_TEAM_ID": Self.team, "APNS_TOPIC": Self.topic,
            "APNS_HOST": "https://127.0.0.1:\(server.port)/", "APNS_CA_FILE": caFile.path,
            "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            "HOME": ProcessInfo.processInfo.environment["HOME"] ?? "/tmp",
        ]
    }

    /// The variables of another key, trusted from now on. Apple counts new provider tokens per
    /// key (one every 20 minutes, on any connection), so a second process sending in the same
    /// minute brings a key of its own, as a second sender would.
    func anotherKey(id: String = "KEYID67890") throws -> [String: String] {
        let other = try ES256PrivateKey.generate()
        server.rules.keys[id] = .es256(other.publicKey)
        return ["APNS_KEY": other.pemPKCS8.replacingOccurrences(of: "\n", with: "\\n"), "APNS_KEY_ID": id]
    }

    func records(for token: String) -> [MockRecord] { server.records.filter { $0.path == "/3/device/" + token } }

    func stop() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

func token(_ prefix: String = "", _ n: Int) -> String {
    let number = String(n, radix: 16)
    return prefix + String(repeating: "a", count: 64 - prefix.count - number.count) + number
}
