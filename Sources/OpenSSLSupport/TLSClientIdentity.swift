internal import COpenSSL
internal import Basics
#if canImport(Glibc)
import Glibc
#endif

/// A TLS client certificate with its private key (and any intermediates): how a provider that
/// authenticates to APNs with Apple's push certificate proves who it is, in place of a provider
/// token. Read from a PKCS#12 file (what Keychain Access exports) or a PEM certificate and key.
///
/// Apple's push certificates carry the app's bundle id as the subject's `UID`
/// (`UID=cx.c3.toot, CN=Apple Push Services: cx.c3.toot`) and expire after a year.
///
/// `@unchecked Sendable`: the certificate, key and chain are never changed after `init`;
/// OpenSSL reference-counts them, and a `TLSContext` takes its own references.
package final class TLSClientIdentity: @unchecked Sendable {
    let certificate: OpaquePointer
    let key: OpaquePointer
    let chain: [OpaquePointer]
    /// The subject's `UID` (OID 0.9.2342.19200300.100.1.1): the bundle id of an Apple push certificate.
    package let subjectUID: String?
    /// The subject's common name, for messages.
    package let commonName: String?
    /// The certificate's validity, in Unix seconds.
    package let notBefore: Int64
    package let notAfter: Int64
    /// SHA-256 of the certificate's DER, in hex: two identities with the same certificate are one.
    package let fingerprint: String

    private init(certificate: OpaquePointer, key: OpaquePointer, chain: [OpaquePointer]) throws {
        self.certificate = certificate
        self.key = key
        self.chain = chain
        let subject = X509_get_subject_name(certificate)
        subjectUID = Self.entry(subject, nid: NID_userId)
        commonName = Self.entry(subject, nid: NID_commonName)
        notBefore = X509Validity.notBefore(certificate) ?? 0
        notAfter = X509Validity.notAfter(certificate) ?? 0
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = X509_digest(certificate, EVP_sha256(), &digest, &length)
        fingerprint = Hex.encode(digest.prefix(Int(length)))
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(key)
        chain.forEach { X509_free($0) }
    }

    /// Reads a PKCS#12 file's bytes (`.p12`, `.pfx`) opened with `password` (empty when it has none).
    /// - Throws: `TLSError.badConfiguration` saying what is wrong: not PKCS#12, a wrong password,
    ///   no certificate or key inside, or a cipher OpenSSL 3 no longer reads by default.
    package static func pkcs12(_ bytes: [UInt8], password: String) throws -> TLSClientIdentity {
        OpenSSLErrorQueue.clearQueue()
        let p12: OpaquePointer? = bytes.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PKCS12(nil, &cursor, buffer.count)
        }
        guard let p12 else {
            OpenSSLErrorQueue.clearQueue()
            throw TLSError(.badConfiguration, "the .p12 is not a PKCS#12 file (\(bytes.count) bytes); export the push certificate with its key from Keychain Access, or give a PEM certificate and key instead")
        }
        defer { PKCS12_free(p12) }
        // An empty password may have been applied as no password at all; PKCS12_parse tries both.
        let macOK = PKCS12_mac_present(p12) == 0 || PKCS12_verify_mac(p12, password, -1) == 1
            || (password.isEmpty && PKCS12_verify_mac(p12, nil, 0) == 1)
        guard macOK else {
            OpenSSLErrorQueue.clearQueue()
            throw TLSError(.badConfiguration, "the .p12's password is wrong (its integrity check failed)")
        }
        var parsed = parse(p12, password: password)
        if case .unreadable = parsed, loadLegacyProvider() {
            // Older Keychain exports encrypt the certificate with RC2-40, which OpenSSL 3 keeps in
            // its legacy provider; the password was right, so the cipher is the likely cause.
            parsed = parse(p12, password: password)
        }
        switch parsed {
        case .identity(let certificate, let key, let chain):
            return try matched(certificate: certificate, key: key, chain: chain, what: "the .p12")
        case .missing(let what):
            throw TLSError(.badConfiguration, "the .p12 holds no \(what): export the push certificate together with its private key (in Keychain Access, select both and export them as one .p12)")
        case .unreadable:
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message(
                "the .p12's password is right but its contents could not be read (a legacy cipher such as RC2-40? re-export it with `openssl pkcs12 -in old.p12 -nodes | openssl pkcs12 -export -out new.p12`)"))
        }
    }

    /// Reads a PEM certificate (the leaf first, then any intermediates) and its PEM private key.
    /// - Throws: `TLSError.badConfiguration` when either is not PEM or the key is not the certificate's.
    package static func pem(certificate certificatePEM: String, key keyPEM: String) throws -> TLSClientIdentity {
        OpenSSLErrorQueue.clearQueue()
        let certificates = try readCertificates(pem: certificatePEM, what: "the certificate file")
        let key: OpaquePointer
        do {
            key = try withReadBIO(keyPEM) { bio -> OpaquePointer in
                guard let key = copenssl_PEM_read_bio_PrivateKey(bio) else {
                    OpenSSLErrorQueue.clearQueue()
                    throw TLSError(.badConfiguration, "the key file is not an unencrypted PEM private key (-----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----)")
                }
                return key
            }
        } catch {
            certificates.forEach { X509_free($0) }
            throw error
        }
        return try matched(certificate: certificates[0], key: key, chain: Array(certificates.dropFirst()), what: "the certificate")
    }

    /// Whether the certificate has expired at `unixTime`.
    package func hasExpired(at unixTime: Int64) -> Bool { unixTime >= notAfter }

    /// Uses this identity as `ctx`'s client certificate.
    func install(in ctx: OpaquePointer) throws {
        guard SSL_CTX_use_certificate(ctx, certificate) == 1, SSL_CTX_use_PrivateKey(ctx, key) == 1 else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not use the client certificate"))
        }
        for intermediate in chain where copenssl_SSL_CTX_add1_chain_cert(ctx, intermediate) != 1 {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not add the client certificate's intermediate"))
        }
    }

    /// What `PKCS12_parse` found.
    private enum Parsed {
        case identity(OpaquePointer, OpaquePointer, [OpaquePointer])
        /// It decrypted, but holds no certificate or no key matching one ("certificate", "private key").
        case missing(String)
        /// It did not decrypt (the cipher, or the file).
        case unreadable
    }

    private static func parse(_ p12: OpaquePointer, password: String) -> Parsed {
        var key: OpaquePointer?
        var certificate: OpaquePointer?
        var others: OpaquePointer?
        guard PKCS12_parse(p12, password, &key, &certificate, &others) == 1 else { return .unreadable }
        var chain: [OpaquePointer] = []
        if let others {
            for index in 0..<OPENSSL_sk_num(others) {
                if let raw = OPENSSL_sk_value(others, index) { chain.append(OpaquePointer(raw)) }
            }
            OPENSSL_sk_free(others)  // the certificates now belong to `chain`
        }
        guard let certificate, let key else {
            if let certificate { X509_free(certificate) }
            if let key { EVP_PKEY_free(key) }
            chain.forEach { X509_free($0) }
            OpenSSLErrorQueue.clearQueue()
            return .missing(key == nil ? "private key" : "certificate matching its private key")
        }
        return .identity(certificate, key, chain)
    }

    /// Makes RC2 and the other legacy ciphers available, for the rest of the process; false when
    /// it already was, or when OpenSSL's modules directory has no legacy provider.
    private static func loadLegacyProvider() -> Bool {
        guard OSSL_PROVIDER_available(nil, "legacy") == 0 else { return false }
        // Once a provider is loaded explicitly, the default one is no longer loaded implicitly
        // when first needed: load it too, in case nothing has needed it yet.
        _ = OSSL_PROVIDER_load(nil, "default")
        return OSSL_PROVIDER_load(nil, "legacy") != nil
    }

    private static func matched(certificate: OpaquePointer, key: OpaquePointer, chain: [OpaquePointer], what: String) throws -> TLSClientIdentity {
        guard X509_check_private_key(certificate, key) == 1 else {
            OpenSSLErrorQueue.clearQueue()
            X509_free(certificate)
            EVP_PKEY_free(key)
            chain.forEach { X509_free($0) }
            throw TLSError(.badConfiguration, "\(what)'s private key does not belong to its certificate")
        }
        return try TLSClientIdentity(certificate: certificate, key: key, chain: chain)
    }

    private static func entry(_ name: OpaquePointer?, nid: Int32) -> String? {
        guard let name else { return nil }
        let index = X509_NAME_get_index_by_NID(name, nid, -1)
        guard index >= 0, let entry = X509_NAME_get_entry(name, index), let data = X509_NAME_ENTRY_get_data(entry) else { return nil }
        var utf8: UnsafeMutablePointer<UInt8>?
        let length = ASN1_STRING_to_UTF8(&utf8, data)
        guard length >= 0, let utf8 else { return nil }
        defer { copenssl_OPENSSL_free(utf8) }
        return String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
    }
}
