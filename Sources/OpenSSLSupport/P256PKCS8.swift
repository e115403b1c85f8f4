internal import COpenSSL

/// Apple's `.p8` file read without OpenSSL's key decoders.
///
/// `PEM_read_bio_PrivateKey` runs OSSL_DECODER's PEM and PKCS#8 chains, code run once at
/// start-up that then stays resident (certificates' public keys still go through its DER
/// decoders). Apple's key has one fixed shape, an EC P-256 key in PKCS#8 (RFC 5208, with the
/// SEC1 ECPrivateKey of RFC 5915 inside), so that shape is read here and the key built from its
/// scalar. Anything else (SEC1 "EC PRIVATE KEY", another curve, RSA, attributes, garbage) gets
/// nil, and the caller hands the text to OpenSSL, which accepts or refuses it in its own words.
enum P256PKCS8 {
    /// The private scalar (32 bytes) and the public point stored beside it (65 bytes,
    /// uncompressed), if any, of a normalized "BEGIN PRIVATE KEY" PEM holding a P-256 key.
    static func read(pem: String) -> (scalar: [UInt8], publicKey: [UInt8]?)? {
        let begin = "-----BEGIN PRIVATE KEY-----\n", end = "-----END PRIVATE KEY-----\n"
        guard pem.hasPrefix(begin), pem.hasSuffix(end), pem.utf8.count > begin.utf8.count + end.utf8.count else { return nil }
        let base64 = Array(pem.utf8.dropFirst(begin.utf8.count).dropLast(end.utf8.count).filter { $0 != UInt8(ascii: "\n") })
        guard !base64.isEmpty, base64.count % 4 == 0, base64.count <= 4096 else { return nil }
        var der = [UInt8](repeating: 0, count: base64.count / 4 * 3)
        let decoded = EVP_DecodeBlock(&der, base64, Int32(base64.count))
        OpenSSLErrorQueue.clearQueue()
        // EVP_DecodeBlock counts the padding as zero bytes.
        let padding = base64.reversed().prefix(2).prefix { $0 == UInt8(ascii: "=") }.count
        guard decoded > 0, Int(decoded) == der.count else { return nil }
        return read(der: der.dropLast(padding))
    }

    /// PrivateKeyInfo { version 0, { id-ecPublicKey, prime256v1 }, OCTET STRING ECPrivateKey },
    /// ECPrivateKey { version 1, OCTET STRING (32), [0] prime256v1 OPTIONAL, [1] BIT STRING OPTIONAL }.
    static func read(der: ArraySlice<UInt8>) -> (scalar: [UInt8], publicKey: [UInt8]?)? {
        var outer = DERReader(der)
        guard var info = outer.enter(0x30), outer.isAtEnd,
              info.take(0x02) == [0x00],
              var algorithm = info.enter(0x30),
              algorithm.take(0x06) == idECPublicKey,
              algorithm.take(0x06) == prime256v1, algorithm.isAtEnd,
              let octets = info.take(0x04), info.isAtEnd else { return nil }
        var inner = DERReader(octets)
        guard var key = inner.enter(0x30), inner.isAtEnd,
              key.take(0x02) == [0x01],
              let scalar = key.take(0x04), scalar.count == 32 else { return nil }
        if key.peek == 0xA0 {
            guard var parameters = key.enter(0xA0), parameters.take(0x06) == prime256v1,
                  parameters.isAtEnd else { return nil }
        }
        var publicKey: [UInt8]?
        if key.peek == 0xA1 {
            guard var wrapped = key.enter(0xA1), let bits = wrapped.take(0x03), wrapped.isAtEnd,
                  bits.count == 66, bits.first == 0x00, bits.dropFirst().first == 0x04 else { return nil }
            publicKey = Array(bits.dropFirst())
        }
        guard key.isAtEnd else { return nil }
        return (Array(scalar), publicKey)
    }

    /// 1.2.840.10045.2.1 and 1.2.840.10045.3.1.7, as DER writes them.
    private static let idECPublicKey: ArraySlice<UInt8> = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    private static let prime256v1: ArraySlice<UInt8> = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]
}

/// Definite-length DER, one element at a time; nil for anything malformed.
private struct DERReader {
    private var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    var isAtEnd: Bool { rest.isEmpty }
    var peek: UInt8? { rest.first }

    /// The next element, a constructed one tagged `tag`, to read inside; the reader moves past it.
    mutating func enter(_ tag: UInt8) -> DERReader? {
        take(tag).map(DERReader.init)
    }

    /// The contents of the next element when its tag is `tag`; the reader moves past it.
    mutating func take(_ tag: UInt8) -> ArraySlice<UInt8>? {
        var at = rest.startIndex
        guard at < rest.endIndex, rest[at] == tag else { return nil }
        at += 1
        guard at < rest.endIndex else { return nil }
        var length = Int(rest[at])
        at += 1
        if length >= 0x80 {
            // Long form: one or two length bytes (nothing here is 64 KiB), no leading zero,
            // and not for a length the short form can say.
            let count = length - 0x80
            guard count == 1 || count == 2, at + count <= rest.endIndex, rest[at] != 0 else { return nil }
            length = rest[at..<(at + count)].reduce(0) { $0 << 8 | Int($1) }
            guard length >= 0x80 else { return nil }
            at += count
        }
        guard rest.endIndex - at >= length else { return nil }
        let contents = rest[at..<(at + length)]
        rest = rest[(at + length)...]
        return contents
    }
}
