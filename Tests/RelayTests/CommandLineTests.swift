import Foundation
import Testing
import MockAPNs

/// The built `apns-relay` executable, next to the test bundle in the build directory.
let executable: URL? = {
    var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    for _ in 0..<3 {
        let candidate = dir.appendingPathComponent("apns-relay")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        dir = dir.deletingLastPathComponent()
    }
    return nil
}()

private struct Run {
    var status: Int32
    var stdout: String
    var stderr: String
}

/// Runs the executable with exactly `environment` (nothing inherited), bounded in time.
private func run(_ arguments: [String], environment: [String: String]) async throws -> Run {
    let binary = try #require(executable, "build apns-relay first (swift build --build-tests builds it)")
    return try await withCheckedThrowingContinuation { (c: CheckedContinuation<Run, Error>) in
        Thread {
            let process = Process()
            process.executableURL = binary
            process.arguments = arguments
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

@Suite("apns-relay executable", .serialized, .enabled(if: executable != nil))
struct CommandLineTests {
    @Test("demo --once relays one encrypted push through the emulator, prints it and exits 0")
    func demoOnce() async throws {
        let result = try await run(["demo", "--once"], environment: ["PORT": "0"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("relay answered 201"))
        #expect(result.stdout.contains("apns-push-type: alert"))
        #expect(result.stdout.contains(#""e":"aesgcm""#))
        #expect(result.stdout.contains("Alice mentioned you"))
    }

    @Test("serve without a key stops with one line naming the variable, exit 1")
    func configurationError() async throws {
        let result = try await run(["serve"], environment: ["APNS_KEY_ID": "ABC123DEFG"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.stderr.contains("APNS_AUTH_KEY"))
    }

    @Test("healthcheck fails when nothing listens")
    func healthcheckFails() async throws {
        let result = try await run(["healthcheck", "--port", "1"], environment: [:])
        #expect(result.status == 1)
    }

    @Test("--help lists the commands")
    func help() async throws {
        let result = try await run(["--help"], environment: [:])
        #expect(result.status == 0)
        for command in ["serve", "demo", "check", "healthcheck"] { #expect(result.stdout.contains(command)) }
    }

    @Test("healthcheck exits 0 against a running relay")
    func healthcheckSucceeds() async throws {
        try await RelayHarness.with { h in
            let result = try await run(["healthcheck", "--port", String(h.port)], environment: [:])
            #expect(result.status == 0, "\(result.stderr)")
        }
    }

    @Test("check --connect validates the settings and opens a connection to APNS_HOST")
    func checkConnect() async throws {
        try await RelayHarness.with { h in
            let ca = FileManager.default.temporaryDirectory.appendingPathComponent("relay-ca-\(getpid()).pem")
            try RelayHarness.certificates.caPEM.write(to: ca, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: ca) }
            let environment = [
                "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID,
                "APPLE_TEAM_ID": RelayHarness.teamID, "TOPIC": RelayHarness.topic,
                "APNS_HOST": "localhost:\(h.apple.port)", "APNS_CA_FILE": ca.path,
            ]
            let result = try await run(["check", "--connect"], environment: environment)
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("connected to localhost:\(h.apple.port)"))
        }
    }
}
