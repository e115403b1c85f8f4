import Foundation
import BenchSupport

/// BENCH_STORE=redis: a redis-server of the bench's own for the hold scenario, on 127.0.0.1 and
/// a free port, in `directory`, with the persistence README asks for (append-only, fsync always).
final class BenchRedis {
    let port: Int
    private let process = Process()

    init(directory: URL) throws {
        port = try freeLoopbackPort()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-server")
        process.arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path, "--appendonly", "yes",
                             "--appendfsync", "always", "--save", "", "--logfile", directory.appendingPathComponent("redis.log").path]
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if (try? String(contentsOf: directory.appendingPathComponent("redis.log"), encoding: .utf8))?.contains("Ready to accept") == true {
                return
            }
            usleep(20_000)
        }
        stop()
        throw BenchError("redis-server did not start within 10 s (is it installed? make deps)")
    }

    var url: String { "redis://127.0.0.1:\(port)/0" }

    /// SIGKILL (with fsync always nothing is owed to the disk): the bench must not wait on a
    /// child that inherited a blocked SIGTERM.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
