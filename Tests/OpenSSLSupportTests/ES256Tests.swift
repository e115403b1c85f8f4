import Testing
internal import COpenSSL
import OpenSSLSupport
import CertificateSupport

/// An independent check of a raw r‖s signature: our own DER encoding and OpenSSL's
/// EVP_DigestVerify, sharing no code with `ES256PublicKey.verify`.
func independentlyVerifies(raw: [UInt8], message: [UInt8], publicKeyPEM: String) -> Bool {
    guard raw.count == 64 else { return false }
    func derInteger(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var value = Array(bytes.drop { $0 == 0 })
        if value.isEmpty { value = [0] }
        if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
        return [0x02, UInt8(value.count)] + value
    }
    let body = derInteger(raw[0..<32]) + derInteger(raw[32..<64])
    let der: [UInt8] = [0x30, UInt8(body.count)] + body

    var pem = Array(publicKeyPEM.utf8)
    let key: OpaquePointer? = pem.withUnsafeMutableBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
        defer { BIO_free(bio) }
        return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
    }
    guard let key else { return false }
    defer { EVP_PKEY_free(key) }
    guard let md = EVP_MD_CTX_new() else { return false }
    defer { EVP_MD_CTX_free(md) }
    guard EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, key) == 1 else { return false }
    let ok = EVP_DigestVerify(md, der, der.count, message, message.count) == 1
    ERR_clear_error()
    return ok
}

/// A PEM private key made by OpenSSL directly: another curve, or the traditional
/// ("BEGIN EC PRIVATE KEY") encoding.
func opensslKeyPEM(curve: String, traditional: Bool = false) throws -> (privateKey: String, publicKey: String) {
    let key = try #require(copenssl_EVP_EC_gen(curve))
    defer { EVP_PKEY_free(key) }
    func write(_ body: (OpaquePointer) -> Int32) throws -> String {
        let bio = try #require(BIO_new(BIO_s_mem()))
        defer { BIO_free(bio) }
        try #require(body(bio) == 1)
        var data: UnsafeMutablePointer<CChar>?
        let length = copenssl_BIO_get_mem_data(bio, &data)
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
    let privateKey = try write {
        traditional ? PEM_write_bio_PrivateKey_traditional($0, key, nil, nil, 0, nil, nil)
                    : PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil)
    }
    let publicKey = try write { PEM_write_bio_PUBKEY($0, key) }
    return (privateKey, publicKey)
}

