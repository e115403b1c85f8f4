import Dispatch
import Synchronization
import EventLoop

/// Apple's address answering TCP and nothing more: connections are accepted, what the client
/// sends (its TLS ClientHello) is read and dropped, and nothing is ever written, so the client's
/// TLS handshake waits until its own timeout. Reading (rather than leaving the bytes in the
/// kernel) lets a client that gives up be noticed and its socket closed, so a long silence
/// under a reconnecting client does not pile up file descriptors.
final class MockSilentListener: Sendable {
    private let listener: TCPListener
    private let streams: SilentStreams

    /// Binds and listens on `host`:`port` (SO_REUSEADDR, as the TLS listener does); `accepted`
    /// runs for each connection taken, on its loop.
    static func start(host: String, port: Int, group: EventLoopGroup,
                      accepted: @escaping @Sendable () -> Void) throws -> MockSilentListener {
        let streams = SilentStreams()
        let listener = try TCPListener.bind(host: host, port: port, group: group) { stream in
            accepted()
            let handler = SilentHandler(streams: streams)
            stream.handler = handler
            streams.all.withLock { $0[ObjectIdentifier(handler)] = LoopBound(stream, on: stream.loop) }
        }
        return MockSilentListener(listener: listener, streams: streams)
    }

    private init(listener: TCPListener, streams: SilentStreams) {
        self.listener = listener
        self.streams = streams
    }

    /// Stops accepting and closes every connection held (the client sees its handshake cut, as
    /// when the server behind the silent address is restarted). Waits (bounded) for the loops.
    func close() {
        listener.close()
        let all = streams.all.withLock { Array($0.values) }
        let done = DispatchGroup()
        for bound in all {
            done.enter()
            bound.loop.execute {
                bound.value.close()
                done.leave()
            }
        }
        // A loop already shut down dropped its streams with it; don't wait forever for one.
        _ = done.wait(timeout: .now() + 2)
    }
}

/// The held connections, by handler; touched from the loops and from `close`.
private final class SilentStreams: Sendable {
    let all = Mutex<[ObjectIdentifier: LoopBound<TCPStream>]>([:])
}

/// Reads and drops; closes when the client does.
private final class SilentHandler: TCPStreamHandler {
    private let streams: SilentStreams

    init(streams: SilentStreams) {
        self.streams = streams
    }

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {}
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        let key = ObjectIdentifier(self)
        streams.all.withLock { $0[key] = nil }
    }
}
