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

/// Open socket fds of this process, as the kernel sees them.
func openSocketCount() -> Int {
    let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return fds.filter { fd in
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
        return target.hasPrefix("socket:")
    }.count
}
