import Foundation
import Testing
import TestWaits
import OpenSSLSupport
import BuiltProducts
#if canImport(Glibc)
import Glibc
#endif

/// The toolchain's crash backtracer, `swift-backtrace-static` (the one the image carries: the
/// Swift runtime linked in, glibc and libstdc++ loaded). The test bundle runs on the toolchain's shared runtime, and the toolchain keeps
/// the backtracer in libexec/swift/linux beside the lib/swift/linux that runtime is in. Nil when
/// the runtime's file is not found (a test bundle linked statically).
private let toolchainBacktracer: URL? = {
    // Read to the end: /proc files report no size.
    guard let data = FileHandle(forReadingAtPath: "/proc/self/maps")?.readDataToEndOfFile(),
          case let maps = String(decoding: data, as: UTF8.self),
          let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
          let slash = line.firstIndex(of: "/") else { return nil }
    let backtracer = URL(fileURLWithPath: String(line[slash...])).deletingLastPathComponent()
        .appendingPathComponent("../../../libexec/swift/linux/swift-backtrace-static").standardized
    return FileManager.default.isExecutableFile(atPath: backtracer.path) ? backtracer : nil
}()

@Suite("a crash of apns-relay", .serialized, .enabled(if: BuiltProducts.runsRelay))
struct CrashBacktraceTests {
    /// The symbol table the shipped binary keeps is what makes a production crash readable:
    /// stripped, the same backtrace was hex addresses only.
    @Test("an event loop of serve crashed by SIGSEGV prints a backtrace that names the relay's functions")
    func crashNamesFunctions() async throws {
        let backtracer = try #require(toolchainBacktracer, "no swift-backtrace-static beside the toolchain's runtime")
        let binary = try BuiltProducts.relayExecutable()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-crash-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appendingPathComponent("relay.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let logText = { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

        // Nothing listens on port 1 of 127.0.0.1: the relay starts and serves /health without Apple.
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve"]
        process.environment = [
            "APNS_AUTH_KEY": try ES256PrivateKey.generate().pemPKCS8, "APNS_KEY_ID": "KEYID12345",
            "APPLE_TEAM_ID": "TEAM123456", "TOPIC": "com.example.app", "APNS_HOST": "127.0.0.1:1",
            "PORT": "\(try freePort())", "BIND_ADDRESS": "127.0.0.1", "EVENT_LOOPS": "1",
            "SWIFT_BACKTRACE": "enable=yes,interactive=no,color=no,output-to=stderr,swift-backtrace=\(backtracer.path)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        // After the backtrace the runtime returns from its handler: a fault would strike again
        // and end the process, a signal sent by kill does not, so the test ends it.
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }

        let listening = try await eventually(within: .seconds(15)) {
            try #require(process.isRunning, "the relay exited (\(process.terminationStatus)): \(logText())")
            return logText().contains("apns-relay listening")
        }
        try #require(listening, "the relay never logged that it listens: \(logText())")
        // The signal goes to the event loop's thread (kill(2) given a thread's id delivers to that
        // thread when it does not block the signal), which waits in epoll_wait under
        // EventLoop.run: the main thread waits in sigtimedwait, which keeps no frame chain to
        // unwind past it.
        let task = "/proc/\(process.processIdentifier)/task"
        let loop = try #require(((try? FileManager.default.contentsOfDirectory(atPath: task)) ?? []).first { id in
            (try? String(contentsOfFile: "\(task)/\(id)/comm", encoding: .utf8))?.hasPrefix("eventloop-0") == true
        }.flatMap { Int32($0) }, "no eventloop-0 thread in \(task)")
        kill(loop, SIGSEGV)

        try #require(try await eventually(within: .seconds(60)) { logText().contains("Backtrace took") },
                     "no backtrace within 60 s: \(logText())")
        let text = logText()
        #expect(text.contains("\"eventloop-0\" crashed"), "\(text)")
        // A frame: number, address, function + offset, image (apns-relay, or libc.so.6 for a
        // debug build's epoll_wait).
        let frames = text.split(separator: "\n").filter { $0.contains(" 0x") && $0.contains(" in ") }
        #expect(frames.contains { $0.contains("epoll_wait") }, "no frame names epoll_wait: \(text)")
        #expect(frames.contains { $0.contains("EventLoop.run(") }, "no frame names EventLoop.run: \(text)")
    }
}
