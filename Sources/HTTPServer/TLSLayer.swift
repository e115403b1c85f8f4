import EventLoop
import OpenSSLSupport

/// HTTPS: one TLS session between an accepted TCP stream and its `HTTPConnection`, confined to
/// the stream's loop. The stream's handler is this layer; it decrypts what arrives and hands the
/// plaintext on through the same `TCPStreamHandler` calls a plain connection gets from its stream,
/// and the connection's writes and closes come back through its `ConnectionWire`.
///
/// Until the handshake completes, the connection is told of every handshake byte
/// (`handshakeBytesArrived`), so the limits of a plain request head hold: the header and request
/// deadlines run from the first byte, and at the cap a stalled handshake is cut as the slowest
/// request arriving. A client that sends nothing is an idle, fresh connection like a plain one.
/// A handshake that fails (garbage, plain HTTP, a record longer than TLS allows, EOF half-way)
/// closes the connection and is counted (`ServerCounters.tlsFailures`).
///
/// Not `Sendable`: every member is touched on the stream's loop only.
final class TLSLayer: TCPStreamHandler {
    private let stream: TCPStream
    private let session: TLSSession
    private let core: HTTPServerCore
    private let context: LoopContext
    /// Held strongly until the stream closes (the stream holds this layer, this layer the
    /// connection, the connection both), so a connection lives exactly as long as its socket.
    var connection: HTTPConnection?
    private var state = State.handshaking
    /// Ciphertext bytes received before the handshake completed.
    private var handshakeBytes = 0
    /// The first byte the peer sent, to tell plain HTTP from a ClientHello (0x16).
    private var firstByte: UInt8?

    /// The session's legal states, in the order they can follow each other (any may end the
    /// stream; `failed` may follow any but itself).
    private enum State {
        /// Every byte read is a handshake byte; nothing can be sent to the connection's peer.
        case handshaking
        /// Plaintext flows both ways.
        case established
        /// The peer's close_notify arrived: nothing more is read; answers still go out.
        case peerClosed
        /// The handshake failed or a write could not be encrypted: the stream is closing.
        case failed
    }

    /// The handshake is done and nothing failed: answers are encrypted and sent.
    private var sends: Bool { state == .established || state == .peerClosed }

    init(stream: TCPStream, session: TLSSession, core: HTTPServerCore, context: LoopContext) {
        self.stream = stream
        self.session = session
        self.core = core
        self.context = context
    }

    // MARK: TCPStreamHandler (the stream's events)

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        guard let connection, state == .handshaking || state == .established else { return }
        session.feed(bytes)
        if state == .handshaking {
            if firstByte == nil { firstByte = bytes.first }
            handshakeBytes += bytes.count
            connection.handshakeBytesArrived(bytes.count)
            let done: Bool
            do {
                done = try session.handshake()
            } catch {
                sendCiphertext()  // the alert OpenSSL queued, if any
                handshakeFailed("\(error)")
                return
            }
            sendCiphertext()
            guard done else { return }
            state = .established
            connection.handshakeFinished()
            guard stream.isOpen else { return }
        }
        readPlaintext(into: connection)
    }

    /// Decrypts all that was fed and hands it to the connection in one call.
    private func readPlaintext(into connection: HTTPConnection) {
        // The loop's one buffer, taken out while in use so a nested use could not touch it.
        var plaintext: [UInt8] = []
        swap(&plaintext, &context.tlsPlaintext)
        defer {
            plaintext.removeAll(keepingCapacity: true)
            swap(&plaintext, &context.tlsPlaintext)
        }
        let result: TLSSession.ReadResult
        do {
            result = try session.readPlaintext(into: &plaintext)
        } catch {
            sendCiphertext()
            core.noteTLSFailure("TLS error from \(peerText) after the handshake; connection closed: \(error)")
            stream.close()
            return
        }
        sendCiphertext()  // what OpenSSL writes while reading (TLS 1.3 session tickets, key updates)
        if !plaintext.isEmpty {
            plaintext.withUnsafeBytes { connection.streamDidRead(stream, $0) }
        }
        if result == .closed, stream.isOpen {
            // close_notify: the peer sends no more; what it asked for is still answered.
            state = .peerClosed
            stream.pauseReading()
            connection.streamDidReadEOF(stream)
        }
    }

    func streamDidDrainWrites(_ stream: TCPStream) {
        connection?.streamDidDrainWrites(stream)
    }

    func streamDidReadEOF(_ stream: TCPStream) {
        switch state {
        case .handshaking:
            if handshakeBytes > 0 { handshakeFailed("the client closed the connection during the TLS handshake") }
            stream.close()
        case .established:
            // EOF without close_notify: answered as a plain connection's EOF is (a truncation the
            // client can't exploit: every answer is framed by Content-Length).
            connection?.streamDidReadEOF(stream)
        case .peerClosed:
            break
        case .failed:
            // Counted already, and closing: the peer has gone too.
            stream.close()
        }
    }

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        let connection = self.connection
        self.connection = nil
        connection?.streamDidClose(stream, error: error)
    }

    // MARK: The connection's side (through ConnectionWire)

    /// Encrypts and sends. Before the handshake completed nothing can be sent (an answer to a
    /// handshake cut for a deadline or the cap): the close that follows is all the peer gets.
    func write(_ bytes: UnsafeRawBufferPointer) {
        guard sends, stream.isOpen else { return }
        do {
            try session.writePlaintext(bytes)
        } catch {
            // Closed on the next turn, so the connection is not told of the close inside its own write.
            state = .failed
            core.noteTLSFailure("could not encrypt an answer to \(peerText); connection closed: \(error)")
            let bound = LoopBound(stream, on: stream.loop)
            stream.loop.execute { bound.value.close() }
            return
        }
        sendCiphertext()
    }

    func resumeReading() {
        guard state != .peerClosed else { return }
        stream.resumeReading()
    }

    /// Sends close_notify after the answers, then closes once all is written.
    func closeAfterFlush() {
        if sends { session.shutdown() }
        sendCiphertext()
        stream.closeAfterFlush()
    }

    /// Closes now; close_notify goes first when nothing else waits to be written.
    func close() {
        if sends, stream.isOpen, stream.pendingWriteBytes == 0 {
            session.shutdown()
            sendCiphertext()
        }
        stream.close()
    }

    // MARK: Internals

    private var peerText: String { stream.peerAddress?.description ?? "a client" }

    /// Moves everything OpenSSL has to send into the stream (which drops it once closed).
    private func sendCiphertext() {
        let scratch = context.tlsCiphertext
        while true {
            let got = session.takeCiphertext(into: scratch)
            if got > 0 && stream.isOpen {
                stream.write(UnsafeRawBufferPointer(rebasing: scratch[..<got]))
            }
            if got < scratch.count { return }
        }
    }

    private func handshakeFailed(_ reason: String) {
        state = .failed
        core.noteTLSFailure("TLS handshake with \(peerText) failed; connection closed: \(reason)")
        // Plain HTTP sent to the HTTPS port: say so in plain HTTP, with a status Mastodon
        // retries (a 4xx would make it drop the subscription), rather than close without a word.
        if let firstByte, (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(firstByte) {
            Self.plainHTTPAnswer.withUnsafeBytes { stream.write($0) }
        }
        stream.closeAfterFlush()
    }

    /// The answer to plain HTTP on the HTTPS port.
    static let plainHTTPAnswer: [UInt8] = {
        let body = "{\"reason\":\"this port speaks HTTPS; send the request with https://\"}"
        return Array(("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body).utf8)
    }()
}
