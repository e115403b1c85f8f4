import Testing
import OpenSSLSupport
import WebPushCrypto

private func hex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

@Suite("WebPush primitives: HKDF, AES-128-GCM, P-256 ECDH")
struct CryptoPrimitivesTests {
    @Test("HKDF-SHA-256 reproduces RFC 5869 test case 1")
    func hkdfTestCase1() throws {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let salt = hex("000102030405060708090a0b0c")
        let info = hex("f0f1f2f3f4f5f6f7f8f9")
        let prk = try HKDF.extract(salt: salt, ikm: ikm)
        #expect(prk == hex("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"))
        let okm = try HKDF.deriveKey(ikm: ikm, salt: salt, info: info, length: 42)
        #expect(okm == hex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865"))
    }

    @Test("HKDF refuses an output length it cannot produce")
    func hkdfLength() {
        #expect(throws: CryptoError(.invalidInput, "")) {
            try HKDF.deriveKey(ikm: [1], salt: [], info: [], length: 255 * 32 + 1)
        }
    }

    @Test("AES-128-GCM matches the GCM spec's test case 2 and opens what it seals")
    func aesGCMKnownAnswer() throws {
        let key = [UInt8](repeating: 0, count: 16)
        let nonce = [UInt8](repeating: 0, count: 12)
        let sealed = try AESGCM.seal(key: key, nonce: nonce, plaintext: [UInt8](repeating: 0, count: 16))
        #expect(sealed == hex("0388dace60b6a392f328c2b971b2fe78") + hex("ab6e47d42cec13bdf53a67b21257bddf"))
        #expect(try AESGCM.open(key: key, nonce: nonce, sealed: sealed) == [UInt8](repeating: 0, count: 16))
    }

    @Test("AES-128-GCM round trip of an empty and a long message")
    func aesGCMRoundTrip() throws {
        let key = try SecureRandom.bytes(16)
        let nonce = try SecureRandom.bytes(12)
        for message in [[], Array("hello".utf8), try SecureRandom.bytes(5000)] as [[UInt8]] {
            let sealed = try AESGCM.seal(key: key, nonce: nonce, plaintext: message)
            #expect(sealed.count == message.count + 16)
            #expect(try AESGCM.open(key: key, nonce: nonce, sealed: sealed) == message)
        }
    }

    @Test("AES-128-GCM refuses a flipped bit, a wrong nonce and a truncated tag")
    func aesGCMTamper() throws {
        let key = try SecureRandom.bytes(16)
        let nonce = try SecureRandom.bytes(12)
        let sealed = try AESGCM.seal(key: key, nonce: nonce, plaintext: Array("attack at dawn".utf8))
        var flipped = sealed
        flipped[3] ^= 0x01
        #expect(throws: CryptoError(.authenticationFailed, "")) { try AESGCM.open(key: key, nonce: nonce, sealed: flipped) }
        var otherNonce = nonce
        otherNonce[11] ^= 1
        #expect(throws: CryptoError(.authenticationFailed, "")) { try AESGCM.open(key: key, nonce: otherNonce, sealed: sealed) }
        #expect(throws: CryptoError(.authenticationFailed, "")) { try AESGCM.open(key: key, nonce: nonce, sealed: Array(sealed.prefix(10))) }
        #expect(throws: CryptoError(.invalidInput, "")) { try AESGCM.seal(key: [1, 2], nonce: nonce, plaintext: []) }
    }

    @Test("two P-256 keys agree on one shared secret, and a rebuilt key agrees too")
    func ecdhAgreement() throws {
        let a = try P256KeyAgreement.generate()
        let b = try P256KeyAgreement.generate()
        #expect(a.publicKeyRaw.count == 65 && a.publicKeyRaw[0] == 0x04)
        let ab = try a.sharedSecret(with: b.publicKeyRaw)
        #expect(ab.count == 32)
        #expect(ab == (try b.sharedSecret(with: a.publicKeyRaw)))
        let rebuilt = try P256KeyAgreement(rawPrivateKey: a.rawPrivateKey(), publicKeyRaw: a.publicKeyRaw)
        #expect(rebuilt.publicKeyRaw == a.publicKeyRaw)
        #expect(try rebuilt.sharedSecret(with: b.publicKeyRaw) == ab)
    }

    @Test("ECDH with RFC 8291's keys derives the same secret from both sides")
    func ecdhRFC8291Keys() throws {
        // RFC 8291 section 5 (base64url in the RFC), here as hex.
        let sender = try P256KeyAgreement(rawPrivateKey: hex("c9f58f89813e9f8e872e71f42aa64e1757c9254dcc62b72ddc010bb4043ea11c"))
        #expect(sender.publicKeyRaw == hex("04fe33f4ab0dea71914db55823f73b54948f41306d920732dbb9a59a53286482200e597a7b7bc260ba1c227998580992e93973002f3012a28ae8f06bbb78e5ec0f"))
        let receiver = try P256KeyAgreement(rawPrivateKey: hex("ab5757a70dd4a53e553a6bbf71ffefea2874ec07a6b379e3c48f895a02dc33de"))
        let secret = try sender.sharedSecret(with: receiver.publicKeyRaw)
        // Appendix A's ecdh_secret, "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs".
        #expect(secret == hex("932acbd63208387133837b0cd995911c3441eb66000998614a592727aef6912b"))
        #expect(secret == (try receiver.sharedSecret(with: sender.publicKeyRaw)))
    }

    @Test("a public key off the curve, compressed or of the wrong length is refused")
    func badPublicKeys() throws {
        let me = try P256KeyAgreement.generate()
        var offCurve = me.publicKeyRaw
        offCurve[64] ^= 0x01
        #expect(throws: CryptoError(.invalidKey, "")) { try me.sharedSecret(with: offCurve) }
        #expect(throws: CryptoError(.invalidKey, "")) { try me.sharedSecret(with: Array(me.publicKeyRaw.prefix(33))) }
        var compressedPrefix = me.publicKeyRaw
        compressedPrefix[0] = 0x02
        #expect(throws: CryptoError(.invalidKey, "")) { try me.sharedSecret(with: compressedPrefix) }
        #expect(throws: CryptoError(.invalidKey, "")) { try P256KeyAgreement(rawPrivateKey: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError(.invalidKey, "")) { try P256KeyAgreement(rawPrivateKey: [UInt8](repeating: 0xff, count: 32)) }
        let other = try P256KeyAgreement.generate()
        #expect(throws: CryptoError(.invalidKey, "")) {
            try P256KeyAgreement(rawPrivateKey: me.rawPrivateKey(), publicKeyRaw: other.publicKeyRaw)
        }
    }

    @Test("random bytes differ between draws")
    func randomBytes() throws {
        #expect(try SecureRandom.bytes(16) != (try SecureRandom.bytes(16)))
        #expect(try SecureRandom.bytes(0).isEmpty)
    }

    @Test("CryptoError: same code equal, another code not, described as code: message")
    func cryptoError() {
        #expect(CryptoError(.invalidKey, "one") == CryptoError(.invalidKey, "two"))
        #expect(CryptoError(.invalidKey, "one") != CryptoError(.authenticationFailed, "one"))
        #expect("\(CryptoError(.invalidKey, "off the curve"))" == "invalidKey: off the curve")
    }
}
