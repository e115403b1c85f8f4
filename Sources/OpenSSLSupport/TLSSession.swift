internal import COpenSSL

/// A TLS engine over memory BIOs: no sockets. The owner feeds ciphertext read from its
/// socket, calls `handshake()` / `readPlaintext` / `writePlaintext`, and after every
/// call sends whatever `takeCiphertext` returns — this keeps all I/O on the owner's
/// event loop and lets tests pump two sessions into each other in memory.
///
/// Not thread-safe (and not `Sendable`): confine each session to one event loop.
package final class TLSSession {
    /// What `readPlaintext` found after appending the available plaintext.
    package enum ReadResult: Sendable, Equatable {
        /// More may come: feed more ciphertext when the socket has some.
        case ok
        /// The peer sent close_notify: no more plaintext will ever arrive.
        case closed
    }

    private let context: TLSContext
    private let ssl: OpaquePointer
    /// Ciphertext from the network, read by OpenSSL (owned by `ssl`).
    private let networkIn: OpaquePointer
    /// Ciphertext produced by OpenSSL, to be sent (owned by `ssl`).
    private let networkOut: OpaquePointer
    private let serverName: String?
    private var established = false
    private var peerSentCloseNotify = false
    private var shutdownQueued = false
    /// The first fatal error, repeated on every later call: OpenSSL forbids using a
    /// session after a fatal error.
    private var failure: TLSError?
    /// One TLS record's worth of plaintext (16 KiB), reused by every read; made on the first.
    private var readScratch: UnsafeMutableRawBufferPointer?

    /// A client session.
    ///
    /// - Parameter serverName: the host we dial. A host name is sent as SNI and the
    ///   certificate must be valid for it; an IP literal (`127.0.0.1`, `::1`) is not sent
    ///   as SNI (RFC 6066 forbids it) and the certificate must carry it as an IP SAN.
    ///   `nil` checks the chain only — never do that against Apple.
    package init(context: TLSContext, serverName: String?) throws {
        guard !context.isServer else {
            throw TLSError(.badConfiguration, "a client session needs a context made by TLSContext.client")
        }
        (ssl, networkIn, networkOut) = try Self.makeSSL(context)
        self.context = context
        self.serverName = serverName
        SSL_set_connect_state(ssl)
        if let serverName {
            guard !serverName.isEmpty, !serverName.utf8.contains(0) else {
                throw TLSError(.badConfiguration, "the server name must be a non-empty host name or IP address")
            }
            let param = SSL_get0_param(ssl)
            if X509_VERIFY_PARAM_set1_ip_asc(param, serverName) == 1 {
                OpenSSLErrorQueue.clearQueue()
            } else {
                OpenSSLErrorQueue.clearQueue()
                SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
                guard copenssl_SSL_set_tlsext_host_name(ssl, serverName) == 1,
                      SSL_set1_host(ssl, serverName) == 1 else {
                    throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not set the server name \(serverName)"))
                }
            }
        }
    }

    /// A server session, for the APNs emulator and tests.
    package init(serverContext: TLSContext) throws {
        guard serverContext.isServer else {
            throw TLSError(.badConfiguration, "a server session needs a context made by TLSContext.server")
        }
        (ssl, networkIn, networkOut) = try Self.makeSSL(serverContext)
        self.context = serverContext
        self.serverName = nil
        SSL_set_accept_state(ssl)
    }

    deinit {
        SSL_free(ssl)  // frees both BIOs too
        readScratch?.deallocate()
    }

    private static func makeSSL(_ context: TLSContext) throws -> (OpaquePointer, OpaquePointer, OpaquePointer) {
        OpenSSLErrorQueue.clearQueue()
        guard let ssl = SSL_new(context.ctx) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not create a TLS session"))
        }
        guard let input = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not create a memory BIO"))
        }
        guard let output = BIO_new(BIO_s_mem()) else {
            BIO_free(input)
            SSL_free(ssl)
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not create a memory BIO"))
        }
        // An empty input BIO means "retry later" (WANT_READ), not end of file.
        _ = copenssl_BIO_set_mem_eof_return(input, -1)
        _ = copenssl_BIO_set_mem_eof_return(output, -1)
        SSL_set_bio(ssl, input, output)
        // The owner's buffers move between a WANT_WRITE and its retry.
        copenssl_SSL_set_session_modes(ssl)
        return (ssl, input, output)
    }

    /// Hands OpenSSL ciphertext that arrived from the peer. Never fails: memory BIOs grow.
    package func feed(_ ciphertext: UnsafeRawBufferPointer) {
        guard let base = ciphertext.baseAddress, ciphertext.count > 0 else { return }
        var written = 0
        _ = BIO_write_ex(networkIn, base, ciphertext.count, &written)
    }

    /// Advances the handshake with whatever has been fed. Call `takeCiphertext`
    /// afterwards even when it throws: a failed handshake queues an alert for the peer.
    ///
    /// - Returns: `true` once the session is established (and, for a client whose context
    ///   requires ALPN, a protocol was negotiated); `false` while it needs more input.
    package func handshake() throws -> Bool {
        if let failure { throw failure }
        if established { return true }
        OpenSSLErrorQueue.clearQueue()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            if !context.isServer, !context.requiredALPN.isEmpty, negotiatedALPN == nil {
                let offered = context.requiredALPN.joined(separator: ", ")
                throw fail(TLSError(.noALPN, "the server did not offer \(offered) (no ALPN protocol negotiated); is it an HTTP/2 server?"))
            }
            established = true
            return true
        }
        switch SSL_get_error(ssl, rc) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return false
        case SSL_ERROR_ZERO_RETURN:
            throw fail(TLSError(.peerClosed, "the peer closed the TLS session during the handshake"))
        default:
            throw fail(classifyHandshakeFailure())
        }
    }

    private func classifyHandshakeFailure() -> TLSError {
        if !context.isServer {
            let result = SSL_get_verify_result(ssl)
            if result != Int(X509_V_OK) {
                let reason = String(cString: X509_verify_cert_error_string(result))
                OpenSSLErrorQueue.clearQueue()
                if result == Int(X509_V_ERR_HOSTNAME_MISMATCH) || result == Int(X509_V_ERR_IP_ADDRESS_MISMATCH) {
                    return TLSError(.hostnameMismatch, "the server's certificate is not valid for \(serverName ?? "the requested name") (\(reason))",
                                    verifyResult: result)
                }
                let hint: String
                switch Int32(truncatingIfNeeded: result) {
                case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
                     X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
                    hint = " — the CA that issued it is not trusted"
                case X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_CERT_HAS_EXPIRED:
                    hint = " — check the certificate's dates and this machine's clock"
                default:
                    hint = ""
                }
                return TLSError(.certificateVerificationFailed, "certificate verification failed: \(reason)\(hint)",
                                verifyResult: result)
            }
        }
        let reason = OpenSSLErrorQueue.peekReason()
        let detail = OpenSSLErrorQueue.drainQueue()
        if reason == SSL_R_NO_APPLICATION_PROTOCOL || reason == SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL {
            return TLSError(.noALPN, context.isServer
                ? "the client did not offer a protocol this server speaks (h2)"
                : "the server did not offer \(context.requiredALPN.joined(separator: ", ")) (no_application_protocol alert)")
        }
        return TLSError(.handshakeFailed, detail.isEmpty ? "the TLS handshake failed" : "the TLS handshake failed: \(detail)")
    }

    private func fail(_ error: TLSError) -> TLSError {
        failure = error
        return error
    }

    /// The protocol chosen by ALPN ("h2"), or `nil` before the handshake or when none was.
    package var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The certificate the peer presented and the handshake verified, as DER; nil before the
    /// handshake, when the peer sent none, or when it did not verify. A server context made
    /// with `clientCertificateCAPEM` reads the client's here.
    package var peerCertificateDER: [UInt8]? {
        guard established, SSL_get_verify_result(ssl) == Int(X509_V_OK),
              let certificate = SSL_get1_peer_certificate(ssl) else { return nil }
        defer { X509_free(certificate) }
        let length = i2d_X509(certificate, nil)
        guard length > 0 else {
            OpenSSLErrorQueue.clearQueue()
            return nil
        }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        return written == length ? der : nil
    }

    /// Appends every byte that can be decrypted from what has been fed so far (reading
    /// until OpenSSL wants more input), finishing the handshake first if needed.
    ///
    /// - Returns: `.closed` once the peer's close_notify arrived, else `.ok`.
    package func readPlaintext(into buffer: inout [UInt8]) throws -> ReadResult {
        if let failure { throw failure }
        if peerSentCloseNotify { return .closed }
        guard try handshake() else { return .ok }
        // Decrypted into a scratch record and appended by what arrived: growing `buffer` by 16 KiB
        // of zeros before each read (and trimming it after) cost more than the copy.
        let scratch = readScratch ?? UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)
        readScratch = scratch
        while true {
            var got = 0
            OpenSSLErrorQueue.clearQueue()
            let rc = SSL_read_ex(ssl, scratch.baseAddress!, scratch.count, &got)
            if rc == 1 {
                buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<got]))
                continue
            }
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .ok
            case SSL_ERROR_ZERO_RETURN:
                peerSentCloseNotify = true
                return .closed
            default:
                throw fail(TLSError(.protocolError, OpenSSLErrorQueue.message("could not decrypt data from the peer")))
            }
        }
    }

    /// Encrypts a whole batch in one `SSL_write`, so many small HTTP/2 frames share TLS
    /// records (about twice as fast as one write per frame). Take the ciphertext after.
    package func writePlaintext(_ bytes: UnsafeRawBufferPointer) throws {
        if let failure { throw failure }
        guard established else {
            throw TLSError(.notEstablished, "plaintext was written before the TLS handshake completed; wait for handshake() to return true")
        }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        OpenSSLErrorQueue.clearQueue()
        var written = 0
        let rc = SSL_write_ex(ssl, base, bytes.count, &written)
        if rc != 1 || written != bytes.count {
            throw fail(TLSError(.protocolError, OpenSSLErrorQueue.message("could not encrypt data for the peer (was the session shut down?)")))
        }
    }

    /// Moves ciphertext waiting to be sent to the peer into `buffer`, as much as fits; returns
    /// how many bytes (0 when none waits). Less than `buffer.count` means the queue is empty now.
    /// The owner reads straight into memory of its own and sends from there: appending to an
    /// array first meant zero-filling the room for it.
    package func takeCiphertext(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        var got = 0
        // An empty memory BIO fails the read with "retry", which is no error: nothing waits.
        return BIO_read_ex(networkOut, base, buffer.count, &got) == 1 ? got : 0
    }

    /// Queues close_notify so the peer can tell a clean close from a cut connection.
    /// Take and send the ciphertext, then close the socket. Does nothing before the
    /// handshake completed or after a fatal error (OpenSSL forbids it then).
    package func shutdown() {
        guard established, failure == nil, !shutdownQueued else { return }
        shutdownQueued = true
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clearQueue()
    }
}
