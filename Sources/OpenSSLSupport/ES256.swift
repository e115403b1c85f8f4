internal import COpenSSL
internal import Basics

/// Why a key could not be loaded or used, with a message that says which file to use.
/// Equality is on the code, as for every `CodedError` (written out: the conformance is public).
public struct KeyError: Error, Sendable, Equatable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The text is not a PEM key at all (or is encrypted).
        public static let notAKey = Code("notAKey")
        /// A valid key of the wrong kind: RSA, or EC on a curve other than P-256.
        public static let wrongKeyType = Code("wrongKeyType")
        /// OpenSSL failed while signing or encoding (out of memory, broken provider).
        public static let operationFailed = Code("operationFailed")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "key \(code): \(message)" }

    public static func == (lhs: KeyError, rhs: KeyError) -> Bool { lhs.code == rhs.code }
}

extension KeyError: CodedError {}

// The two key types (and KeyError) are `public`, unlike the rest of this module: the MockAPNs
// product's API takes a public key (`MockKeyVerifier.es256`), and its users make one from a
// private key.
/// The P-256 private key that signs APNs provider tokens (ES256).
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never mutated after `init`; signing only reads it
/// (OpenSSL 3 takes the key's own lock to cache the `EC_KEY` that `ECDSA_do_sign_ex` needs).
public final class ES256PrivateKey: @unchecked Sendable {
    let pkey: OpaquePointer
    /// Derived once: verifying our own tokens (tests, the emulator) is common.
    public let publicKey: ES256PublicKey

    static let p8Message = "the key must be the text of the .p8 file from Apple (-----BEGIN PRIVATE KEY----- …)"

