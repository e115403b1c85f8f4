internal import COpenSSL
import OpenSSLSupport
#if canImport(Glibc)
import Glibc
#endif

/// The APNs environments a push certificate may be for. Apple's portal names each kind in the
/// certificate's common name, which is how the emulator tells them apart.
public enum PushCertificateEnvironment: Sendable, CaseIterable {
    /// "Apple Push Services": both sandbox and production (what the portal issues today).
    case universal
    /// "Apple Development IOS Push Services": the sandbox only.
    case development
    /// "Apple Production IOS Push Services": production only.
    case production

    /// The common name's prefix, before the bundle id.
    public var commonNamePrefix: String {
        switch self {
        case .universal: return "Apple Push Services: "
        case .development: return "Apple Development IOS Push Services: "
        case .production: return "Apple Production IOS Push Services: "
        }
    }
}

/// A provider (TLS client) certificate shaped like the ones Apple's portal issues, signed by a
/// test CA: for trying certificate-based authentication against the emulator.
public struct PushClientCertificate: Sendable {
    /// The certificate alone (PEM).
    public let certificatePEM: String
    /// Its private key (PKCS#8 PEM, unencrypted).
    public let privateKeyPEM: String
}

extension TestCertificates {
    /// Issues a push client certificate signed by this CA, with Apple's subject:
    /// `UID=<bundle id>, CN=<environment's prefix><bundle id>, OU=<team id>, O=<organization>, C=US`
    /// and `extendedKeyUsage clientAuth`. The key is EC P-256 (Apple's are RSA 2048; TLS does not mind).
    ///
    /// - Parameters:
    ///   - bundleID: the app's bundle id, the certificate's one topic (its subject's UID).
    ///   - teamID: the developer team, the subject's OU.
    ///   - notBefore: Unix seconds; nil is one hour ago.
    ///   - notAfter: Unix seconds; nil is a year after now. Earlier than now makes an expired
    ///     certificate, which a verifying server refuses.
    public func issuePushClientCertificate(bundleID: String, teamID: String, organization: String = "Example Developer",
                                           environment: PushCertificateEnvironment = .universal,
                                           notBefore: Int64? = nil, notAfter: Int64? = nil) throws -> PushClientCertificate {
        for (what, value) in [("bundle id", bundleID), ("team id", teamID), ("organization", organization)]
        where value.isEmpty || value.utf8.contains(0) {
            throw TLSError(.badConfiguration, "the push certificate's \(what) must be non-empty text")
        }
        let now = Int64(time(nil))
        let validity = (notBefore: notBefore ?? now - 3600, notAfter: notAfter ?? now + 365 * 86_400)
        guard validity.notBefore < validity.notAfter else {
            throw TLSError(.badConfiguration, "the push certificate's notBefore must come before its notAfter")
        }
        let ca = try readCertificatePEM(caPEM)
        defer { X509_free(ca) }
        let caKey = try readPrivateKeyPEM(caPrivateKeyPEM)
        defer { EVP_PKEY_free(caKey) }
        let key = try generateP256Key()
        defer { EVP_PKEY_free(key) }
        let subject: [(field: String, value: String)] = [
            ("UID", bundleID),
            ("CN", environment.commonNamePrefix + bundleID),
            ("OU", teamID),
            ("O", organization),
            ("C", "US"),
        ]
        let certificate = try makeCertificate(subject: subject, publicKey: key, issuer: ca, signingKey: caKey,
                                              validity: validity, extensions: [
                                                  (NID_basic_constraints, "critical,CA:FALSE"),
                                                  (NID_key_usage, "critical,digitalSignature"),
                                                  (NID_ext_key_usage, "clientAuth"),
                                                  (NID_subject_key_identifier, "hash"),
                                                  (NID_authority_key_identifier, "keyid:always"),
                                              ])
        defer { X509_free(certificate) }
        return PushClientCertificate(certificatePEM: try encodeCertificatePEM(certificate),
                                     privateKeyPEM: try encodePrivateKeyPEM(key))
    }
}

/// Runs `body` with a read-only memory BIO over `text`.
private func withBIO<R>(_ text: String, _ body: (OpaquePointer) throws -> R) throws -> R {
    var bytes = Array(text.utf8)
    return try bytes.withUnsafeMutableBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
            throw TLSError(.badConfiguration, "out of memory creating a BIO")
        }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// The first certificate of a PEM text; the caller frees it.
private func readCertificatePEM(_ pem: String) throws -> OpaquePointer {
    try withBIO(pem) { bio in
        guard let certificate = copenssl_PEM_read_bio_X509(bio) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("the CA certificate is not PEM"))
        }
        return certificate
    }
}

/// An unencrypted PEM private key; the caller frees it.
private func readPrivateKeyPEM(_ pem: String) throws -> OpaquePointer {
    try withBIO(pem) { bio in
        guard let key = copenssl_PEM_read_bio_PrivateKey(bio) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("the CA private key is not an unencrypted PEM key"))
        }
        return key
    }
}
