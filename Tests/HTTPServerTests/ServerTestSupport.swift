#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Foundation
import EventLoop
import Synchronization
import Testing
@testable import HTTPServer

/// A response as a test client read it off the wire.
struct WireResponse {
    var status: Int
    var headers: [(String, String)]
    var body: [UInt8]
    /// Every byte of the response, head and body.
    var raw: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }
    var text: String { String(decoding: body, as: UTF8.self) }
}

struct ClientError: Error, CustomStringConvertible {
    let description: String
}

/// A blocking loopback client with receive timeouts, so a server bug fails a test instead
/// of hanging it. Used from one Dispatch thread at a time (`@unchecked Sendable` for that).
final class TestClient: @unchecked Sendable {
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to `host` (IPv4 or IPv6 literal) with `timeout` seconds for each receive.
    init(port: Int, host: String = "127.0.0.1", timeout: Double = 5) throws {
        var v6 = in6_addr()
        let isV6 = inet_pton(AF_INET6, host, &v6) == 1
        fd = socket(isV6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ClientError(description: "socket failed: errno \(errno)") }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc: Int32
        if isV6 {
            var addr = sockaddr_in6()
            addr.sin6_family = sa_family_t(AF_INET6)
            addr.sin6_port = in_port_t(UInt16(port).bigEndian)
            addr.sin6_addr = v6
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, host, &addr.sin_addr)
            rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard rc == 0 else {
            let e = errno
            Glibc.close(fd)
            fd = -1
            throw ClientError(description: "connect to \(host):\(port) failed: errno \(e)")
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    func close() {
        if fd >= 0 { Glibc.close(fd); fd = -1 }
    }

    /// Shuts down the sending side (FIN) and keeps reading, as `nc -N` or a proxy does.
    func shutdownWrites() {
        shutdown(fd, Int32(SHUT_WR))
    }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads more bytes into `buffer`; false on EOF, reset or timeout.
    private func fill(_ buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    /// Whatever arrives next (bytes already buffered first); nil on EOF, reset or timeout.
    func receive() -> [UInt8]? {
        if buffer.isEmpty && !fill(&buffer) { return nil }
        defer { buffer = [] }
        return buffer
    }

    /// The next response, its body framed by Content-Length; nil when the connection
    /// closed or timed out before a whole response arrived.
    func readResponse() -> WireResponse? {
        readWireResponse(&buffer, fill: fill)
    }
}

/// The next response in `buffer`, calling `fill` for more bytes until it is whole (then taken
/// out of `buffer`); nil when `fill` fails first or the status line is not one.
func readWireResponse(_ buffer: inout [UInt8], fill: (inout [UInt8]) -> Bool) -> WireResponse? {
    var headEnd: Int?
    while true {
        if buffer.count >= 4 {
            for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
                headEnd = i
                break
            }
        }
        if headEnd != nil { break }
        if !fill(&buffer) { return nil }
    }
    let head = String(decoding: buffer[0..<headEnd!], as: UTF8.self)
    var lines = head.components(separatedBy: "\r\n")
    let statusLine = lines.removeFirst().split(separator: " ")
    guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
    var headers: [(String, String)] = []
    for line in lines {
        guard let colon = line.firstIndex(of: ":") else { continue }
        let name = String(line[..<colon])
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        headers.append((name, value))
    }
    let length = Int(headers.first { $0.0.lowercased() == "content-length" }?.1 ?? "0") ?? 0
    let total = headEnd! + 4 + length
    while buffer.count < total {
        if !fill(&buffer) { return nil }
    }
    let raw = Array(buffer[0..<total])
    let body = Array(buffer[(headEnd! + 4)..<total])
    buffer.removeFirst(total)
    return WireResponse(status: status, headers: headers, body: body, raw: raw)
}

extension TestClient {
    /// True when the server closed the connection (EOF or reset) before the receive timeout,
    /// whatever it sent first (a TLS alert); false on a timeout.
    func isClosedByServerAfterAnyBytes() -> Bool {
        buffer = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return true }
            if n < 0 { return errno == ECONNRESET }
        }
    }

    /// True when the server closed the connection (EOF or reset) before the receive timeout,
    /// with no further bytes; false if bytes or nothing arrived in time.
    func isClosedByServer() -> Bool {
        guard buffer.isEmpty else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        if n == 0 { return true }
        if n < 0 { return errno == ECONNRESET }
        buffer.append(byte)
        return false
    }
}

