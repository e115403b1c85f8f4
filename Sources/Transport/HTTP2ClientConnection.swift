import EventLoop
import OpenSSLSupport
import HTTP2

/// What the owner of a client connection hears, on the connection's loop.
package protocol HTTP2ClientConnectionDelegate: AnyObject {
    /// Exactly once per stream that `submitRequest` returned, including when the connection is
    /// lost, with the tag it was submitted with.
    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>)
    /// Every SETTINGS from the server after the first (which completes `connect`), with the live stream limit.
    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32)
    /// The server is going away: stop sending here; streams above `lastStreamID` (their tags in
    /// `refused`, in stream order) complete as not processed, after this call.
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                    refused: [UInt64])
    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection)
    /// Once, after every open stream has completed. `error` is nil when we closed it ourselves.
    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?)
}

/// A TLS + HTTP/2 client connection on an event loop: TCP, TLS (ALPN h2, SNI, host-name
/// verification), then an nghttp2 session whose output is flushed in one TLS write per loop turn.
///
/// Not `Sendable`: every member except `loop` and `id` is confined to `loop`. To reach it from
/// another thread, carry it in a `LoopBound` into `loop.execute`.
package final class HTTP2ClientConnection {
    package let loop: EventLoop
    /// Tells connections apart in logs and pools.
    package let id: Int
    package let authority: String
    private let channel: TLSChannel
    /// The HTTP/2 session (read by the test seam that moves stream ids).
    private(set) var h2: HTTP2ClientSession!
    private weak var delegate: HTTP2ClientConnectionDelegate?
    private var onReady: ((Result<HTTP2ClientConnection, TransportError>) -> Void)?
    private var closeReason: TransportError?
    package private(set) var isClosed = false

    private init(id: Int, authority: String, channel: TLSChannel, delegate: HTTP2ClientConnectionDelegate) {
        self.loop = channel.loop
        self.id = id
        self.authority = authority
        self.channel = channel
        self.delegate = delegate
    }

    /// Connects, shakes hands and waits for the server's first SETTINGS (Apple's stream limit)
    /// before `completion` runs, once, on `loop`. Call on `loop`'s thread.
    ///
    /// - Parameters:
    ///   - serverName: the name the certificate must carry (and SNI); usually `host`.
    ///   - timeout: for the whole of TCP, TLS and the first SETTINGS.
    ///   - tcpConnected: runs on `loop` once the TCP connect is done, before the TLS handshake.
    package static func connect(host: String, port: Int, serverName: String? = nil, tls: TLSContext,
                               on loop: EventLoop, timeout: Duration, id: Int = 0,
                               delegate: HTTP2ClientConnectionDelegate,
                               tcpConnected: (() -> Void)? = nil,
                               completion: @escaping (Result<HTTP2ClientConnection, TransportError>) -> Void) {
        let start = ContinuousClock.now
        TCPStream.connect(host: host, port: port, on: loop, timeout: timeout) { result in
            switch result {
            case .failure(let error):
                completion(.failure(TransportError(error, while: "connecting to \(host):\(port)")))
            case .success(let stream):
                // The TCP part is done; what follows is TLS and HTTP/2 SETTINGS.
                tcpConnected?()
                let session: TLSSession
                do {
                    session = try TLSSession(context: tls, serverName: serverName ?? host)
                } catch {
                    stream.close()
                    completion(.failure(TransportError(tls: error)))
                    return
                }
                let authority = port == 443 ? host : "\(host):\(port)"
                let channel = TLSChannel(stream: stream, tls: session)
                let connection = HTTP2ClientConnection(id: id, authority: authority, channel: channel, delegate: delegate)
                do {
                    connection.h2 = try HTTP2ClientSession(delegate: connection)
                } catch {
                    stream.close()
                    completion(.failure(TransportError(http2: error, "starting the HTTP/2 session")))
                    return
                }
                connection.onReady = completion
                let remaining = max(timeout - (ContinuousClock.now - start), .milliseconds(1))
                channel.start(upper: connection, handshakeTimeout: remaining, isClient: true)
                loop.schedule(after: remaining) { [weak connection] in
                    guard let connection, connection.onReady != nil else { return }
                    // The channel's own handshake timer usually fires first; this one names the step either way.
                    let step: TransportError.Step = connection.channel.established ? .settings : .tlsHandshake
                    connection.close(TransportError(.timedOut, "\(host):\(port)", cause: .timedOut(step, within: timeout)))
                }
            }
        }
    }

    // MARK: State

    /// The server's live SETTINGS_MAX_CONCURRENT_STREAMS. Never have more streams open.
    package var remoteMaxConcurrentStreams: UInt32 { h2.remoteMaxConcurrentStreams }
    package var openStreamCount: Int { h2.openStreamCount }
    package var goAwayReceived: Bool { h2.goAwayReceived }
    /// True while new streams may be submitted.
    package var isUsable: Bool { !isClosed && !h2.goAwayReceived }

    // MARK: Operations

    /// Queues a request; its frames go out at the end of this loop turn, batched with others.
    package func submitRequest(method: String = "POST", path: String, headers: [HTTP2Header], body: [UInt8],
                               tag: UInt64 = 0) throws -> Int32 {
        guard !isClosed else {
            throw HTTP2Error(code: .sessionClosed, message: "the connection to \(authority) is closed")
        }
        let id = try h2.submitRequest(method: method, authority: authority, path: path, headers: headers, body: body, tag: tag)
        channel.scheduleFlush()
        return id
    }

    /// Queues a request whose fields are packed already (see `HTTP2ClientSession.submitRequest(_:shared:body:)`);
    /// start `request` with `HTTP2ClientSession.startRequest` and this connection's `authority`.
    /// `tag` comes back with the stream's completion.
    package func submitRequest(_ request: HTTP2HeaderBlock, shared: HTTP2HeaderBlock, body: [UInt8],
                               tag: UInt64 = 0) throws -> Int32 {
        guard !isClosed else {
            throw HTTP2Error(code: .sessionClosed, message: "the connection to \(authority) is closed")
        }
        let id = try h2.submitRequest(request, shared: shared, body: body, tag: tag)
        channel.scheduleFlush()
        return id
    }

    /// Each stream submitted and not yet completed, with its tag, in no particular order.
    package func forEachOpenStream(_ body: (_ id: Int32, _ tag: UInt64) -> Void) {
        h2.forEachOpenStream(body)
    }

    /// Resets a stream (its deadline passed); its completion reports `.cancelled`.
    package func cancel(stream id: Int32) {
        guard !isClosed else { return }
        h2.cancel(stream: id)
        channel.scheduleFlush()
    }

    package func ping() {
        guard !isClosed else { return }
        h2.ping()
        channel.scheduleFlush()
    }

    /// Closes now: every open stream completes with `.connectionClosed`, then `didClose(error)`.
    package func close(_ error: TransportError? = nil) {
        guard !isClosed else { return }
        if error == nil { h2.goAway() }
        closeReason = error
        channel.closeGracefully(error ?? TransportError(.closedLocally, "closed by us"))
    }
}

