#if canImport(Glibc)
import Glibc
#endif
import Dispatch
internal import CLinux

/// A connected, non-blocking TCP socket (TCP_NODELAY set) owned by one loop.
///
/// `@unchecked Sendable` so it can be handed to its loop's thread (e.g. from `onAccept`);
/// every member is confined to `loop`: call it from that thread only (hop with
/// `loop.execute`). Reads stop after a read that did not fill the buffer (the socket had no
/// more: one recv per request instead of a second one that only says EAGAIN), or after 16 ×
/// 64 KiB per wake-up, for fairness; level-triggered epoll wakes the stream again for the rest.
package final class TCPStream: @unchecked Sendable, LoopRegistered {
    static let readsPerWakeup = 16

    package let loop: EventLoop
    /// Strongly held until `streamDidClose`, then released to break the usual cycle.
    package var handler: TCPStreamHandler?
    package var peerAddress: SocketAddress?

    private var fd: Int32
    private var registrationID: UInt64 = 0
    private var registeredEvents: UInt32 = 0
    private var writeBuffer: [UInt8] = []
    private var writeHead = 0
    private var readingPaused = false
    /// The peer sent EOF: reading is over for good (EPOLLIN off, or level-triggered epoll
    /// would report the EOF forever); writing goes on until the handler closes.
    private var readClosed = false
    private var closeWhenFlushed = false
    /// A write failed; the stream closes with this error on the next loop turn.
    private var pendingError: SocketError?
    package private(set) var isOpen = true

    init(fd: Int32, loop: EventLoop, peer: SocketAddress?) {
        self.fd = fd
        self.loop = loop
        self.peerAddress = peer
    }

    deinit {
        if fd >= 0 { Glibc.close(fd) }
    }

    /// The socket's fd, for tests that check the kernel's view.
    var fileDescriptor: Int32 { fd }

    /// recv(2) calls made on this stream so far, for tests of how reads are batched.
    private(set) var recvCalls = 0

    private var peerText: String { peerAddress?.description ?? "peer" }

    /// Registers a fresh socket for reading; closes the fd and returns false on failure.
    func attach() -> Bool {
        registrationID = loop.track(self)
        registeredEvents = CLINUX_EPOLLIN
        if loop.watch(fd: fd, id: registrationID, events: registeredEvents) != 0 {
            loop.untrack(registrationID)
            isOpen = false
            Glibc.close(fd)
            fd = -1
            return false
        }
        return true
    }

    /// Takes over an fd already in epoll (a finished connect) under a new id.
    func adoptWatched(oldID: UInt64) -> Bool {
        loop.untrack(oldID)
        registrationID = loop.track(self)
        registeredEvents = CLINUX_EPOLLIN
        if loop.rewatch(fd: fd, id: registrationID, events: registeredEvents) != 0 {
            loop.untrack(registrationID)
            loop.unwatch(fd: fd)
            isOpen = false
            Glibc.close(fd)
            fd = -1
            return false
        }
        return true
    }

    /// Accepted sockets start here, on their target loop.
    static func adopt(fd: Int32, peer: SocketAddress?, on loop: EventLoop,
                      onAccept: @Sendable (TCPStream) -> Void) {
        _ = clinux_set_nodelay(fd)
        let stream = TCPStream(fd: fd, loop: loop, peer: peer)
        guard stream.attach() else { return }
        onAccept(stream)
    }

    // MARK: - Writing

    /// Bytes accepted by `write` but not yet taken by the kernel; producers stop above
    /// their own limit and resume on `streamDidDrainWrites`.
    package var pendingWriteBytes: Int { writeBuffer.count - writeHead }

    /// Sends what the kernel takes now and buffers the rest (EPOLLOUT until drained).
    /// Ignored once the stream is closed or `closeAfterFlush` was called.
    package func write(_ bytes: UnsafeRawBufferPointer) {
        precondition(loop.inEventLoop, "TCPStream.write must be called on its loop")
        guard isOpen, pendingError == nil, !closeWhenFlushed, bytes.count > 0 else { return }
        var offset = 0
        if pendingWriteBytes == 0 {
            while offset < bytes.count {
                let n = clinux_send(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if n >= 0 { offset += n; continue }
                let e = errno
                if e == EINTR { continue }
                if e == EAGAIN || e == EWOULDBLOCK { break }
                fail(.fromErrno(e, "writing to \(peerText)"))
                return
            }
        }
        if offset < bytes.count {
            writeBuffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset...]).assumingMemoryBound(to: UInt8.self))
            updateInterest()
        }
    }

    package func write(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { write($0) }
    }

    /// On EPOLLOUT: push the buffer out, then report the drain (or finish a deferred close).
    private func flushBuffered() {
        while writeHead < writeBuffer.count {
            let n = writeBuffer.withUnsafeBytes { raw in
                clinux_send(fd, raw.baseAddress! + writeHead, raw.count - writeHead)
            }
            if n >= 0 { writeHead += n; continue }
            let e = errno
            if e == EINTR { continue }
            if e == EAGAIN || e == EWOULDBLOCK { break }
            fail(.fromErrno(e, "writing to \(peerText)"))
            return
        }
        if writeHead < writeBuffer.count {
            // Compact once the sent prefix dominates, so memmoves stay amortised O(1).
            if writeHead >= 1 << 20 && writeHead * 2 >= writeBuffer.count {
                writeBuffer.removeFirst(writeHead)
                writeHead = 0
            }
            return
        }
        writeBuffer = []
        writeHead = 0
        updateInterest()
        if closeWhenFlushed {
            close(error: nil)
            return
        }
        handler?.streamDidDrainWrites(self)
    }

    /// A write failed: drop the buffer and close on the next loop turn, so a handler that
    /// wrote from inside a callback isn't re-entered with `streamDidClose` mid-call.
    private func fail(_ error: SocketError) {
        guard pendingError == nil else { return }
        pendingError = error
        writeBuffer = []
        writeHead = 0
        let me = LoopBound(self, on: loop)
        if !loop.submit({ me.value.close(error: error) }) { close(error: error) }
    }

    // MARK: - Reading

    /// Stops delivering reads (the kernel buffer fills and TCP slows the peer down).
    package func pauseReading() {
        precondition(loop.inEventLoop, "TCPStream.pauseReading must be called on its loop")
        readingPaused = true
        updateInterest()
    }

    package func resumeReading() {
        precondition(loop.inEventLoop, "TCPStream.resumeReading must be called on its loop")
        readingPaused = false
        updateInterest()
    }

    private func readAvailable(ignorePause: Bool) {
        let buffer = loop.readBuffer
        var budget = ignorePause ? Int.max : Self.readsPerWakeup
        while isOpen && !readClosed && (ignorePause || !readingPaused) && budget > 0 {
            budget -= 1
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            recvCalls &+= 1
            if n > 0 {
                handler?.streamDidRead(self, UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                // A short read emptied the socket; what arrives later wakes the loop again. After
                // a hang-up the rest is read now, as the stream closes right after.
                if n < buffer.count && !ignorePause { return }
            } else if n == 0 {
                readClosed = true
                // After a failed write nothing can be answered: close as on a full close.
                guard pendingError == nil, let h = handler else {
                    close(error: pendingError)
                    return
                }
                updateInterest()
                h.streamDidReadEOF(self)
                return
            } else {
                let e = errno
                if e == EAGAIN || e == EWOULDBLOCK { return }
                if e == EINTR { continue }
                close(error: .fromErrno(e, "reading from \(peerText)"))
                return
            }
        }
    }

    // MARK: - Events

    func handleEvents(_ events: UInt32) {
        guard isOpen else { return }
        if events & CLINUX_EPOLLERR != 0 {
            let err = clinux_socket_error(fd)
            if err != 0 {
                close(error: .fromErrno(err, "connection to \(peerText)"))
                return
            }
        }
        if events & CLINUX_EPOLLOUT != 0 && pendingWriteBytes > 0 {
            flushBuffered()
            guard isOpen else { return }
        }
        // HUP means the connection is gone both ways (reset, in practice): read what is
        // left even when paused, or level-triggered HUP would spin the loop.
        let hangUp = events & CLINUX_EPOLLHUP != 0
        if events & CLINUX_EPOLLIN != 0 || hangUp {
            readAvailable(ignorePause: hangUp)
            guard isOpen else { return }
        }
        if hangUp { close(error: pendingError) }
    }

    private func updateInterest() {
        guard isOpen else { return }
        var wanted: UInt32 = readingPaused || readClosed ? 0 : CLINUX_EPOLLIN
        if pendingWriteBytes > 0 { wanted |= CLINUX_EPOLLOUT }
        if wanted != registeredEvents {
            registeredEvents = wanted
            _ = loop.rewatch(fd: fd, id: registrationID, events: wanted)
        }
    }

    // MARK: - Closing

    /// Closes now, dropping unsent bytes; `streamDidClose` runs before this returns.
    /// Safe to call twice and from inside any handler callback.
    package func close() {
        precondition(loop.inEventLoop, "TCPStream.close must be called on its loop")
        close(error: pendingError)
    }

    /// Closes once every buffered byte is out (e.g. HTTP `Connection: close`); further
    /// writes are ignored. Closes now when nothing is buffered.
    package func closeAfterFlush() {
        precondition(loop.inEventLoop, "TCPStream.closeAfterFlush must be called on its loop")
        guard isOpen else { return }
        if pendingWriteBytes == 0 {
            close(error: pendingError)
        } else {
            closeWhenFlushed = true
        }
    }

    func close(error: SocketError?) {
        guard isOpen else { return }
        isOpen = false
        loop.unwatch(fd: fd)
        loop.untrack(registrationID)
        Glibc.close(fd)
        fd = -1
        writeBuffer = []
        writeHead = 0
        let h = handler
        handler = nil
        h?.streamDidClose(self, error: error)
    }

    func closeForShutdown() {
        close(error: SocketError(code: .loopShutDown, message:
            "the event loop \(loop.name) shut down; the connection to \(peerText) was closed"))
    }

    // MARK: - Connecting

    /// Opens a connection; `completion` runs once, on `loop`. Call on `loop`'s thread (hop
    /// with `loop.execute`). Host names resolve with getaddrinfo on a thread of their own
    /// (`DetachedThread`), never on the loop; each address is tried in turn until one answers. `timeout`
    /// covers resolution and all attempts.
    package static func connect(host: String, port: Int, on loop: EventLoop, timeout: Duration,
                               completion: @escaping (Result<TCPStream, SocketError>) -> Void) {
        precondition(loop.inEventLoop, "TCPStream.connect must be called on the loop's thread")
        let connector = Connector(host: host, port: port, loop: loop, timeout: timeout, completion: completion)
        connector.start()
    }
}
