import Testing
internal import COpenSSL
@testable import OpenSSLSupport

/// Deterministic ES256 (RFC 6979 nonces, `ECDSA_do_sign_ex` with them) against the RFC's own
/// vectors, and the property the relay needs of it: one key, one message, one signature.
@Suite("RFC 6979 deterministic ES256")
struct RFC6979Tests {
    // RFC 6979, Appendix A.2.5 ("ECDSA, 256 Bits (Prime Field)"), verbatim: the key pair, and
    // the SHA-256 signatures of the messages "sample" and "test".
    //
    //   curve: NIST P-256
    //
    //   q = FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    //   (qlen = 256 bits)
    //
    //   private key:
    //
    //   x = C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721
    //
    //   public key: U = xG
    //
    //   Ux = 60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6
    //
    //   Uy = 7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299
    //
    //   With SHA-256, message = "sample":
    //   k = A6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60
    //   r = EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716
    //   s = F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8
    //
    //   With SHA-256, message = "test":
    //   k = D16B6AE827F17175E040871A1C7EC3500192C4C92677336EC2537ACAEE0008E0
    //   r = F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367
    //   s = 019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083
    static let q = "FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551"
    static let x = "C9AFA9D845BA75166B5C215767B1D6934E50C3DB36E89B127B8A622B120F6721"
    static let ux = "60FED4BA255A9D31C961EB74C6356D68C049B8923B61FA6CE669622E60F29FB6"
    static let uy = "7903FE1008B8BC99A41AE9E95628BC64F2F1B20C2D7E9F5177A3C294D4462299"

    struct Vector: Sendable, CustomTestStringConvertible {
        let message: String
        let k: String
        let r: String
        let s: String
        var testDescription: String { "\"\(message)\"" }
    }

    static let vectors = [
        Vector(message: "sample",
               k: "A6E3C57DD01ABE90086538398355DD4C3B17AA873382B0F24D6129493D8AAD60",
               r: "EFD48B2AACB6A8FD1140DD9CD45E81D69D2C877B56AAF991C34D0EA84EAF3716",
               s: "F7CB1C942D657C41D436C7A1B6E29F65F3E900DBB9AFF4064DC4AB2F843ACDA8"),
        Vector(message: "test",
               k: "D16B6AE827F17175E040871A1C7EC3500192C4C92677336EC2537ACAEE0008E0",
               r: "F1ABB023518351CD71D881567B1EA663ED3EFCF6C5132B354F28D3B0B7D38367",
               s: "019F4113742A2B14BD25926B49C649155F267E60D3814B4C0CC84250E46F0083"),
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)! }
    }

    static func sha256(_ text: String) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let message = Array(text.utf8)
        _ = copenssl_sha256(message, message.count, &digest)
        return digest
    }

    @Test("the RFC's key pair: q is ours, and x loads with the public point U = xG")
    func keyPair() throws {
        #expect(RFC6979.order == Self.bytes(Self.q))
        var point = [UInt8](repeating: 0, count: 65)
        #expect(copenssl_p256_public_from_private(Self.bytes(Self.x), 32, &point) == 1)
        #expect(point == [0x04] + Self.bytes(Self.ux) + Self.bytes(Self.uy))
        _ = try ES256PrivateKey(scalar: Self.bytes(Self.x))
    }

    @Test("the nonce k of RFC 6979 section 3.2 for SHA-256", arguments: vectors)
    func nonce(_ vector: Vector) {
        #expect(RFC6979.nonce(privateKey: Self.bytes(Self.x), digest: Self.sha256(vector.message)) == Self.bytes(vector.k))
    }

    @Test("the signature r‖s, byte for byte, and it verifies", arguments: vectors)
    func signature(_ vector: Vector) throws {
        let key = try ES256PrivateKey(scalar: Self.bytes(Self.x))
        let message = Array(vector.message.utf8)
        let signature = try key.sign(message)
        #expect(signature == Self.bytes(vector.r) + Self.bytes(vector.s))
        #expect(key.publicKey.verify(signature: signature, message: message))
        #expect(independentlyVerifies(raw: signature, message: message, publicKeyPEM: key.publicKey.pem))
    }

    @Test("the same key loaded twice signs the same message to the same bytes; another message or key, other bytes")
    func deterministic() throws {
        let key = try ES256PrivateKey.generate()
        let again = try ES256PrivateKey(pem: key.pemPKCS8)
        let message = Array(#"{"alg":"ES256","kid":"ABC123DEFG"}.{"iss":"TEAM123456","iat":1800000000}"#.utf8)
        let signature = try key.sign(message)
        #expect(try key.sign(message) == signature)
        #expect(try again.sign(message) == signature)
        #expect(try key.sign(message + [0x20]) != signature)
        #expect(try ES256PrivateKey.generate().sign(message) != signature)
    }

    @Test("a digest not below q is reduced first (bits2octets), as the RFC's h1 mod q")
    func digestAboveOrder() {
        // q itself reduces to zero, and q + 1 to one: the nonces are those of the reduced digests.
        let q = Self.bytes(Self.q)
        var qPlusOne = q
        qPlusOne[31] += 1
        var one = [UInt8](repeating: 0, count: 32)
        one[31] = 1
        let x = Self.bytes(Self.x)
        #expect(RFC6979.nonce(privateKey: x, digest: q) == RFC6979.nonce(privateKey: x, digest: [UInt8](repeating: 0, count: 32)))
        #expect(RFC6979.nonce(privateKey: x, digest: qPlusOne) == RFC6979.nonce(privateKey: x, digest: one))
        #expect(RFC6979.nonce(privateKey: x, digest: one) != RFC6979.nonce(privateKey: x, digest: [UInt8](repeating: 0, count: 32)))
    }
}
