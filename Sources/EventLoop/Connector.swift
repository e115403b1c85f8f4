#if canImport(Glibc)
import Glibc
#endif
internal import CLinux

/// One connect operation: resolve, try each address, hand the socket to a `TCPStream`.
/// Confined to its loop.
final class Connector: LoopRegistered {
    let host: String
    let port: Int
    let loop: EventLoop
    let timeout: Duration
    private var completion: ((Result<TCPStream, SocketError>) -> Void)?
    private var id: UInt64 = 0
    private var fd: Int32 = -1
    private var watched = false
    private var addresses: [SocketAddress] = []
    private var index = 0
    private var current: SocketAddress?
    private var lastError: SocketError?
    private var timer: EventLoop.Timer?

    init(host: String, port: Int, loop: EventLoop, timeout: Duration,
         completion: @escaping (Result<TCPStream, SocketError>) -> Void) {
        self.host = host
        self.port = port
        self.loop = loop
        self.timeout = timeout
        self.completion = completion
    }

    func start() {
        id = loop.track(self)
        timer = loop.schedule(after: timeout) { [self] in
            finish(.failure(SocketError(code: .timedOut, errno: ETIMEDOUT, message:
                "connect to \(host):\(port) timed out after \(timeout); check that the peer is reachable and listening")))
        }
        if Self.isNumeric(host) {
            // Numeric addresses resolve without I/O, so no thread hop is needed.
            resolved(SocketAddress.resolve(host: host, port: port, passive: false))
            return
        }
        let me = LoopBound(self, on: loop)
        let (name, number, target) = (host, port, loop)
        let started = DetachedThread.start(name: "resolve") {
            let result = SocketAddress.resolve(host: name, port: number, passive: false)
            target.execute { me.value.resolved(result) }
        }
        if !started {
            resolved(.failure(SocketError(code: .system, errno: EAGAIN, message:
                "resolving \(host): no thread could be started for the lookup (the process is at its thread limit)")))
        }
    }

    private static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    private func resolved(_ result: Result<[SocketAddress], SocketError>) {
        guard completion != nil else { return }
        switch result {
        case .failure(let error): finish(.failure(error))
        case .success(let list):
            addresses = list
            tryNext()
        }
    }

    private func tryNext() {
        while index < addresses.count {
            let address = addresses[index]
            index += 1
            current = address
            let s = clinux_socket(address.family)
            if s < 0 {
                lastError = .fromErrno(errno, "socket for \(address)")
                continue
            }
            _ = clinux_set_nodelay(s)
            let rc = address.withSockAddr { Glibc.connect(s, $0, $1) }
            let e = rc == 0 ? 0 : errno
            if rc == 0 || e == EINPROGRESS {
                fd = s
                let w = loop.watch(fd: s, id: id, events: CLINUX_EPOLLOUT)
                if w == 0 {
                    watched = true
                    return  // rc == 0 also reports EPOLLOUT at once; one success path.
                }
                lastError = .fromErrno(w, "epoll_ctl for \(address)")
                Glibc.close(s)
                fd = -1
                continue
            }
            Glibc.close(s)
            lastError = .fromErrno(e, "connect to \(address)")
        }
        finish(.failure(lastError ?? SocketError(code: .hostNotFound, message:
            "\(host) has no address to connect to; check the host name")))
    }

    func handleEvents(_ events: UInt32) {
        guard completion != nil, fd >= 0 else { return }
        var err = clinux_socket_error(fd)
        if err == 0 && events & (CLINUX_EPOLLERR | CLINUX_EPOLLHUP) != 0 { err = ECONNREFUSED }
        if err == 0 {
            let stream = TCPStream(fd: fd, loop: loop, peer: current)
            fd = -1
            watched = false
            let oldID = id
            id = 0
            if stream.adoptWatched(oldID: oldID) {
                finish(.success(stream))
            } else {
                finish(.failure(SocketError(code: .system, message:
                    "registering the connection to \(host):\(port) failed; retry")))
            }
            return
        }
        loop.unwatch(fd: fd)
        watched = false
        Glibc.close(fd)
        fd = -1
        lastError = .fromErrno(err, "connect to \(current?.description ?? "\(host):\(port)")")
        tryNext()
    }

    func closeForShutdown() {
        finish(.failure(SocketError(code: .loopShutDown, message:
            "the event loop \(loop.name) shut down while connecting to \(host):\(port)")))
    }

    private func finish(_ result: Result<TCPStream, SocketError>) {
        guard let done = completion else { return }
        completion = nil
        timer?.cancel()
        timer = nil
        if fd >= 0 {
            if watched { loop.unwatch(fd: fd) }
            Glibc.close(fd)
            fd = -1
        }
        if id != 0 { loop.untrack(id); id = 0 }
        done(result)
    }
}
