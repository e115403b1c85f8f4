internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// Shared TLS configuration: trust, certificates, ALPN. Build one per role and create
/// many `TLSSession`s from it, since loading a trust store per connection is slow.
///
/// `@unchecked Sendable`: the `SSL_CTX` is only mutated inside the factory methods,
/// before the object escapes; afterwards OpenSSL only reads it (with its own locking
/// for reference counts), so sessions on several event loops may share it.
package final class TLSContext: @unchecked Sendable {
    let ctx: OpaquePointer
    /// Protocols the client requires one of; empty when a missing ALPN is acceptable.
    let requiredALPN: [String]
    let isServer: Bool
    /// A server context's certificate's notAfter, in Unix seconds (for an expiry gauge); nil for
    /// a client context, or when OpenSSL cannot read it.
    package private(set) var certificateNotAfter: Int64?
    /// The server's ALPN list in wire format; the select callback points into it, so it
    /// lives exactly as long as the `SSL_CTX`.
    private let alpnWire: UnsafeMutableBufferPointer<UInt8>?
    private let alpnList: UnsafeMutablePointer<copenssl_alpn_list>?

    private init(ctx: OpaquePointer, requiredALPN: [String], isServer: Bool,
                 alpnWire: UnsafeMutableBufferPointer<UInt8>?, alpnList: UnsafeMutablePointer<copenssl_alpn_list>?) {
        self.ctx = ctx
        self.requiredALPN = requiredALPN
        self.isServer = isServer
        self.alpnWire = alpnWire
        self.alpnList = alpnList
    }

    deinit {
        SSL_CTX_free(ctx)
        alpnList?.deallocate()
        alpnWire?.deallocate()
    }

    /// A client context for talking to APNs (or the emulator): TLS ≥ 1.2, the peer's
    /// certificate verified, ALPN offered.
    ///
    /// - Parameters:
    ///   - alpn: protocols to offer; when non-empty, a handshake that negotiates none of
    ///     them fails with `.noALPN`, because APNs only speaks HTTP/2.
    ///   - trustSystemStore: trust Debian's CA store. Keep it on for Apple: pinning
    ///     Apple's CA broke relays when Apple changed it.
    ///   - systemStoreEnvironment: where OpenSSL's overrides of the store's place are read
    ///     (`SSL_CERT_DIR`, `SSL_CERT_FILE`); nil for the process's environment.
    ///   - extraCAFile: a PEM file of extra roots (the emulator's CA in tests and the demo).
    ///   - extraCAPEM: the same, as text.
    ///   - clientIdentity: the certificate and key to present when the server asks for one (APNs
    ///     with certificate-based authentication); nil presents none.
    ///   - verifyPeer: false accepts any certificate: only for `healthcheck` asking the relay's own
    ///     HTTPS port on 127.0.0.1, never for Apple.
    package static func client(alpn: [String] = ["h2"], trustSystemStore: Bool = true,
                              systemStoreEnvironment: [String: String]? = nil,
                              extraCAFile: String? = nil, extraCAPEM: String? = nil,
                              clientIdentity: TLSClientIdentity? = nil, verifyPeer: Bool = true) throws -> TLSContext {
        OpenSSLErrorQueue.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not create a TLS client context"))
        }
        var owned = true
        defer { if owned { SSL_CTX_free(ctx) } }
        try configureCommon(ctx)
        SSL_CTX_set_verify(ctx, verifyPeer ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, nil)
        if trustSystemStore {
            try loadSystemStore(ctx, environment: systemStoreEnvironment)
        }
        if let extraCAFile {
            if SSL_CTX_load_verify_locations(ctx, extraCAFile, nil) != 1 {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not load the CA file \(extraCAFile); it must exist and hold PEM certificates"))
            }
        }
        if let extraCAPEM {
            let certificates = try readCertificates(pem: extraCAPEM, what: "the extra CA text")
            defer { certificates.forEach { X509_free($0) } }
            let store = SSL_CTX_get_cert_store(ctx)
            for certificate in certificates where X509_STORE_add_cert(store, certificate) != 1 {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not add an extra CA certificate to the trust store"))
            }
        }
        try clientIdentity?.install(in: ctx)
        if !alpn.isEmpty {
            let wire = try alpnWireFormat(alpn)
            if SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) != 0 {  // 0 is success here
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not set the ALPN protocols \(alpn)"))
            }
        }
        owned = false
        return TLSContext(ctx: ctx, requiredALPN: alpn, isServer: false, alpnWire: nil, alpnList: nil)
    }

    /// A server context (the APNs emulator, tests): presents the given chain and picks
    /// the first of `alpn` the client offers.
    ///
    /// A client that offers ALPN but none of `alpn` fails the handshake with a
    /// `no_application_protocol` alert (RFC 7301), which that client reports as
    /// `.noALPN`. A client offering no ALPN at all completes the handshake with
    /// `negotiatedALPN == nil`; the server decides what to do with it. An empty `alpn`
    /// negotiates nothing.
    ///
    /// - Parameters:
    ///   - certificateChainPEM: the leaf first, then any intermediates.
    ///   - privateKeyPEM: the leaf's key (PKCS#8 or traditional).
    ///   - clientCertificateCAPEM: when set, the server asks every client for a certificate and
    ///     verifies one it sends against these CAs (and its dates, and `clientAuth` usage): a bad
    ///     one fails the handshake with OpenSSL's alert (`certificate_expired`, `unknown_ca`…).
    ///     A client that sends none is let in (`TLSSession.peerCertificateDER` is then nil), as
    ///     APNs lets in token-authenticated providers.
    package static func server(certificateChainPEM: String, privateKeyPEM: String,
                              alpn: [String] = ["h2"], clientCertificateCAPEM: String? = nil) throws -> TLSContext {
        OpenSSLErrorQueue.clearQueue()
        guard let ctx = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not create a TLS server context"))
        }
        var owned = true
        defer { if owned { SSL_CTX_free(ctx) } }
        try configureCommon(ctx)

        let certificates = try readCertificates(pem: certificateChainPEM, what: "the certificate chain")
        defer { certificates.forEach { X509_free($0) } }
        guard SSL_CTX_use_certificate(ctx, certificates[0]) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not use the server certificate"))
        }
        for intermediate in certificates.dropFirst() where copenssl_SSL_CTX_add1_chain_cert(ctx, intermediate) != 1 {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not add an intermediate certificate"))
        }
        let key = try withReadBIO(privateKeyPEM) { bio -> OpaquePointer in
            guard let key = copenssl_PEM_read_bio_PrivateKey(bio) else {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("the server private key is not an unencrypted PEM key"))
            }
            return key
        }
        defer { EVP_PKEY_free(key) }
        guard SSL_CTX_use_PrivateKey(ctx, key) == 1, SSL_CTX_check_private_key(ctx) == 1 else {
            throw TLSError(.keyMismatch, OpenSSLErrorQueue.message("the server private key does not match its certificate"))
        }
        if let clientCertificateCAPEM {
            let authorities = try readCertificates(pem: clientCertificateCAPEM, what: "the client certificate CA text")
            defer { authorities.forEach { X509_free($0) } }
            let store = SSL_CTX_get_cert_store(ctx)
            for authority in authorities where X509_STORE_add_cert(store, authority) != 1 {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not trust a client certificate CA"))
            }
            // Optional: without SSL_VERIFY_FAIL_IF_NO_PEER_CERT a client without one gets in.
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
            // Sessions that remember a client certificate need a context name to be resumed in.
            let name = Array("apns-mock".utf8)
            guard SSL_CTX_set_session_id_context(ctx, name, UInt32(name.count)) == 1 else {
                throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not set the session id context"))
            }
        }

        var wireBuffer: UnsafeMutableBufferPointer<UInt8>?
        var list: UnsafeMutablePointer<copenssl_alpn_list>?
        if !alpn.isEmpty {
            let wire = try alpnWireFormat(alpn)
            let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: wire.count)
            _ = buffer.initialize(from: wire)
            let entry = UnsafeMutablePointer<copenssl_alpn_list>.allocate(capacity: 1)
            entry.initialize(to: copenssl_alpn_list(protos: UnsafePointer(buffer.baseAddress), length: UInt32(wire.count)))
            copenssl_SSL_CTX_set_alpn_server(ctx, entry)
            wireBuffer = buffer
            list = entry
        }
        owned = false
        let context = TLSContext(ctx: ctx, requiredALPN: [], isServer: true, alpnWire: wireBuffer, alpnList: list)
        context.certificateNotAfter = X509Validity.notAfter(certificates[0])
        return context
    }

    /// The system's roots as its hashed directory: OpenSSL reads the one root a handshake needs
    /// when it needs it, and keeps only that one. `SSL_CTX_set_default_verify_paths` also
    /// parsed the whole bundle (`cert.pem`, ~140 roots) into the context at start-up: 0.8 MiB
    /// of heap that an idle relay held for nothing. `SSL_CERT_DIR` names another directory;
    /// `SSL_CERT_FILE`, when set, is read whole too, and ignored when unreadable, as OpenSSL's
    /// defaults do. A directory without hash links (an image that copied only the bundle) would
    /// trust nothing, so then the default bundle is read whole, as before.
    private static func loadSystemStore(_ ctx: OpaquePointer, environment: [String: String]?) throws {
        func variable(_ name: UnsafePointer<CChar>) -> String? {
            let name = String(cString: name)
            if let environment { return environment[name] }
            return getenv(name).map { String(cString: $0) }
        }
        let directory = variable(X509_get_default_cert_dir_env()) ?? String(cString: X509_get_default_cert_dir())
        guard SSL_CTX_load_verify_dir(ctx, directory) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not use the system trust store \(directory); install ca-certificates"))
        }
        let file = variable(X509_get_default_cert_file_env())
            ?? (holdsHashLinks(directory) ? nil : String(cString: X509_get_default_cert_file()))
        if let file, SSL_CTX_load_verify_file(ctx, file) != 1 {
            OpenSSLErrorQueue.clearQueue()
        }
    }

    /// True when `directory` holds a root under the name OpenSSL looks one up by: the hash of
    /// its subject in 8 hex digits, a dot, a sequence number (`5ad8a5d6.0`).
    static func holdsHashLinks(_ directory: String) -> Bool {
        guard let dir = opendir(directory) else { return false }
        defer { closedir(dir) }
        while let entry = readdir(dir) {
            let found = withUnsafeBytes(of: entry.pointee.d_name) { raw -> Bool in
                let name = raw.prefix { $0 != 0 }
                guard name.count >= 10, name[name.startIndex + 8] == UInt8(ascii: ".") else { return false }
                let isHex = { (b: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(b) }
                let isDigit = { (b: UInt8) in (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) }
                return name.prefix(8).allSatisfy(isHex) && name.dropFirst(9).allSatisfy(isDigit)
            }
            if found { return true }
        }
        return false
    }

    /// How many roots (and CRLs) the context holds in memory now.
    package var trustStoreCount: Int {
        Int(OPENSSL_sk_num(X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx))))
    }

    private static func configureCommon(_ ctx: OpaquePointer) throws {
        guard copenssl_SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not require TLS 1.2"))
        }
        // Renegotiation is a source of surprises over memory BIOs and APNs never uses it.
        copenssl_SSL_CTX_set_no_renegotiation(ctx)
    }

    /// Length-prefixed protocol names, as ALPN puts them on the wire.
    private static func alpnWireFormat(_ protocols: [String]) throws -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else {
                throw TLSError(.badConfiguration, "ALPN protocol name \"\(name)\" must be 1 to 255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }
}
