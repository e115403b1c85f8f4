import EventLoop

/// Where a connection's bytes go: its TCP stream, or (HTTPS) the `TLSLayer` over that stream.
/// For a plain connection each call is the stream's own after one nil check: no copy, no
/// dynamic dispatch, no object in between.
struct ConnectionWire {
    let stream: TCPStream
    let tls: TLSLayer?

    func write(_ bytes: UnsafeRawBufferPointer) {
        if let tls { tls.write(bytes) } else { stream.write(bytes) }
    }

    /// Bytes the kernel has not taken yet (ciphertext under TLS): the backpressure and the
    /// write timeout judge these.
    var pendingWriteBytes: Int { stream.pendingWriteBytes }

    func pauseReading() { stream.pauseReading() }

    func resumeReading() {
        if let tls { tls.resumeReading() } else { stream.resumeReading() }
    }

    /// Closes once everything written is out (after TLS's close_notify).
    func closeAfterFlush() {
        if let tls { tls.closeAfterFlush() } else { stream.closeAfterFlush() }
    }

    /// Closes now.
    func close() {
        if let tls { tls.close() } else { stream.close() }
    }
}
