import Dispatch
import Foundation
import Synchronization
@testable import EventLoop

/// A one-shot value a test awaits, with a timeout so a bug fails the test instead of hanging it.
final class Waiter<T: Sendable>: Sendable {
    private struct State {
        var value: T?
        var continuation: CheckedContinuation<T?, Never>?
        var finished = false
    }
    private let state = Mutex(State())

    func fulfill(_ value: T) {
        let c: CheckedContinuation<T?, Never>? = state.withLock { s in
            guard !s.finished, s.value == nil else { return nil }
            s.value = value
            if let c = s.continuation { s.continuation = nil; s.finished = true; return c }
            return nil
        }
        c?.resume(returning: value)
    }

    func value(timeout seconds: Double = 10) async -> T? {
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
            let c: CheckedContinuation<T?, Never>? = state.withLock { s in
                guard !s.finished, let c = s.continuation else { return nil }
                s.continuation = nil
                s.finished = true
                return c
            }
            c?.resume(returning: nil)
        }
        return await withCheckedContinuation { c in
            let ready: T?? = state.withLock { s in
                if let v = s.value { s.finished = true; return .some(v) }
                s.continuation = c
                return .none
            }
            if let v = ready { c.resume(returning: v) }
        }
    }
}

/// Echoes every byte back.
final class EchoHandler: TCPStreamHandler {
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) { stream.write(bytes) }
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) {}
}

/// Records bytes and close calls; reports when `expected` bytes arrived or the stream closed.
final class Collector: TCPStreamHandler {
    var received: [UInt8] = []
    var closeCount = 0
    var closeError: SocketError?
    var drainCount = 0
    let expected: Int
    let onComplete: (Collector) -> Void
    let onClose: (Collector) -> Void

    init(expected: Int = .max, onComplete: @escaping (Collector) -> Void = { _ in },
         onClose: @escaping (Collector) -> Void = { _ in }) {
        self.expected = expected
        self.onComplete = onComplete
        self.onClose = onClose
    }

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        received.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        if received.count == expected { onComplete(self) }
    }
    func streamDidDrainWrites(_ stream: TCPStream) { drainCount += 1 }
    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        closeCount += 1
        closeError = error
        onClose(self)
    }
}

/// Deterministic test payloads.
func pattern(_ count: Int, seed: Int = 0) -> [UInt8] {
    let cycle = (0..<251).map { UInt8(($0 + seed * 7) % 251) }
    var out: [UInt8] = []
    out.reserveCapacity(count + cycle.count)
    while out.count < count { out.append(contentsOf: cycle) }
    out.removeLast(out.count - count)
    return out
}

/// Connects from `loop` and calls `body` on the loop with the result.
func connect(to port: Int, host: String = "127.0.0.1", on loop: EventLoop,
             _ body: @escaping @Sendable (Result<TCPStream, SocketError>) -> Void) {
    loop.execute {
        TCPStream.connect(host: host, port: port, on: loop, timeout: .seconds(5)) { body($0) }
    }
}

/// TCP sockets this process holds open whose local or remote port is `port` (IPv4 and IPv6).
/// Scoped to one port so suites running in parallel, with sockets of their own, cannot change
/// the count. Each of our fds is asked its own addresses (getsockname, getpeername): reading
/// the machine-wide /proc/net/tcp instead missed lines while other processes' sockets changed.
func openSocketCount(port: Int) -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    var count = 0
    for name in fds {
        guard let fd = Int32(name) else { continue }
        var type: Int32 = 0
        var typeLength = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &typeLength) == 0, type == Int32(SOCK_STREAM.rawValue) else { continue }
        if socketPort(fd, getsockname) == port || socketPort(fd, getpeername) == port { count += 1 }
    }
    return count
}

/// The port `name` (getsockname or getpeername) gives for `fd`, nil unless it is IPv4 or IPv6.
private func socketPort(_ fd: Int32, _ name: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32) -> Int? {
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let ok = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { name(fd, $0, &length) == 0 }
    }
    guard ok else { return nil }
    switch Int32(storage.ss_family) {
    case AF_INET:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    case AF_INET6:
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
        }
    default:
        return nil
    }
}

/// A blocking loopback client: sends `bytes`, shuts down its sending side, then reads until
/// the server closes (or 5 s pass). `closeAfterEOF` closes the socket right after the
/// shutdown instead, so later server writes fail. Runs on a thread of its own.
func halfClosingClient(port: Int, send bytes: [UInt8], closeAfterEOF: Bool = false) async -> [UInt8]? {
    await withCheckedContinuation { (c: CheckedContinuation<[UInt8]?, Never>) in
        Thread {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { c.resume(returning: nil); return }
            defer { Glibc.close(fd) }
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var addr = sockaddr_in()
            addr.sin_family = sa_family_t(AF_INET)
            addr.sin_port = in_port_t(UInt16(port).bigEndian)
            inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr)
            let rc = withUnsafePointer(to: &addr) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard rc == 0, bytes.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count,
                  shutdown(fd, Int32(SHUT_WR)) == 0 else { c.resume(returning: nil); return }
            if closeAfterEOF { c.resume(returning: []); return }
            var received: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if n == 0 { break }
                if n < 0 { c.resume(returning: nil); return }
                received.append(contentsOf: chunk[0..<n])
            }
            c.resume(returning: received)
        }.start()
    }
}

/// Names of this process's threads.
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}

/// Counts what a loop reports: its wake-ups, the eventfd writes that woke it, its timers.
final class LoopEventCount: EventLoopProbe {
    let wakeUps = Atomic(0)
    let wakeUpsSignalled = Atomic(0)
    let timersScheduled = Atomic(0)
    func loopWokeUp() { wakeUps.add(1, ordering: .relaxed) }
    func wakeUpSignalled() { wakeUpsSignalled.add(1, ordering: .relaxed) }
    func timerScheduled() { timersScheduled.add(1, ordering: .relaxed) }
}

/// Live registrations over `loops`, each read on its own loop (blocking the caller briefly).
func registrations(on loops: [EventLoop]) -> Int {
    loops.reduce(0) { total, loop in
        let count = Mutex(0)
        let done = DispatchSemaphore(value: 0)
        loop.execute { count.withLock { $0 = loop.registrationCount }; done.signal() }
        done.wait()
        return total + count.withLock { $0 }
    }
}

/// Returns once every loop has run the jobs queued on it before the call.
func runQueuedWork(on loops: [EventLoop]) async {
    for loop in loops {
        let done = Waiter<Bool>()
        loop.execute { done.fulfill(true) }
        _ = await done.value()
    }
}
