import Foundation

/// A redis-server of a test's own: 127.0.0.1, a free port, its own directory, append-only log
/// with `appendfsync always` (every write fsynced before Redis answers). Stopped by its PID
/// (`stop`, or `kill` for a SIGKILL), started again on the same port and directory by `start`.
/// Spawned with posix_spawn and a cleared signal mask (SIGTERM at its default action): a child
/// of a test process may otherwise inherit SIGTERM blocked and never stop.
public final class RedisServer: @unchecked Sendable {
    public let port: Int
    public let directory: URL
    private let extraConfig: [String]
    private let lock = NSLock()
    private var pid: pid_t = 0

    /// The URL a store connects to (database `database`).
    public func url(database: Int = 0) -> String { "redis://127.0.0.1:\(port)/\(database)" }

    public var processID: pid_t { lock.withLock { pid } }

    /// Starts one; throws when redis-server is missing or does not answer within 10 s.
    public init(extraConfig: [String] = []) throws {
        port = try Self.freePort()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("redis-\(getpid())-\(UUID().uuidString)")
        self.extraConfig = extraConfig
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    deinit { stop() }

    /// Starts the server (again), and waits until it accepts connections.
    public func start() throws {
        let arguments = ["redis-server", "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                         "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--databases", "64",
                         "--daemonize", "no", "--logfile", directory.appendingPathComponent("redis.log").path] + extraConfig
        let child = try Self.spawn(arguments)
        lock.withLock { pid = child }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if Self.answers(port: port) { return }
            usleep(10_000)
        }
        throw RedisServerError(description: "redis-server on port \(port) did not answer within 10 s")
    }

    /// SIGKILL, as a crash: nothing is flushed that was not already.
    public func kill() { signal(SIGKILL) }

    /// SIGTERM and wait; removes nothing.
    public func stop() { signal(SIGTERM) }

    /// Stops the server and removes its directory.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func signal(_ number: Int32) {
        let child = lock.withLock { () -> pid_t in
            defer { pid = 0 }
            return pid
        }
        guard child > 0 else { return }
        Foundation.kill(child, number)
        var status: Int32 = 0
        _ = waitpid(child, &status, 0)
    }

    private static func spawn(_ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawnp(&child, "redis-server", &actions, &attributes, argv, environ)
        guard status == 0 else { throw RedisServerError(description: "cannot start redis-server: \(String(cString: strerror(status)))") }
        return child
    }

    private static func answers(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return false }
        let ping = "PING\r\n"
        _ = ping.withCString { write(fd, $0, 6) }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = read(fd, &buffer, 64)
        return count > 0 && buffer.starts(with: Array("+PONG".utf8))
    }

    /// A port nothing listens on now: the kernel's choice for a socket bound to port 0.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Bool in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw RedisServerError(description: "cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

public struct RedisServerError: Error, CustomStringConvertible {
    public let description: String
}
