#if canImport(Glibc)
import Glibc
#endif
import Dispatch
internal import CLinux

/// A listening socket (SO_REUSEADDR) whose accept loop runs on one loop of the group and
/// deals accepted connections round robin over all of them.
///
/// `@unchecked Sendable`: the fd and the back-off state are touched only on `loop`;
/// `close()` from another thread hops there. `localPort` is immutable.
package final class TCPListener: @unchecked Sendable, LoopRegistered {
    /// Pause after EMFILE/ENFILE, so a full fd table doesn't spin the accept loop at 100%.
    static let acceptBackoff: Duration = .milliseconds(100)

    let loop: EventLoop
    let group: EventLoopGroup
    private var fd: Int32
    private var id: UInt64 = 0
    private var backoff: EventLoop.Timer?
    private let onAccept: @Sendable (TCPStream) -> Void
    /// The bound port, useful after binding port 0 in tests.
    package let localPort: Int
    package let localAddress: SocketAddress

    private init(fd: Int32, address: SocketAddress, loop: EventLoop, group: EventLoopGroup,
                 onAccept: @escaping @Sendable (TCPStream) -> Void) {
        self.fd = fd
        self.localAddress = address
        self.localPort = address.port
        self.loop = loop
        self.group = group
        self.onAccept = onAccept
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// Binds and listens on `host` ("0.0.0.0", "::" for both families, "127.0.0.1"…), port 0
    /// for any free port. `onAccept` runs on the accepted stream's loop; set the handler there.
    package static func bind(host: String, port: Int, group: EventLoopGroup, backlog: Int32 = 1024,
                            onAccept: @escaping @Sendable (TCPStream) -> Void) throws -> TCPListener {
        let (fd, address) = try boundSocket(host: host, port: port)
        if listen(fd, backlog) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SocketError.fromErrno(e, "listen on \(address)")
        }
        let bound = SocketAddress.of(fd: fd, peer: false) ?? address
        let listener = TCPListener(fd: fd, address: bound, loop: group.next(), group: group, onAccept: onAccept)
        if let error = listener.onLoopAndWait({ listener.register() }) ?? nil {
            throw error
        }
        return listener
    }

    /// A socket bound to `host`:`port` with SO_REUSEADDR, not yet listening (a `PortHold` never
    /// listens). Blocking (it resolves `host`).
    static func boundSocket(host: String, port: Int) throws(SocketError) -> (fd: Int32, address: SocketAddress) {
        let address = try SocketAddress.resolve(host: host, port: port, passive: true).get()[0]
        let fd = clinux_socket(address.family)
        guard fd >= 0 else { throw SocketError.fromErrno(errno, "socket for \(address)") }
        _ = clinux_set_reuseaddr(fd)
        if address.withSockAddr({ Glibc.bind(fd, $0, $1) }) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SocketError.fromErrno(e, "bind to \(address)")
        }
        return (fd, address)
    }

    /// Runs `body` on the loop and waits for it; nil when the loop has shut down.
    private func onLoopAndWait<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T? {
        if loop.inEventLoop { return body() }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        guard loop.submit({ box.value = body(); done.signal() }) else { return nil }
        done.wait()
        return box.value
    }

    private func register() -> SocketError? {
        id = loop.track(self)
        let e = loop.watch(fd: fd, id: id, events: CLINUX_EPOLLIN)
        if e != 0 {
            loop.untrack(id)
            id = 0
            Glibc.close(fd)
            fd = -1
            return .fromErrno(e, "epoll_ctl for the listener on \(localAddress)")
        }
        return nil
    }

    /// Accepts until EAGAIN; each connection is handed to its target loop through `execute`.
    func handleEvents(_ events: UInt32) {
        while fd >= 0 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let (client, peer): (Int32, SocketAddress?) = withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    let c = clinux_accept4(fd, sa, &length)
                    return (c, c >= 0 ? SocketAddress(sa, length: length) : nil)
                }
            }
            if client >= 0 {
                let target = group.next()
                let onAccept = self.onAccept
                let accepted = target.submit {
                    TCPStream.adopt(fd: client, peer: peer, on: target, onAccept: onAccept)
                }
                if !accepted { Glibc.close(client) }
                continue
            }
            let e = errno
            switch e {
            case EAGAIN, EWOULDBLOCK:
                return
            case EINTR, ECONNABORTED, EPROTO, EPERM:
                continue  // that one connection died before we took it; keep draining
            default:
                // EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything unexpected: stop watching for
                // a while instead of spinning on a readiness we can't consume.
                pauseAccepting()
                return
            }
        }
    }

    private func pauseAccepting() {
        guard fd >= 0, backoff == nil else { return }
        _ = loop.rewatch(fd: fd, id: id, events: 0)
        backoff = loop.schedule(after: Self.acceptBackoff) { [self] in
            backoff = nil
            if fd >= 0 { _ = loop.rewatch(fd: fd, id: id, events: CLINUX_EPOLLIN) }
        }
    }

    /// Stops accepting and closes the socket; connections already accepted stay open.
    /// From another thread it waits until the loop has closed it. Safe to call twice.
    package func close() {
        if onLoopAndWait({ self.closeOnLoop() }) == nil {
            // The loop is gone, so no thread touches the fd any more.
            if fd >= 0 { Glibc.close(fd); fd = -1 }
        }
    }

    private func closeOnLoop() {
        guard fd >= 0 else { return }
        backoff?.cancel()
        backoff = nil
        loop.unwatch(fd: fd)
        if id != 0 { loop.untrack(id); id = 0 }
        Glibc.close(fd)
        fd = -1
    }

    func closeForShutdown() { closeOnLoop() }
}

/// Carries a result from the loop thread back to a thread waiting on a semaphore, which
/// orders the write before the read: hence `@unchecked Sendable`.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
