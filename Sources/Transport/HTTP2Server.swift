import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2

/// What the owner of a server connection hears, on the connection's loop.
package protocol HTTP2ServerConnectionDelegate: AnyObject {
    /// A complete request: answer with `respond` or `reset`, now or later (on the loop).
    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2Request, stream id: Int32)
    func connection(_ connection: HTTP2ServerConnection, streamDidClose id: Int32, errorCode: UInt32)
    /// Once. `error` is nil when we closed it ourselves.
    func connection(_ connection: HTTP2ServerConnection, didClose error: TransportError?)
}

/// One accepted TLS + HTTP/2 connection. Not `Sendable`: every member except `loop`, `id` and
/// `peerAddress` is confined to `loop`; another thread reaches it through a `LoopBound`.
package final class HTTP2ServerConnection {
    package let loop: EventLoop
    package let id: Int
    package let peerAddress: String
    private let channel: TLSChannel
    fileprivate var h2: HTTP2ServerSession!
    fileprivate var delegate: HTTP2ServerConnectionDelegate?
    package private(set) var isClosed = false
    private var closingLocally = false

    init(id: Int, channel: TLSChannel) {
        self.loop = channel.loop
        self.id = id
        self.peerAddress = channel.stream.peerAddress?.description ?? "unknown"
        self.channel = channel
    }

    package var openStreamCount: Int { h2?.openStreamCount ?? 0 }

    /// The client certificate the TLS handshake verified (DER), if the server's context asked
    /// for one and the client sent one; nil before the handshake completes.
    package var peerCertificateDER: [UInt8]? { channel.tls.peerCertificateDER }

    package func respond(stream id: Int32, status: Int, headers: [HTTP2Header], body: [UInt8]) {
        guard !isClosed else { return }
        // A stream the client already reset cannot be answered; that is not our failure.
        try? h2.respond(stream: id, status: status, headers: headers, body: body)
        channel.scheduleFlush()
    }

    package func reset(stream id: Int32, errorCode: UInt32) {
        guard !isClosed else { return }
        h2.reset(stream: id, errorCode: errorCode)
        channel.scheduleFlush()
    }

    /// Sends a new SETTINGS_MAX_CONCURRENT_STREAMS, as Apple does at run time.
    package func updateMaxConcurrentStreams(_ value: UInt32) {
        guard !isClosed else { return }
        h2.updateMaxConcurrentStreams(value)
        channel.scheduleFlush()
    }

    package func goAway(lastStreamID: Int32? = nil, errorCode: UInt32 = HTTP2ErrorCode.noError, debugData: [UInt8] = []) {
        guard !isClosed else { return }
        h2.goAway(lastStreamID: lastStreamID, errorCode: errorCode, debugData: debugData)
        channel.flush()
    }

    /// Closes now: with `abruptly`, the socket is cut without GOAWAY or close_notify (a crash, to the client).
    package func close(abruptly: Bool = false) {
        guard !isClosed else { return }
        closingLocally = true
        if abruptly {
            channel.close(TransportError(.closedLocally, "closed by us"))
        } else {
            h2.goAway(debugData: [])
            channel.closeGracefully(TransportError(.closedLocally, "closed by us"))
        }
    }
}

extension HTTP2ServerConnection: TLSChannelUpper {
    func channelDidEstablish(_ channel: TLSChannel) {}

    func channel(_ channel: TLSChannel, didRead plaintext: UnsafeRawBufferPointer) {
        do {
            try h2.receive(plaintext)
        } catch {
            // Gracefully: the GOAWAY nghttp2 queued for the client's mistake goes out first, so
            // the client learns why (PROTOCOL_ERROR, FLOW_CONTROL_ERROR) instead of seeing a cut.
            channel.closeGracefully(TransportError(http2: error, "the client at \(peerAddress) broke HTTP/2"))
            return
        }
        // The client sent GOAWAY and no stream is left: nghttp2 reads nothing more (a PING would
        // go unanswered), so say goodbye rather than leave the client waiting. After our own
        // GOAWAY the client closes: it may still be learning which of its streams were refused.
        if h2.goAwayReceived && !h2.wantsRead {
            closingLocally = true
            channel.closeGracefully(TransportError(.closedLocally, "the client said GOAWAY and no stream is open"))
        }
    }

    func channelTakeOutput(_ channel: TLSChannel, into buffer: inout [UInt8]) {
        h2.takeOutput(into: &buffer)
    }

    func channel(_ channel: TLSChannel, didClose error: TransportError?) {
        guard !isClosed else { return }
        isClosed = true
        h2.terminate()
        let delegate = self.delegate
        self.delegate = nil
        delegate?.connection(self, didClose: closingLocally ? nil : error)
    }
}

extension HTTP2ServerConnection: HTTP2ServerDelegate {
    package func session(_ session: HTTP2ServerSession, didReceive request: HTTP2Request, stream id: Int32) {
        delegate?.connection(self, didReceive: request, stream: id)
    }

    package func session(_ session: HTTP2ServerSession, streamDidClose id: Int32, errorCode: UInt32) {
        delegate?.connection(self, streamDidClose: id, errorCode: errorCode)
    }
}

/// A TLS + HTTP/2 listener: each accepted connection gets a TLS handshake (ALPN h2) and an
/// nghttp2 server session on one of the group's loops.
package final class HTTP2Server: Sendable {
    private let listener: TCPListener
    package var port: Int { listener.localPort }

    /// - Parameter onConnection: runs on the connection's loop once TLS is set up; returns the
    ///   delegate that serves it (held strongly until the connection closes), or nil to refuse it.
    package static func start(host: String = "127.0.0.1", port: Int = 0, tls: TLSContext, group: EventLoopGroup,
                             maxConcurrentStreams: UInt32, handshakeTimeout: Duration = .seconds(10),
                             onConnection: @escaping @Sendable (HTTP2ServerConnection) -> HTTP2ServerConnectionDelegate?) throws -> HTTP2Server {
        let counter = IDCounter()
        let listener = try TCPListener.bind(host: host, port: port, group: group) { stream in
            let session: TLSSession
            do {
                session = try TLSSession(serverContext: tls)
            } catch {
                stream.close()
                return
            }
            let channel = TLSChannel(stream: stream, tls: session)
            let connection = HTTP2ServerConnection(id: counter.next(), channel: channel)
            do {
                connection.h2 = try HTTP2ServerSession(delegate: connection, maxConcurrentStreams: maxConcurrentStreams)
            } catch {
                stream.close()
                return
            }
            guard let delegate = onConnection(connection) else {
                stream.close()
                return
            }
            connection.delegate = delegate
            channel.start(upper: connection, handshakeTimeout: handshakeTimeout, isClient: false)
        }
        return HTTP2Server(listener: listener)
    }

    private init(listener: TCPListener) {
        self.listener = listener
    }

    /// Stops accepting; open connections stay until their owners close them.
    package func close() {
        listener.close()
    }
}

/// Connection ids, unique per server, from any loop.
private final class IDCounter: Sendable {
    private let value = Atomic<Int>(0)
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}
