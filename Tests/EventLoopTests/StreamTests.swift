import Dispatch
import Foundation
import Synchronization
import Testing
import TestWaits
@testable import EventLoop

// Serialized: the fd-leak test counts the process's sockets, and 2 shared cores run the rest.
@Suite("EventLoop: TCP streams on loopback", .serialized)
struct StreamTests {
    @Test("an echo server on 127.0.0.1 echoes 64 KiB to each of 200 concurrent clients")
    func echo200Clients() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = EchoHandler()
        }
        defer { listener.close() }
        let clients = 200, size = 64 * 1024
        let tally = Mutex((ok: 0, bad: [String]()))
        let done = Waiter<Bool>()
        @Sendable func report(_ problem: String?) {
            let finished = tally.withLock { t -> Bool in
                if let p = problem { t.bad.append(p) } else { t.ok += 1 }
                return t.ok + t.bad.count == clients
            }
            if finished { done.fulfill(true) }
        }
        for i in 0..<clients {
            connect(to: listener.localPort, on: group.next()) { result in
                switch result {
                case .failure(let e): report("client \(i): \(e)")
                case .success(let stream):
                    let payload = pattern(size, seed: i)
                    stream.handler = Collector(expected: size, onComplete: { c in
                        report(c.received == payload ? nil : "client \(i): echo differs")
                        stream.close()
                    }, onClose: { c in
                        if c.received.count < size { report("client \(i): closed early \(String(describing: c.closeError))") }
                    })
                    stream.write(payload)
                }
            }
        }
        #expect(await done.value(timeout: 15) == true)
        let t = tally.withLock { $0 }
        #expect(t.ok == clients)
        #expect(t.bad.isEmpty, "\(t.bad.prefix(3))")
    }

    @Test("8 MiB written to a slow reader arrive intact and the writer sees the drain")
    func largeWriteToSlowReader() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let size = 8 * 1024 * 1024
        let drained = Waiter<Int>()  // pending bytes seen right after write
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            let pendingAfterWrite = LoopBound(Box(0), on: stream.loop)
            let writer = Collector()
            stream.handler = DrainNotifier(inner: writer) { drained.fulfill(pendingAfterWrite.value.value) }
            stream.write(pattern(size))
            pendingAfterWrite.value.value = stream.pendingWriteBytes
        }
        defer { listener.close() }
        let received = Waiter<Bool>()
        connect(to: listener.localPort, on: group.loops[1]) { result in
            guard case .success(let stream) = result else { received.fulfill(false); return }
            let expected = pattern(size)
            let reader = SlowReader(expected: expected) { ok in received.fulfill(ok); stream.close() }
            stream.handler = reader
        }
        #expect(await received.value(timeout: 15) == true)
        let pending = await drained.value()
        #expect(pending != nil)
        #expect((pending ?? 0) > 0, "the write should have been buffered, so the drain is meaningful")
    }

    @Test("a peer's close reaches streamDidClose exactly once with no error")
    func peerCloseOnce() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let serverClosed = Waiter<Bool>()
        let serverSeen = Mutex((count: 0, errorIsNil: false, received: [UInt8]()))
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(onClose: { c in
                serverSeen.withLock { $0.count += 1; $0.errorIsNil = c.closeError == nil; $0.received = c.received }
                serverClosed.fulfill(true)
            })
        }
        defer { listener.close() }
        let clientClosed = Waiter<(Int, Bool)>()
        connect(to: listener.localPort, on: group.loops[0]) { result in
            guard case .success(let stream) = result else { clientClosed.fulfill((0, false)); return }
            let c = Collector()
            stream.handler = c
            stream.write(Array("bye".utf8))
            stream.close()
            stream.close()  // a second close is harmless
            clientClosed.fulfill((c.closeCount, c.closeError == nil))
        }
        let local = await clientClosed.value()
        #expect(local?.0 == 1)
        #expect(local?.1 == true)
        #expect(await serverClosed.value() == true)
        // Once neither stream is registered no epoll event can reach it, and once each loop has
        // run what was queued before, no queued close can either: a second close would show now.
        #expect(try await eventually { registrations(on: group.loops) == 1 }, "only the listener stays registered")
        await runQueuedWork(on: group.loops)
        let seen = serverSeen.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.errorIsNil)
        #expect(seen.received == Array("bye".utf8))
    }

    @Test("a request that arrives whole is read with one recv, not a second one that only says EAGAIN")
    func shortReadEndsTheReads() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let serverStream = Waiter<TCPStream>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(expected: 300, onComplete: { _ in serverStream.fulfill(stream) })
        }
        defer { listener.close() }
        let client = Waiter<TCPStream>()
        connect(to: listener.localPort, on: loop) { result in
            guard case .success(let stream) = result else { return }
            stream.handler = Collector()
            stream.write([UInt8](repeating: 0x61, count: 300))
            client.fulfill(stream)
        }
        let stream = try #require(await serverStream.value())
        // A second recv would follow the first in the same turn, before a job queued now runs.
        let calls = Waiter<Int>()
        loop.execute { calls.fulfill(stream.recvCalls) }
        #expect(await calls.value() == 1)
        let clientStream = await client.value()
        loop.execute { clientStream?.close() }
    }

    @Test("a peer that shuts down its sending side still reads the answer; the loop sleeps meanwhile")
    func halfCloseAnswered() async throws {
        let probe = LoopEventCount()
        let group = try EventLoopGroup(loopCount: 1, probe: probe)
        defer { group.shutdown() }
        let seen = Mutex((eofs: 0, closes: 0, error: false, wakeUpsAtEOF: 0, wakeUpsAtAnswer: 0))
        let closed = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = LateAnswerer(delay: .milliseconds(200), onEOF: {
                seen.withLock { $0.eofs += 1; $0.wakeUpsAtEOF = probe.wakeUps.load(ordering: .relaxed) }
            }, onAnswer: {
                seen.withLock { $0.wakeUpsAtAnswer = probe.wakeUps.load(ordering: .relaxed) }
            }, onClose: { error in
                seen.withLock { $0.closes += 1; $0.error = error != nil }
                closed.fulfill(true)
            })
        }
        defer { listener.close() }
        let answer = await halfClosingClient(port: listener.localPort, send: Array("question".utf8))
        #expect(answer == Array("answer to question".utf8))
        #expect(await closed.value() == true)
        // Unregistered and past what was queued: a second close would show now.
        #expect(try await eventually { registrations(on: group.loops) == 1 }, "only the listener stays registered")
        await runQueuedWork(on: group.loops)
        let s = seen.withLock { $0 }
        #expect(s.eofs == 1)
        #expect(s.closes == 1)
        #expect(!s.error)
        // The EOF stays readable: still watching EPOLLIN would wake the loop thousands of times.
        #expect(s.wakeUpsAtAnswer - s.wakeUpsAtEOF < 20, "\(s.wakeUpsAtAnswer - s.wakeUpsAtEOF) wake-ups in 200 ms")
        #expect(openSocketCount(port: listener.localPort) == 1, "only the listener")
    }

    @Test("after the peer's EOF a write that fails still closes the stream, once, with the error")
    func halfCloseWriteError() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let closes = Mutex((count: 0, error: SocketError?.none))
        let closed = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = LateAnswerer(delay: .milliseconds(10), repeats: 200, onClose: { error in
                closes.withLock { $0.count += 1; $0.error = error }
                closed.fulfill(true)
            })
        }
        defer { listener.close() }
        _ = await halfClosingClient(port: listener.localPort, send: Array("gone".utf8), closeAfterEOF: true)
        #expect(await closed.value() == true)
        #expect(try await eventually { registrations(on: group.loops) == 1 }, "only the listener stays registered")
        await runQueuedWork(on: group.loops)
        let c = closes.withLock { $0 }
        #expect(c.count == 1)
        #expect(c.error != nil, "the peer is gone: the close reports why")
        #expect(openSocketCount(port: listener.localPort) == 1, "only the listener")
    }

    @Test("connecting to a closed port fails promptly with connection refused")
    func connectRefused() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { _ in }
        let port = listener.localPort
        listener.close()
        let outcome = Waiter<SocketError?>()
        connect(to: port, on: group.loops[0]) { result in
            switch result {
            case .success(let stream): stream.close(); outcome.fulfill(nil)
            case .failure(let e): outcome.fulfill(e)
            }
        }
        let error = try #require(await outcome.value())
        #expect(error?.code == .connectionRefused)
        #expect(error?.description.contains("connection refused") == true)
    }

    @Test("an IPv6 listener on :: accepts a client on ::1")
    func ipv6Echo() async throws {
        let group = try EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let listener = try TCPListener.bind(host: "::", port: 0, group: group) { $0.handler = EchoHandler() }
        defer { listener.close() }
        let echoed = Waiter<(String, [UInt8])>()
        connect(to: listener.localPort, host: "::1", on: group.loops[0]) { result in
            guard case .success(let stream) = result else { echoed.fulfill(("", [])); return }
            let peer = stream.peerAddress?.description ?? ""
            stream.handler = Collector(expected: 5, onComplete: { c in echoed.fulfill((peer, c.received)); stream.close() })
            stream.write(Array("hello".utf8))
        }
        let result = await echoed.value()
        #expect(result?.0 == "[::1]:\(listener.localPort)")
        #expect(result?.1 == Array("hello".utf8))
    }

    @Test("closeAfterFlush delivers every buffered byte, then closes")
    func closeAfterFlush() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let size = 1024 * 1024
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = EchoHandler()
            stream.write(pattern(size, seed: 3))
            stream.closeAfterFlush()
            stream.write([1, 2, 3])  // ignored after closeAfterFlush
        }
        defer { listener.close() }
        let result = Waiter<(Bool, Bool)>()
        connect(to: listener.localPort, on: group.loops[1]) { r in
            guard case .success(let stream) = r else { result.fulfill((false, false)); return }
            stream.handler = Collector(onClose: { c in
                result.fulfill((c.received == pattern(size, seed: 3), c.closeError == nil))
            })
        }
        let r = await result.value()
        #expect(r?.0 == true)
        #expect(r?.1 == true)
    }

    @Test("500 connect/close cycles leave no socket fd and no loop registration behind")
    func noFdLeak() async throws {
        let group = try EventLoopGroup(loopCount: 2)
        defer { group.shutdown() }
        let cycles = 500
        let serverCloses = Mutex(0)
        let serverDone = Waiter<Bool>()
        let listener = try TCPListener.bind(host: "127.0.0.1", port: 0, group: group) { stream in
            stream.handler = Collector(onClose: { _ in
                if serverCloses.withLock({ $0 += 1; return $0 }) == cycles { serverDone.fulfill(true) }
            })
        }
        defer { listener.close() }
        let before = openSocketCount(port: listener.localPort)
        #expect(before == 1, "only the listener")
        let clientDone = Waiter<Int>()
        // Ten chains of 50 sequential cycles each.
        let failures = Mutex(0)
        let finishedChains = Mutex(0)
        @Sendable func cycle(_ remaining: Int, on loop: EventLoop) {
            if remaining == 0 {
                if finishedChains.withLock({ $0 += 1; return $0 }) == 10 { clientDone.fulfill(failures.withLock { $0 }) }
                return
            }
            connect(to: listener.localPort, on: loop) { result in
                switch result {
                case .success(let stream): stream.close()
                case .failure: failures.withLock { $0 += 1 }
                }
                cycle(remaining - 1, on: loop)
            }
        }
        for i in 0..<10 { cycle(cycles / 10, on: group.loops[i % 2]) }
        #expect(await clientDone.value(timeout: 15) == 0)
        #expect(await serverDone.value(timeout: 15) == true)
        #expect(openSocketCount(port: listener.localPort) == before)
        var registrations = 0
        for loop in group.loops {
            let w = Waiter<Int>()
            loop.execute { w.fulfill(loop.registrationCount) }
            registrations += await w.value() ?? -1
        }
        #expect(registrations == 1, "only the listener stays registered")
        listener.close()
        #expect(openSocketCount(port: listener.localPort) == 0)
    }
}