/// Runs blocking socket code on a thread of its own, so neither Swift's task pool (which
/// runs the responders) nor Dispatch's small Linux pool waits on a test's blocking call.
func blocking<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { c in
        let thread = Thread {
            c.resume(with: Result { try body() })
        }
        thread.start()
    }
}

/// Answers `200` with "METHOD path body" and honours `X-Delay-Ms`, so tests can make the
/// responder slow for one request and fast for another.
struct EchoResponder: HTTPResponder {
    let started: (@Sendable (HTTPRequest) -> Void)?

    init(started: (@Sendable (HTTPRequest) -> Void)? = nil) { self.started = started }

    func respond(to request: HTTPRequest) async -> HTTPResponse {
        started?(request)
        if let delay = request.headers["X-Delay-Ms"].flatMap(Int.init), delay > 0 {
            try? await Task.sleep(for: .milliseconds(delay))
        }
        if request.path == "/big" {
            return HTTPResponse(status: 200, body: [UInt8](repeating: 0x61, count: 8 << 20))
        }
        var body = Array("\(request.method) \(request.path) ".utf8)
        body.append(contentsOf: request.body)
        return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"], body: body)
    }
}

/// Test timeouts: short, so the timeout tests finish in well under a second each.
func testConfiguration(
    header: Duration = .seconds(10), body: Duration = .seconds(10), request: Duration = .seconds(10),
    idle: Duration = .seconds(10), write: Duration = .seconds(10), maxConnections: Int = 10_000,
    maxBufferedRequestBytes: Int = 64 << 20, minimumIdle: Duration = .milliseconds(200),
    host: String = "127.0.0.1", loops: Int = 2, clock: ServerClock = .loop
) -> HTTPServerConfiguration {
    var configuration = HTTPServerConfiguration(
        host: host, port: 0, headerTimeout: header, bodyTimeout: body, requestTimeout: request,
        idleTimeout: idle, writeTimeout: write, maxConnections: maxConnections,
        maxBufferedRequestBytes: maxBufferedRequestBytes, minimumIdleBeforeEviction: minimumIdle, loopCount: loops)
    configuration.clock = clock
    return configuration
}

/// A clock the test moves by hand, for the server's deadlines: it starts at the loops' time and
/// stands still until `advance`. With a `readDelay` each reading waits that long before it reads,
/// as a loop thread preempted between two steps would: what the server does around a reading
/// then happens in a window the test can hit every time instead of once in a few runs.
final class ManualClock: Sendable {
    private let nanoseconds = Atomic<Int64>(LoopClock.now())
    private let readDelay: Duration

    init(readDelay: Duration = .zero) {
        self.readDelay = readDelay
    }

    var serverClock: ServerClock {
        let delay = readDelay == .zero ? 0 : useconds_t(readDelay / .microseconds(1))
        return ServerClock { [self] in
            if delay > 0 { usleep(delay) }
            return nanoseconds.load(ordering: .acquiring)
        }
    }

    func advance(_ duration: Duration) {
        nanoseconds.wrappingAdd(LoopClock.nanoseconds(duration), ordering: .releasing)
    }
}

/// Starts a server, runs `body`, stops the server whatever happens.
func withServer(
    _ configuration: HTTPServerConfiguration = testConfiguration(),
    responder: any HTTPResponder = EchoResponder(),
    _ body: (HTTPServer) async throws -> Void
) async throws {
    let server = try HTTPServer.start(configuration: configuration, responder: responder)
    do {
        try await body(server)
    } catch {
        server.stop()
        throw error
    }
    server.stop()
}

/// `duration` in `LoopClock` nanoseconds, the time the pure tests make up: `t0 + nanos(.seconds(5))`.
func nanos(_ duration: Duration) -> Int64 { LoopClock.nanoseconds(duration) }

extension HTTPServer {
    /// Whether a loop holds an accepted connection that has sent nothing yet: false once every
    /// client's first bytes are read (a half ClientHello too, which makes its connection a
    /// request arriving), the moment a test of the cap's order must wait for.
    var holdsFreshIdleConnection: Bool { core.contexts.contains { $0.oldestIdle(.fresh) != nil } }
}

/// A thread-safe flag a responder raises (each raise counted) and a test waits for.
final class Signal: Sendable {
    private let raises = Mutex(0)
    func raise() { raises.withLock { $0 += 1 } }
    var isRaised: Bool { count > 0 }
    var count: Int { raises.withLock { $0 } }
}
