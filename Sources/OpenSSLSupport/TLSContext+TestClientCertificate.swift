internal import COpenSSL

extension TLSContext {
    /// A client context that also presents a TLS client certificate: for the emulator's tests and
    /// demo of certificate-based APNs authentication. It is `client(...)` with the certificate and
    /// key loaded before the context is handed out (so the `Sendable` promise holds).
    ///
    /// - Parameters:
    ///   - certificatePEM: the client certificate first, then any intermediates.
    ///   - privateKeyPEM: its key, unencrypted PEM (PKCS#8 or traditional).
    package static func clientPresentingCertificate(certificatePEM: String, privateKeyPEM: String,
                                                    alpn: [String] = ["h2"], trustSystemStore: Bool = true,
                                                    extraCAPEM: String? = nil) throws -> TLSContext {
        let context = try client(alpn: alpn, trustSystemStore: trustSystemStore, extraCAPEM: extraCAPEM)
        let certificates = try readCertificates(pem: certificatePEM, what: "the client certificate")
        defer { certificates.forEach { X509_free($0) } }
        OpenSSLErrorQueue.clearQueue()
        guard SSL_CTX_use_certificate(context.ctx, certificates[0]) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not use the client certificate"))
        }
        for intermediate in certificates.dropFirst() where copenssl_SSL_CTX_add1_chain_cert(context.ctx, intermediate) != 1 {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not add an intermediate client certificate"))
        }
        let key = try withReadBIO(privateKeyPEM) { bio -> OpaquePointer in
            guard let key = copenssl_PEM_read_bio_PrivateKey(bio) else {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("the client private key is not an unencrypted PEM key"))
            }
            return key
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(context.ctx, key) == 1, SSL_CTX_check_private_key(context.ctx) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("the client private key does not match its certificate"))
        }
        return context
    }
}
