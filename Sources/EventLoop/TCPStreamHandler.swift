/// Receives a stream's events. Every call happens on the stream's loop, and the handler
/// may write to, pause, or close the stream from inside any of them.
package protocol TCPStreamHandler: AnyObject {
    /// `bytes` is valid only during the call (it is the loop's shared read buffer).
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer)
    /// The write buffer became empty after having held bytes: the moment to produce more
    /// (backpressure). Not called when a write went out whole without buffering.
    func streamDidDrainWrites(_ stream: TCPStream)
    /// The peer shut down its sending side (EOF): nothing more will be read, but writes
    /// still go out, so a request that arrived whole just before can be answered (HTTP
    /// clients that `shutdown(SHUT_WR)` after sending). Reading stops for good; the handler
    /// must close the stream itself, at once or with `closeAfterFlush` after its answers.
    /// The default closes at once, the right end for protocols with their own goodbye (TLS).
    func streamDidReadEOF(_ stream: TCPStream)
    /// Called exactly once; `error` is nil on orderly EOF or a local `close()`.
    func streamDidClose(_ stream: TCPStream, error: SocketError?)
}

extension TCPStreamHandler {
    /// Treats the peer's EOF as a full close, so handlers with nothing owed stay unchanged.
    package func streamDidReadEOF(_ stream: TCPStream) {
        stream.close()
    }
}
