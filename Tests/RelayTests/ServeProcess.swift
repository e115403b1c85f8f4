import Foundation
import Dispatch
import Testing
import MockAPNs
import OpenSSLSupport
import BuiltProducts
import TestWaits
#if canImport(Glibc)
import Glibc
#endif

struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs `apns-relay` (`BuiltProducts.relay`: the debug build's, or the one in APNS_RELAY_BIN_DIR)
/// with exactly `environment` (nothing inherited), bounded in time; through `wrapper` (a
/// command that execs it: `setpriv --reuid 10001 …`) when given.
func run(_ arguments: [String], environment: [String: String], wrapper: [String] = []) async throws -> Run {
    let binary = try BuiltProducts.relayExecutable()
    return try await withCheckedThrowingContinuation { (c: CheckedContinuation<Run, Error>) in
        Thread {
            let process = Process()
            if let command = wrapper.first {
                process.executableURL = URL(fileURLWithPath: command)
                process.arguments = wrapper.dropFirst() + [binary.path] + arguments
            } else {
                process.executableURL = binary
                process.arguments = arguments
            }
            process.environment = environment
            let out = Pipe(), err = Pipe()
            process.standardOutput = out
            process.standardError = err
            do {
                try process.run()
            } catch {
                c.resume(throwing: error)
                return
            }
            let killer = DispatchWorkItem { process.terminate() }
            DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: killer)
            let stdout = out.fileHandleForReading.readDataToEndOfFile()
            let stderr = err.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            killer.cancel()
            c.resume(returning: Run(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                                    stderr: String(decoding: stderr, as: UTF8.self)))
        }.start()
    }
}

/// Files one test writes, under a directory of its own that `remove` deletes.
struct TemporaryFiles {
    let directory: URL
    var envFile: URL { directory.appendingPathComponent("relay.env") }
    var keyFile: URL { directory.appendingPathComponent("AuthKey.p8") }
    var log: URL { directory.appendingPathComponent("relay.log") }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-cli-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// `serve --env-file`'s settings against `apple`, the key in `keyFile`.
    func writeSettings(keyID: String, key: String, apple: MockAPNsServer, ca: URL, port: Int, pool: Int) throws {
        try key.write(to: keyFile, atomically: true, encoding: .utf8)
        try """
            APNS_AUTH_KEY_FILE=\(keyFile.path)
            APNS_KEY_ID=\(keyID)
            APPLE_TEAM_ID=\(RelayHarness.teamID)
            TOPIC=\(RelayHarness.topic)
            APNS_HOST=localhost:\(apple.port)
            APNS_CA_FILE=\(ca.path)
            PORT=\(port)
            BIND_ADDRESS=127.0.0.1
            CONNECTION_POOL_SIZE=\(pool)
            """.write(to: envFile, atomically: true, encoding: .utf8)
    }

    /// The emulator's CA, where APNS_CA_FILE can name it.
    static func caFile() throws -> URL {
        let ca = FileManager.default.temporaryDirectory.appendingPathComponent("relay-ca-\(getpid())-\(UUID().uuidString).pem")
        try RelayHarness.certificates.caPEM.write(to: ca, atomically: true, encoding: .utf8)
        return ca
    }
}

/// `apns-relay serve` as a child process (nothing inherited from the test's environment), its
/// stderr in a file; `stop` sends SIGTERM and, after 10 s, SIGKILL; `forceStop` (a test's
/// `defer`) SIGKILL at once, so it never outlives the test.
final class ServeProcess: @unchecked Sendable {
    // @unchecked: the Process is started in init and then only read (isRunning, pid) or stopped.
    private let process = Process()
    private let log: URL

    /// - Parameters:
    ///   - wrapper: a command that execs the relay (`taskset -c 0`), so it keeps the pid.
    ///   - environment: the process's whole environment.
    init(arguments: [String], log: URL, wrapper: [String] = [], environment: [String: String] = [:]) throws {
        let binary = try BuiltProducts.relayExecutable()
        self.log = log
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        if let command = wrapper.first {
            process.executableURL = URL(fileURLWithPath: command)
            process.arguments = wrapper.dropFirst() + [binary.path] + arguments
        } else {
            process.executableURL = binary
            process.arguments = arguments
        }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
    }

    var isRunning: Bool { process.isRunning }
    var pid: Int32 { process.processIdentifier }

    /// The names of its threads (`/proc/PID/task/*/comm`); a thread that leaves between the
    /// listing and the read of its name is skipped.
    var threadNames: [String] {
        let tasks = "/proc/\(pid)/task"
        return ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).compactMap { id in
            (try? String(contentsOfFile: "\(tasks)/\(id)/comm", encoding: .utf8))?.trimmingCharacters(in: .newlines)
        }
    }
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Polls GET /ready until 200 (bounded: 15 s).
    func waitUntilReady(port: Int) async throws {
        let ready = try await eventually(within: .seconds(15)) {
            guard process.isRunning else { throw TestHTTP.Failure(description: "the relay exited (\(process.terminationStatus)): \(logText)") }
            return (try? await TestHTTP.get(port: port, target: "/ready"))?.status == 200
        }
        guard ready else { throw TestHTTP.Failure(description: "the relay never became ready: \(logText)") }
    }

    /// Waits (bounded: 10 s) until the log holds `text`.
    func waitForLog(_ text: String) async throws {
        let logged = try await eventually(within: .seconds(10)) {
            if logText.contains(text) { return true }
            guard process.isRunning else { throw TestHTTP.Failure(description: "the relay exited (\(process.terminationStatus)): \(logText)") }
            return false
        }
        guard logged else { throw TestHTTP.Failure(description: "no log line with \"\(text)\": \(logText)") }
    }

    /// SIGTERM, then SIGKILL after 10 s; the exit status (128 + signal when killed by one).
    func stop() async throws -> Int32 {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            if try await !eventually(within: .seconds(10), { !process.isRunning }) { kill(process.processIdentifier, SIGKILL) }
        }
        return try await onOwnThread {
            self.process.waitUntilExit()
            return self.process.terminationReason == .exit ? self.process.terminationStatus : 128 + self.process.terminationStatus
        }
    }

    /// For a `defer` after a failure: SIGKILL at once, so the relay never outlives the test.
    func forceStop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}