@Suite("ES256 keys")
struct ES256Tests {
    @Test("2,000 signatures are all 64 bytes and verify, including halves with leading zeros")
    func signVerifyRoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let publicPEM = key.publicKey.pem
        var halvesWithLeadingZero = 0
        for index in 0..<2_000 {
            let message = Array("{\"alg\":\"ES256\",\"kid\":\"ABC123DEFG\"}.{\"iss\":\"TEAM\",\"iat\":\(1_700_000_000 + index)}".utf8)
            let signature = try key.sign(message)
            try #require(signature.count == 64, "signature \(index) is \(signature.count) bytes")
            if signature[0] == 0 || signature[32] == 0 { halvesWithLeadingZero += 1 }
            try #require(key.publicKey.verify(signature: signature, message: message), "signature \(index)")
            try #require(independentlyVerifies(raw: signature, message: message, publicKeyPEM: publicPEM),
                         "signature \(index) fails the independent check")
        }
        // About 2 in 256 signatures have a half starting with 0x00: the case BN_bn2bin gets wrong.
        #expect(halvesWithLeadingZero > 0)
    }

    @Test("a tampered message or signature does not verify")
    func tamperedFails() throws {
        let key = try ES256PrivateKey.generate()
        let message = Array("the message".utf8)
        let signature = try key.sign(message)
        #expect(key.publicKey.verify(signature: signature, message: message))
        var tamperedMessage = message
        tamperedMessage[0] ^= 1
        #expect(!key.publicKey.verify(signature: signature, message: tamperedMessage))
        var tamperedSignature = signature
        tamperedSignature[40] ^= 0x80
        #expect(!key.publicKey.verify(signature: tamperedSignature, message: message))
        let otherKey = try ES256PrivateKey.generate()
        #expect(!otherKey.publicKey.verify(signature: signature, message: message))
    }

    @Test("signatures of any other length are false, never a trap", arguments: [0, 1, 63, 65, 70, 72, 128])
    func wrongLengthIsFalse(length: Int) throws {
        let key = try ES256PrivateKey.generate()
        #expect(!key.publicKey.verify(signature: [UInt8](repeating: 0x01, count: length), message: [1, 2, 3]))
        #expect(!key.publicKey.verify(signature: [UInt8](repeating: 0, count: 64), message: [1, 2, 3]))
    }

    @Test("an empty message signs and verifies")
    func emptyMessage() throws {
        let key = try ES256PrivateKey.generate()
        let signature = try key.sign([])
        #expect(key.publicKey.verify(signature: signature, message: []))
    }

    @Test("generate → pemPKCS8 → init(pem:) gives the same key")
    func pkcs8RoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let pem = key.pemPKCS8
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let reloaded = try ES256PrivateKey(pem: pem)
        #expect(reloaded.publicKey.pem == key.publicKey.pem)
        let signature = try reloaded.sign([9, 8, 7])
        #expect(key.publicKey.verify(signature: signature, message: [9, 8, 7]))
    }

    @Test("the public key PEM round-trips")
    func publicKeyRoundTrip() throws {
        let key = try ES256PrivateKey.generate()
        let pem = key.publicKey.pem
        #expect(pem.hasPrefix("-----BEGIN PUBLIC KEY-----\n"))
        let reloaded = try ES256PublicKey(pem: pem)
        #expect(reloaded.pem == pem)
        let signature = try key.sign([1])
        #expect(reloaded.verify(signature: signature, message: [1]))
    }

    @Test("a .p8 pasted with literal \\n, quotes and whitespace still parses")
    func literalNewlines() throws {
        let key = try ES256PrivateKey.generate()
        let mangled = "  \"" + key.pemPKCS8.split(separator: "\n").joined(separator: "\\n") + "\\n\"\n"
        #expect(mangled.contains("\\n"))
        #expect(!mangled.dropLast().contains("\n"))
        let reloaded = try ES256PrivateKey(pem: mangled)
        #expect(reloaded.publicKey.pem == key.publicKey.pem)
    }

    @Test("a .p8 collapsed onto one line with spaces still parses")
    func oneLine() throws {
        let key = try ES256PrivateKey.generate()
        let oneLine = key.pemPKCS8.split(separator: "\n").joined(separator: " ")
        #expect(try ES256PrivateKey(pem: oneLine).publicKey.pem == key.publicKey.pem)
    }

    /// Apple's layout names the curve inside the key too ([0] parameters) and keeps the public
    /// point beside the scalar; OpenSSL writes the point without the curve (pkcs8RoundTrip).
    @Test("a .p8 laid out as Apple writes them loads, with the public key OpenSSL derives from it")
    func appleLayout() throws {
        let p8 = """
            -----BEGIN PRIVATE KEY-----
            MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQgYNS0M/dm3geEGEPq
            UJ8qNbFyJk/44PHfCPTmDGnuPNOgCgYIKoZIzj0DAQehRANCAASKhvYcqZGX3fkF
            r9jri8ftj9LD0CE93gl1egkXWkjdtTO+qrGc+YLBV8G1RwD0PfZs9dm3V9F1hRtF
            BWzbLOjC
            -----END PRIVATE KEY-----
            """
        // `openssl ec -in key.p8 -pubout`
        let publicPEM = """
            -----BEGIN PUBLIC KEY-----
            MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEiob2HKmRl935Ba/Y64vH7Y/Sw9Ah
            Pd4JdXoJF1pI3bUzvqqxnPmCwVfBtUcA9D32bPXZt1fRdYUbRQVs2yzowg==
            -----END PUBLIC KEY-----

            """
        let key = try ES256PrivateKey(pem: p8)
        #expect(key.publicKey.pem == publicPEM)
        let message = Array("header.claims".utf8)
        #expect(independentlyVerifies(raw: try key.sign(message), message: message, publicKeyPEM: publicPEM))
    }

    @Test("a SEC1 \"BEGIN EC PRIVATE KEY\" parses")
    func sec1Parses() throws {
        let (privatePEM, publicPEM) = try opensslKeyPEM(curve: "P-256", traditional: true)
        #expect(privatePEM.hasPrefix("-----BEGIN EC PRIVATE KEY-----"))
        let key = try ES256PrivateKey(pem: privatePEM)
        #expect(key.publicKey.pem == publicPEM)
    }

    @Test("garbage is refused with the .p8 message", arguments: ["", "hello", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg"])
    func garbageKey(text: String) throws {
        let error = try #require(throws: KeyError.self) { try ES256PrivateKey(pem: text) }
        #expect(error.code == .notAKey)
        #expect(error.message == "the key must be the text of the .p8 file from Apple (-----BEGIN PRIVATE KEY----- …)")
    }

    @Test("a P-384 key is refused, naming the curve")
    func p384Refused() throws {
        let (privatePEM, publicPEM) = try opensslKeyPEM(curve: "P-384")
        let error = try #require(throws: KeyError.self) { try ES256PrivateKey(pem: privatePEM) }
        #expect(error.code == .wrongKeyType)
        #expect(error.message.contains("secp384r1"))
        #expect(error.message.contains("P-256"))
        let publicError = try #require(throws: KeyError.self) { try ES256PublicKey(pem: publicPEM) }
        #expect(publicError.code == .wrongKeyType)
    }

    @Test("a public key is not accepted as a private key")
    func publicAsPrivate() throws {
        let key = try ES256PrivateKey.generate()
        #expect(throws: KeyError.self) { try ES256PrivateKey(pem: key.publicKey.pem) }
        #expect(throws: KeyError.self) { try ES256PublicKey(pem: "garbage") }
    }
}

@Suite("Throw-away test certificates")
struct TestCertificatesTests {
    func load(_ pem: String) throws -> OpaquePointer {
        var bytes = Array(pem.utf8)
        let certificate: OpaquePointer? = bytes.withUnsafeMutableBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_X509(bio, nil, nil, nil)
        }
        return try #require(certificate)
    }

    @Test("the CA is a CA, the leaf is not, and the leaf carries its names")
    func shape() throws {
        let certificates = try TestCertificates.make(commonName: "mock.apns", subjectAltNames: ["mock.apns", "10.1.2.3"])
        let ca = try load(certificates.caPEM)
        defer { X509_free(ca) }
        let leaf = try load(certificates.certificatePEM)
        defer { X509_free(leaf) }
        #expect(X509_check_ca(ca) == 1)
        #expect(X509_check_ca(leaf) == 0)
        #expect(X509_check_issued(ca, leaf) == X509_V_OK)
        #expect(X509_check_host(leaf, "mock.apns", 0, 0, nil) == 1)
        #expect(X509_check_host(leaf, "localhost", 0, 0, nil) == 0)
        #expect(X509_check_ip_asc(leaf, "10.1.2.3", 0) == 1)
        #expect(certificates.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
    }

    @Test("a non-positive validity is refused")
    func badValidity() {
        #expect(throws: TLSError.self) { try TestCertificates.make(validDays: 0) }
    }
}