extension HTTP2ClientConnection: TLSChannelUpper {
    func channelDidEstablish(_ channel: TLSChannel) {}

    func channel(_ channel: TLSChannel, didRead plaintext: UnsafeRawBufferPointer) {
        do {
            try h2.receive(plaintext)
        } catch {
            // Gracefully: a GOAWAY nghttp2 queued for the server's mistake goes out first.
            let reason = TransportError(http2: error, "\(authority) broke HTTP/2")
            closeReason = reason
            channel.closeGracefully(reason)
        }
    }

    func channelTakeOutput(_ channel: TLSChannel, into buffer: inout [UInt8]) {
        h2.takeOutput(into: &buffer)
    }

    func channel(_ channel: TLSChannel, didClose error: TransportError?) {
        guard !isClosed else { return }
        isClosed = true
        let reason = closeReason ?? error
        h2.terminate()
        if let ready = onReady {
            onReady = nil
            ready(.failure(reason ?? TransportError(.closed, "\(authority) closed the connection before its SETTINGS")))
            return
        }
        let isLocal = reason?.code == .closedLocally
        delegate?.connection(self, didClose: isLocal ? nil : reason)
    }
}

extension HTTP2ClientConnection: HTTP2ClientDelegate {
    package func session(_ session: HTTP2ClientSession, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        delegate?.connection(self, stream: id, tag: tag, didComplete: result)
    }

    package func session(_ session: HTTP2ClientSession, didUpdateMaxConcurrentStreams value: UInt32) {
        // The first SETTINGS completes `connect` (the owner reads the limit from the connection);
        // only later changes reach the delegate, so each value is reported once.
        if let ready = onReady {
            onReady = nil
            ready(.success(self))
            return
        }
        delegate?.connection(self, didUpdateMaxConcurrentStreams: value)
    }

    package func session(_ session: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                         refused: [UInt64]) {
        delegate?.connection(self, didReceiveGoAway: lastStreamID, errorCode: errorCode, debugData: debugData, refused: refused)
    }

    package func sessionDidReceivePingAck(_ session: HTTP2ClientSession) {
        delegate?.connectionDidReceivePingAck(self)
    }
}