    /// Loads the text of Apple's `.p8` file (PKCS#8 "BEGIN PRIVATE KEY"), or a SEC1
    /// "BEGIN EC PRIVATE KEY". Environment variables often carry the key with literal
    /// `\n` sequences, surrounding quotes or whitespace, or on one line; all are accepted.
    public convenience init(pem: String) throws {
        OpenSSLErrorQueue.clearQueue()
        let text = normalizePEM(pem)
        // Apple's shape is read by our own code; any other text goes to OpenSSL's reader,
        // which accepts the rest (SEC1) and words every refusal.
        if let (scalar, stored) = P256PKCS8.read(pem: text), let key = try Self.key(scalar: scalar, stored: stored) {
            try self.init(owning: key)
            return
        }
        let key: OpaquePointer? = try withReadBIO(text) { copenssl_PEM_read_bio_PrivateKey($0) }
        OpenSSLErrorQueue.clearQueue()
        guard let key else { throw KeyError(.notAKey, Self.p8Message) }
        do {
            try requireP256(key, what: "private key")
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        try self.init(owning: key)
    }

    private init(owning key: OpaquePointer) throws {
        do {
            publicKey = try ES256PublicKey(publicHalfOf: key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        pkey = key
    }

    /// The key for `scalar` (with its public point d·G); nil when the scalar is not a P-256
    /// private key (OpenSSL then words the refusal).
    /// - Throws: when `stored`, the point the file carries, is not the scalar's point: the file
    ///   is damaged (a changed character in the scalar's base64 still decodes), and OpenSSL would
    ///   load it anyway, so the relay would sign every token with a key Apple does not know and
    ///   hear InvalidProviderToken for every push instead of refusing the key at start-up.
    private static func key(scalar: [UInt8], stored: [UInt8]?) throws -> OpaquePointer? {
        defer { OpenSSLErrorQueue.clearQueue() }
        var point = [UInt8](repeating: 0, count: 65)
        guard copenssl_p256_public_from_private(scalar, scalar.count, &point) == 1 else { return nil }
        if let stored, stored != point {
            throw KeyError(.notAKey, "the key's public half does not match its private half: the .p8 text is damaged; "
                + "copy the file from Apple again (\(p8Message))")
        }
        return copenssl_p256_from_raw(scalar, scalar.count, point, point.count)
    }

    /// The key whose private scalar is `scalar` (32 bytes, big-endian), e.g. a test vector's.
    /// - Throws: `KeyError.notAKey` when it is not a P-256 private key (zero, or not below n).
    package convenience init(scalar: [UInt8]) throws {
        guard let key = try Self.key(scalar: scalar, stored: nil) else {
            throw KeyError(.notAKey, "the scalar is not a P-256 private key (32 bytes, in 1 ..< n)")
        }
        try self.init(owning: key)
    }

    deinit {
        EVP_PKEY_free(pkey)
    }

    /// A fresh random key, for tests and the demo (Apple issues real ones).
    public static func generate() throws -> ES256PrivateKey {
        try ES256PrivateKey(owning: generateP256Key())
    }

    /// The key as PKCS#8 PEM ("BEGIN PRIVATE KEY"), the same format as Apple's `.p8`.
    /// Secret: never log it.
    public var pemPKCS8: String {
        (try? encodePrivateKeyPEM(pkey)) ?? ""
    }

    /// Signs with ECDSA P-256 / SHA-256, deterministically: the nonce is RFC 6979's (`RFC6979`),
    /// so one key signs one message to the same bytes in every process and every time. That is
    /// what lets every relay of a fleet present the byte-identical provider token (Apple counts
    /// new tokens per team, not per process). Returns the JWS form: raw r‖s, exactly 64 bytes,
    /// each half left-padded to 32 (a plain conversion drops leading zeros about once in 128
    /// signatures and Apple then rejects the token). `s` is left as ECDSA computes it, not
    /// lowered to n − s: ES256 verifiers, Apple's among them, accept either, and RFC 6979's test
    /// vectors are the unlowered values.
    public func sign(_ message: UnsafeRawBufferPointer) throws -> [UInt8] {
        OpenSSLErrorQueue.clearQueue()
        var digest = [UInt8](repeating: 0, count: 32)
        guard copenssl_sha256(message.baseAddress, message.count, &digest) == 1 else {
            throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not hash the message"))
        }
        var scalar = [UInt8](repeating: 0, count: 32)
        defer { for index in scalar.indices { scalar[index] = 0 } }
        guard copenssl_p256_private_raw(pkey, &scalar) == 1 else {
            throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not read the private key"))
        }
        guard var nonce = RFC6979.nonce(privateKey: scalar, digest: digest) else {
            throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not derive the RFC 6979 nonce"))
        }
        defer { for index in nonce.indices { nonce[index] = 0 } }
        var raw = [UInt8](repeating: 0, count: 64)
        guard copenssl_p256_sign_with_nonce(pkey, digest, nonce, &raw) == 1 else {
            throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not sign"))
        }
        return raw
    }

    /// Signs `message`; see `sign(_: UnsafeRawBufferPointer)`.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        try message.withUnsafeBytes { try sign($0) }
    }
}

/// The public half of an ES256 key: what the APNs emulator checks tokens with.
///
/// `@unchecked Sendable`: immutable after `init`; verification only reads the key.
public final class ES256PublicKey: @unchecked Sendable {
    let pkey: OpaquePointer

    /// Loads a "BEGIN PUBLIC KEY" (SubjectPublicKeyInfo) PEM of a P-256 key.
    public init(pem: String) throws {
        OpenSSLErrorQueue.clearQueue()
        let key: OpaquePointer? = try withReadBIO(normalizePEM(pem)) { copenssl_PEM_read_bio_PUBKEY($0) }
        OpenSSLErrorQueue.clearQueue()
        guard let key else {
            throw KeyError(.notAKey, "the public key must be PEM text starting with -----BEGIN PUBLIC KEY-----")
        }
        do {
            try requireP256(key, what: "public key")
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        pkey = key
    }

    /// Takes ownership of a P-256 public key.
    fileprivate init(owning key: OpaquePointer) {
        pkey = key
    }

    /// The public half of a P-256 key pair, as its own key: the point is copied out, never
    /// written as PEM and read back (OpenSSL's encoders and decoders would run for it).
    fileprivate convenience init(publicHalfOf key: OpaquePointer) throws {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, &point, point.count, &length) == 1,
              length == 65, let publicHalf = copenssl_p256_from_raw(nil, 0, point, length) else {
            throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not take the public key out of the private key"))
        }
        self.init(owning: publicHalf)
    }

    deinit {
        EVP_PKEY_free(pkey)
    }

    /// The key as "BEGIN PUBLIC KEY" PEM, to hand to whoever verifies our tokens.
    public var pem: String {
        (try? publicKeyPEM(pkey)) ?? ""
    }

    /// Checks a JWS-style raw r‖s signature (64 bytes) over `message` with SHA-256.
    /// Any other length, or any garbage, is simply `false`: input comes from the network.
    public func verify(signature raw: [UInt8], message: [UInt8]) -> Bool {
        guard raw.count == 64 else { return false }
        defer { OpenSSLErrorQueue.clearQueue() }
        guard let signature = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { buffer in
            (BN_bin2bn(buffer.baseAddress!, 32, nil), BN_bin2bn(buffer.baseAddress! + 32, 32, nil))
        }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {  // set0 takes ownership on success
            BN_free(r)
            BN_free(s)
            return false
        }
        let derLength = i2d_ECDSA_SIG(signature, nil)
        guard derLength > 0 else { return false }
        var der = [UInt8](repeating: 0, count: Int(derLength))
        let encoded = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress  // i2d advances it
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard encoded == derLength else { return false }
        guard let md = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(md) }
        guard EVP_DigestVerifyInit(md, nil, EVP_sha256(), nil, pkey) == 1 else { return false }
        return message.withUnsafeBufferPointer { data in
            EVP_DigestVerify(md, der, der.count, data.baseAddress, data.count) == 1
        }
    }
}

// MARK: - Helpers shared with TestCertificates

/// Undoes what environment variables and copy-paste do to PEM: literal `\n`, CRLF,
/// quotes, surrounding whitespace, everything on one line. The body is re-wrapped at
/// 64 columns; text without PEM markers is returned trimmed (and fails to parse).
func normalizePEM(_ input: String) -> String {
    // Literal `\n` becomes a line feed; literal `\r` and carriage returns go.
    var bytes: [UInt8] = []
    bytes.reserveCapacity(input.utf8.count)
    var afterBackslash = false
    for byte in input.utf8 {
        if afterBackslash {
            afterBackslash = false
            if byte == UInt8(ascii: "n") { bytes.append(UInt8(ascii: "\n")); continue }
            if byte == UInt8(ascii: "r") { continue }
            bytes.append(UInt8(ascii: "\\"))
        }
        if byte == UInt8(ascii: "\\") {
            afterBackslash = true
        } else if byte != UInt8(ascii: "\r") {
            bytes.append(byte)
        }
    }
    if afterBackslash { bytes.append(UInt8(ascii: "\\")) }
    var text = trimmed(String(decoding: bytes, as: UTF8.self))
    if text.count >= 2, let first = text.first, first == text.last, first == "\"" || first == "'" {
        text = trimmed(String(text.dropFirst().dropLast()))
    }
    let utf8 = Array(text.utf8)
    guard let begin = find("-----BEGIN ", in: utf8, from: 0),
          let beginEnd = find("-----", in: utf8, from: begin.upperBound),
          let end = find("-----END ", in: utf8, from: beginEnd.upperBound) else {
        return text
    }
    let label = String(decoding: utf8[begin.upperBound..<beginEnd.lowerBound], as: UTF8.self)
    let body = utf8[beginEnd.upperBound..<end.lowerBound]
    // Encrypted legacy PEM carries "Proc-Type:" headers; leave it for OpenSSL to refuse.
    guard !body.contains(UInt8(ascii: ":")) else { return text }
    let base64 = String(decoding: body, as: UTF8.self).filter { !$0.isWhitespace }
    var lines = ["-----BEGIN \(label)-----"]
    var rest = Substring(base64)
    while !rest.isEmpty {
        lines.append(String(rest.prefix(64)))
        rest = rest.dropFirst(64)
    }
    lines.append("-----END \(label)-----")
    return lines.joined(separator: "\n") + "\n"
}

/// Where the ASCII `marker` next occurs in `bytes`, at `from` or later. (Byte by byte: the
/// standard library's `firstRange(of:)` would link _StringProcessing into every binary that
/// uses this module, and the modules with a text-search helper are all above this one.)
private func find(_ marker: String, in bytes: [UInt8], from: Int) -> Range<Int>? {
    let needle = Array(marker.utf8)
    var at = from
    while at + needle.count <= bytes.count {
        if bytes[at..<(at + needle.count)].elementsEqual(needle) { return at..<(at + needle.count) }
        at += 1
    }
    return nil
}

private func trimmed(_ text: String) -> String {
    String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
}

/// Refuses anything but an EC P-256 key, naming what was found, because an ES256
/// token signed with another key is refused by Apple with an unhelpful 403.
func requireP256(_ key: OpaquePointer, what: String) throws {
    guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
        throw KeyError(.wrongKeyType, "the \(what) is not an EC key; APNs tokens need the P-256 (ES256) key from Apple's .p8 file")
    }
    var name = [CChar](repeating: 0, count: 80)
    var length = 0
    guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
        throw KeyError(.wrongKeyType, OpenSSLErrorQueue.message("the \(what) is an EC key on an unknown curve; APNs tokens need P-256"))
    }
    let curve = String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    guard curve == "prime256v1" || curve == "P-256" else {
        throw KeyError(.wrongKeyType, "the \(what) is an EC key on curve \(curve); APNs tokens (ES256) need a P-256 key, the .p8 file from Apple")
    }
}

/// A new EC P-256 key; the caller owns it.
package func generateP256Key() throws -> OpaquePointer {
    OpenSSLErrorQueue.clearQueue()
    guard let key = copenssl_EVP_EC_gen("P-256") else {
        throw KeyError(.operationFailed, OpenSSLErrorQueue.message("could not generate a P-256 key"))
    }
    return key
}

package func encodePrivateKeyPEM(_ key: OpaquePointer) throws -> String {
    try stringFromBIO { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) == 1 }
}

func publicKeyPEM(_ key: OpaquePointer) throws -> String {
    try stringFromBIO { PEM_write_bio_PUBKEY($0, key) == 1 }
}
