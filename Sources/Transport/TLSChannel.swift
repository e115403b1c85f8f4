import EventLoop
import OpenSSLSupport

/// What sits above a `TLSChannel`: the HTTP/2 engine of a client or server connection.
protocol TLSChannelUpper: AnyObject {
    /// The handshake finished with ALPN h2: the upper layer may produce output now.
    func channelDidEstablish(_ channel: TLSChannel)
    /// Decrypted bytes, valid only during the call.
    func channel(_ channel: TLSChannel, didRead plaintext: UnsafeRawBufferPointer)
    /// Called once, after which the channel does nothing.
    func channel(_ channel: TLSChannel, didClose error: TransportError?)
    /// The upper layer's pending output (HTTP/2 frames), appended to `buffer`.
    func channelTakeOutput(_ channel: TLSChannel, into buffer: inout [UInt8])
}

/// One TLS session over one TCP stream, both owned here and confined to the stream's loop.
///
/// Output is batched: `flush()` drains everything the upper layer has into one `SSL_write` and
/// one socket write. `scheduleFlush()` defers that to the end of the loop's current turn so many
/// submissions share a flush.
/// Not `Sendable`: it is confined to its loop (`LoopBound` carries it into `loop.execute`).
final class TLSChannel: TCPStreamHandler {
    let stream: TCPStream
    let tls: TLSSession
    /// Held strongly until the channel closes: the stream holds the channel, the channel its
    /// connection, so an accepted connection lives exactly as long as its socket.
    private(set) var upper: TLSChannelUpper?
    private(set) var established = false
    private(set) var closed = false
    private var flushScheduled = false
    private var plaintextIn: [UInt8] = []
    private var plaintextOut: [UInt8] = []
    /// Ciphertext goes from OpenSSL through here to the socket. 64 KiB: a turn's batch of
    /// pushes fits, so it leaves in one send.
    private let ciphertextOut = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    private var handshakeTimer: EventLoop.Timer?

    var loop: EventLoop { stream.loop }

    init(stream: TCPStream, tls: TLSSession) {
        self.stream = stream
        self.tls = tls
        plaintextIn.reserveCapacity(64 * 1024)
    }

    deinit {
        ciphertextOut.deallocate()
    }

    /// Attaches to the stream and starts the handshake; a client speaks first.
    func start(upper: TLSChannelUpper, handshakeTimeout: Duration, isClient: Bool) {
        self.upper = upper
        stream.handler = self
        handshakeTimer = loop.schedule(after: handshakeTimeout) { [weak self] in
            guard let self, !self.established else { return }
            self.close(TransportError(.timedOut, "TLS", cause: .timedOut(.tlsHandshake, within: handshakeTimeout)))
        }
        if isClient { advanceHandshake() }
    }

    private func advanceHandshake() {
        do {
            let done = try tls.handshake()
            sendCiphertext()
            if done {
                established = true
                handshakeTimer?.cancel()
                handshakeTimer = nil
                upper?.channelDidEstablish(self)
                flush()
            }
        } catch {
            sendCiphertext()
            close(TransportError(tls: error))
        }
    }

    // MARK: TCPStreamHandler

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        guard !closed else { return }
        tls.feed(bytes)
        if !established {
            advanceHandshake()
            guard established, !closed else { return }
        }
        plaintextIn.removeAll(keepingCapacity: true)
        let result: TLSSession.ReadResult
        do {
            result = try tls.readPlaintext(into: &plaintextIn)
        } catch {
            close(TransportError(tls: error))
            return
        }
        if !plaintextIn.isEmpty {
            plaintextIn.withUnsafeBytes { upper?.channel(self, didRead: $0) }
        }
        if result == .closed {
            close(TransportError(.closed, "the peer closed the TLS session"))
            return
        }
        flush()
    }

    func streamDidDrainWrites(_ stream: TCPStream) {}

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard !closed else { return }
        let reason = error.map { TransportError(.closed, "the connection was lost", cause: .socket($0)) }
            ?? TransportError(.closed, "the peer closed the connection")
        finish(reason)
    }

    // MARK: Output

    /// Runs `flush()` once at the end of this loop turn.
    func scheduleFlush() {
        guard !flushScheduled, !closed else { return }
        flushScheduled = true
        let me = LoopBound(self, on: loop)
        loop.execute {
            let channel = me.value
            channel.flushScheduled = false
            channel.flush()
        }
    }

    /// Sends everything the upper layer has pending: one SSL_write, one socket write.
    func flush() {
        guard established, !closed else { return }
        plaintextOut.removeAll(keepingCapacity: true)
        upper?.channelTakeOutput(self, into: &plaintextOut)
        guard !plaintextOut.isEmpty else { return }
        do {
            try plaintextOut.withUnsafeBytes { try tls.writePlaintext($0) }
        } catch {
            close(TransportError(tls: error))
            return
        }
        sendCiphertext()
    }

    /// Sends all the ciphertext OpenSSL holds (or drops it once the socket is closed).
    private func sendCiphertext() {
        while true {
            let got = tls.takeCiphertext(into: ciphertextOut)
            if got > 0, stream.isOpen {
                stream.write(UnsafeRawBufferPointer(rebasing: ciphertextOut[..<got]))
            }
            if got < ciphertextOut.count { return }
        }
    }

    /// Sends what is pending and close_notify, then closes the socket once written.
    func closeGracefully(_ reason: TransportError) {
        guard !closed else { return }
        flush()
        tls.shutdown()
        sendCiphertext()
        finish(reason)
        stream.closeAfterFlush()
    }

    /// Closes at once.
    func close(_ reason: TransportError) {
        guard !closed else { return }
        finish(reason)
        stream.close()
    }

    private func finish(_ reason: TransportError?) {
        guard !closed else { return }
        closed = true
        handshakeTimer?.cancel()
        handshakeTimer = nil
        let upper = self.upper
        self.upper = nil
        upper?.channel(self, didClose: reason)
    }
}
