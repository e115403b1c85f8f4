internal import COpenSSL
import OpenSSLSupport
#if canImport(Glibc)
import Glibc
#endif

// `public`: the MockAPNs product's API takes these (`MockAPNsServer.start(certificates:)`).
/// Certificates for tests and the demo: a throw-away CA and a leaf it signs. Generated
/// at run time so nothing secret or expiring is committed, and so clients exercise
/// real chain and host-name verification against the emulator.
public struct TestCertificates: Sendable {
    /// The CA to trust (`TLSContext.client(extraCAPEM:)` or a file for `APNS_CA_FILE`).
    public let caPEM: String
    /// The leaf certificate, for `TLSContext.server(certificateChainPEM:)`.
    public let certificatePEM: String
    /// The leaf's private key (PKCS#8 PEM).
    public let privateKeyPEM: String
    /// The CA's private key (PKCS#8 PEM): what signs the push client certificates
    /// `issuePushClientCertificate` makes, which the emulator then accepts.
    public let caPrivateKeyPEM: String

    /// Makes a CA (EC P-256, `basicConstraints CA:TRUE`) and a server leaf it signs.
    ///
    /// - Parameters:
    ///   - commonName: the leaf's CN (clients check the SANs, not the CN).
    ///   - subjectAltNames: host names become DNS entries and IP literals IP entries.
    ///   - validDays: validity from one hour ago (tolerating clock skew).
    ///   - caName: the CA's CN. A CA standing in for a new root (Apple moved APNs to one in 2025)
    ///     takes its own name, as a real new root has, so what a client reports names which CA it
    ///     was shown. (A client trusting another CA fails with "unable to get local issuer" either
    ///     way: the leaf's authority key id names the signing key, not just the name.)
    public static func make(commonName: String = "localhost",
                            subjectAltNames: [String] = ["localhost", "127.0.0.1", "::1"],
                            validDays: Int = 30,
                            caName: String = "apns-relay throw-away test CA") throws -> TestCertificates {
        guard validDays > 0 else {
            throw TLSError(.badConfiguration, "validDays must be positive, not \(validDays)")
        }
        var entries: [String] = []
        for name in subjectAltNames {
            guard !name.isEmpty, !name.contains(","), !name.contains(where: \.isWhitespace) else {
                throw TLSError(.badConfiguration, "subject alternative name \"\(name)\" must be a host name or IP address")
            }
            entries.append(isIPAddress(name) ? "IP:\(name)" : "DNS:\(name)")
        }
        let now = Int64(time(nil))
        // From one hour ago, tolerating clock skew.
        let validity = (notBefore: now - 3600, notAfter: now + Int64(validDays) * 86_400)
        let caKey = try generateP256Key()
        defer { EVP_PKEY_free(caKey) }
        let leafKey = try generateP256Key()
        defer { EVP_PKEY_free(leafKey) }

        let ca = try makeCertificate(subject: [("CN", caName)], publicKey: caKey,
                                     issuer: nil, signingKey: caKey, validity: validity, extensions: [
                                         (NID_basic_constraints, "critical,CA:TRUE"),
                                         (NID_key_usage, "critical,keyCertSign,cRLSign"),
                                         (NID_subject_key_identifier, "hash"),
                                     ])
        defer { X509_free(ca) }
        var leafExtensions: [(Int32, String)] = [
            (NID_basic_constraints, "critical,CA:FALSE"),
            (NID_key_usage, "critical,digitalSignature"),
            (NID_ext_key_usage, "serverAuth"),
            (NID_subject_key_identifier, "hash"),
            (NID_authority_key_identifier, "keyid:always"),
        ]
        if !entries.isEmpty {
            leafExtensions.append((NID_subject_alt_name, entries.joined(separator: ",")))
        }
        let leaf = try makeCertificate(subject: [("CN", commonName)], publicKey: leafKey, issuer: ca,
                                       signingKey: caKey, validity: validity, extensions: leafExtensions)
        defer { X509_free(leaf) }

        return TestCertificates(
            caPEM: try encodeCertificatePEM(ca),
            certificatePEM: try encodeCertificatePEM(leaf),
            privateKeyPEM: try encodePrivateKeyPEM(leafKey),
            caPrivateKeyPEM: try encodePrivateKeyPEM(caKey))
    }

    private init(caPEM: String, certificatePEM: String, privateKeyPEM: String, caPrivateKeyPEM: String) {
        self.caPEM = caPEM
        self.certificatePEM = certificatePEM
        self.privateKeyPEM = privateKeyPEM
        self.caPrivateKeyPEM = caPrivateKeyPEM
    }
}

/// Whether OpenSSL reads `name` as an IPv4 or IPv6 literal.
private func isIPAddress(_ name: String) -> Bool {
    guard let octets = a2i_IPADDRESS(name) else {
        OpenSSLErrorQueue.clearQueue()
        return false
    }
    ASN1_OCTET_STRING_free(octets)
    return true
}

/// A signed v3 certificate; `issuer == nil` makes it self-signed. The caller frees it.
///
/// - Parameters:
///   - subject: the name's attributes in order, by OpenSSL's short names (`CN`, `UID`, `OU`…).
///   - validity: notBefore and notAfter, in Unix seconds.
func makeCertificate(subject: [(field: String, value: String)], publicKey: OpaquePointer, issuer: OpaquePointer?,
                     signingKey: OpaquePointer, validity: (notBefore: Int64, notAfter: Int64),
                     extensions: [(Int32, String)]) throws -> OpaquePointer {
    OpenSSLErrorQueue.clearQueue()
    guard let certificate = X509_new() else {
        throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("out of memory creating a certificate"))
    }
    var owned = true
    defer { if owned { X509_free(certificate) } }
    func check(_ ok: Bool, _ what: String) throws {
        if !ok { throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not \(what) while making a test certificate")) }
    }

    try check(X509_set_version(certificate, 2) == 1, "set version 3")
    var serial: UInt64 = 0
    try check(withUnsafeMutableBytes(of: &serial) { RAND_bytes($0.baseAddress!.assumingMemoryBound(to: UInt8.self), 8) } == 1,
              "draw a serial number")
    try check(ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), serial >> 1 | 1) == 1, "set the serial number")
    try check(ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(validity.notBefore)) != nil, "set notBefore")
    try check(ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(validity.notAfter)) != nil, "set notAfter")

    guard let name = X509_NAME_new() else { throw TLSError(.badConfiguration, "out of memory creating a name") }
    defer { X509_NAME_free(name) }
    for (field, value) in subject {
        try check(X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, value, -1, -1, 0) == 1, "set the subject's \(field)")
    }
    try check(X509_set_subject_name(certificate, name) == 1, "set the subject")
    try check(X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0) } ?? name) == 1, "set the issuer")
    try check(X509_set_pubkey(certificate, publicKey) == 1, "set the public key")

    var v3 = X509V3_CTX()
    copenssl_X509V3_set_ctx_nodb(&v3)
    X509V3_set_ctx(&v3, issuer ?? certificate, certificate, nil, nil, 0)
    for (nid, value) in extensions {
        guard let ext = X509V3_EXT_nconf_nid(nil, &v3, nid, value) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not build the extension \(value)"))
        }
        defer { X509_EXTENSION_free(ext) }
        try check(X509_add_ext(certificate, ext, -1) == 1, "add the extension \(value)")
    }
    try check(X509_sign(certificate, signingKey, EVP_sha256()) > 0, "sign")
    owned = false
    return certificate
}

func encodeCertificatePEM(_ certificate: OpaquePointer) throws -> String {
    try stringFromBIO { PEM_write_bio_X509($0, certificate) == 1 }
}
