import Testing
import Foundation
import TestWaits

/// The lock a test takes on a fixed port is held across processes: a second `make test` on this
/// machine waits for it instead of starting a second program on the same port.
@Suite("a fixed port is taken in turns by test processes")
struct PortLockTests {
    @Test("lockPort waits while another process holds the port's lock, and takes it once that one lets go")
    func waitsForAnotherProcess() async throws {
        // A port number no test listens on: only its lock file is used.
        let port = 1
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("port-lock-\(getpid())-\(UUID().uuidString)").path
        let ready = base + ".ready", leaving = base + ".leaving"
        defer { for file in [ready, leaving] { try? FileManager.default.removeItem(atPath: file) } }
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        holder.arguments = ["-x", "/tmp/apns-relay-tests-port-\(port).lock", "-c", "touch '\(ready)'; sleep 1; touch '\(leaving)'"]
        try holder.run()
        defer { if holder.isRunning { holder.terminate() } }
        #expect(try await eventually(within: .seconds(10)) { FileManager.default.fileExists(atPath: ready) })
        let lock = try await lockPort(port)
        defer { releasePortLock(lock) }
        // The holder writes `leaving` while it still holds the lock, so it is there once ours came.
        #expect(FileManager.default.fileExists(atPath: leaving))
    }
}
