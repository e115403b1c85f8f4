import Testing
import OpenSSLSupport
import WebPushCrypto
import Basics

private func b64(_ text: String) -> [UInt8] {
    Base64URL.decode(text)!
}

/// RFC 8291 section 5 / Appendix A.
private enum RFC8291 {
    static let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    static let senderPrivate = b64("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    static let senderPublic = b64("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    static let receiverPrivate = b64("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    static let receiverPublic = b64("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    static let authSecret = b64("BTBZMqHH6r4Tts7J_aSIgg")
    static let salt = b64("DGv6ra1nlYgDCS1FRnbzlw")
    static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func receiver() throws -> WebPushDecryptor {
        try WebPushDecryptor(privateKey: P256KeyAgreement(rawPrivateKey: receiverPrivate, publicKeyRaw: receiverPublic),
                             authSecret: authSecret)
    }
}

/// A published aesgcm vector (the encrypted-content-encoding project's, as carried by
/// Mozilla's push clients): receiver private key, auth secret, salt, dh and ciphertext.
private struct AESGCMVector {
    let plaintext: String
    let receiverPrivate: String
    let authSecret: String
    let salt: String
    let dh: String
    let recordSize: Int
    let ciphertext: String
}

private let aesgcmVectors = [
    AESGCMVector(plaintext: "Small record size", receiverPrivate: "4h23G_KkXC9TvBSK2v0Q7ImpS2YAuRd8hQyN0rFAwBg",
                 authSecret: "g2rWVHUCpUxgcL9Tz7vyeQ", salt: "5LIDBXbvkBvvb7ZdD-T4PQ",
                 dh: "BCg6ZIGuE2ZNm2ti6Arf4CDVD_8--aLXAGLYhpghwjl1xxVjTLLpb7zihuEOGGbyt8Qj0_fYHBP4ObxwJNl56bk",
                 recordSize: 3,
                 ciphertext: "oY4e5eDatDVt2fpQylxbPJM-3vrfhDasfPc8Q1PWt4tPfMVbz_sDNL_cvr0DXXkdFzS1lxsJsj550USx4MMl01ihjImXCjrw9R5xFgFrCAqJD3GwXA1vzS4T5yvGVbUp3SndMDdT1OCcEofTn7VC6xZ-zP8rzSQfDCBBxmPU7OISzr8Z4HyzFCGJeBfqiZ7yUfNlKF1x5UaZ4X6iU_TXx5KlQy_toV1dXZ2eEAMHJUcSdArvB6zRpFdEIxdcHcJyo1BIYgAYTDdAIy__IJVCPY_b2CE5W_6ohlYKB7xDyH8giNuWWXAgBozUfScLUVjPC38yJTpAUi6w6pXgXUWffende5FreQpnMFL1L4G-38wsI_-ISIOzdO8QIrXHxmtc1S5xzYu8bMqSgCinvCEwdeGFCmighRjj8t1zRWo0D14rHbQLPR_b1P5SvEeJTtS9Nm3iibM"),
    AESGCMVector(plaintext: "I am the walrus", receiverPrivate: "9FWl15_QUQAWDaD3k3l50ZBZQJ4au27F1V4F0uLSD_M",
                 authSecret: "R29vIGdvbyBnJyBqb29iIQ", salt: "lngarbyKfMoi9Z75xYXmkg",
                 dh: "BNoRDbb84JGm8g5Z5CFxurSqsXWJ11ItfXEWYVLE85Y7CYkDjXsIEc4aqxYaQ1G8BqkXCJ6DPpDrWtdWj_mugHU",
                 recordSize: 4096, ciphertext: "6nqAQUME8hNqw5J3kl8cpVVJylXKYqZOeseZG8UueKpA"),
    AESGCMVector(plaintext: "Some message", receiverPrivate: "4h23G_KkXC9TvBSK2v0Q7ImpS2YAuRd8hQyN0rFAwBg",
                 authSecret: "aTDc6JebzR6eScy2oLo4RQ", salt: "zCU18Rw3A5aB_Xi-vfixmA",
                 dh: "BCHFVrflyxibGLlgztLwKelsRZp4gqX3tNfAKFaxAcBhpvYeN1yIUMrxaDKiLh4LNKPtj0BOXGdr-IQ-QP82Wjo",
                 recordSize: 24, ciphertext: "Oo34w2F9VVnTMFfKtdx48AZWQ9Li9M6DauWJVgXU"),
    AESGCMVector(plaintext: "Yet another message", receiverPrivate: "4h23G_KkXC9TvBSK2v0Q7ImpS2YAuRd8hQyN0rFAwBg",
                 authSecret: "6plwZnSpVUbF7APDXus3UQ", salt: "ZFhzj0S-n29g9P2p4-I7tA",
                 dh: "BEaA4gzA3i0JDuirGhiLgymS4hfFX7TNTdEhSk_HBlLpkjgCpjPL5c-GL9uBGIfa_fhGNKKFhXz1k9Kyens2ZpQ",
                 recordSize: 8,
                 ciphertext: "uEC5B_tR-fuQ3delQcrzrDCp40W6ipMZjGZ78USDJ5sMj-6bAOVG3AK6JqFl9E6AoWiBYYvMZfwThVxmDnw6RHtVeLKFM5DWgl1EwkOohwH2EhiDD0gM3io-d79WKzOPZE9rDWUSv64JstImSfX_ADQfABrvbZkeaWxh53EG59QMOElFJqHue4dMURpsMXg"),
]

@Suite("WebPush message encryption as senders and devices do it")
struct WebPushCryptoTests {
    @Test("aes128gcm with RFC 8291's keys and salt produces the RFC's exact body")
    func rfc8291Vector() throws {
        let sender = try P256KeyAgreement(rawPrivateKey: RFC8291.senderPrivate, publicKeyRaw: RFC8291.senderPublic)
        let body = try WebPushEncryptor.aes128gcm(plaintext: RFC8291.plaintext, receiverPublicKey: RFC8291.receiverPublic,
                                                  authSecret: RFC8291.authSecret, senderKey: sender, salt: RFC8291.salt)
        #expect(Base64URL.encode(body) == RFC8291.body)
    }

    @Test("the RFC 8291 body decrypts on the device, from bytes and from the relay's m/e fields")
    func rfc8291Decrypts() throws {
        let device = try RFC8291.receiver()
        #expect(try device.decryptAES128GCM(body: b64(RFC8291.body)) == RFC8291.plaintext)
        // The relay sends "m" padded, with "e" and without s/k.
        let padded = RFC8291.body + String(repeating: "=", count: (4 - RFC8291.body.count % 4) % 4)
        #expect(try device.decrypt(m: padded, s: nil, k: nil, e: "aes128gcm") == RFC8291.plaintext)
        #expect(try device.decrypt(m: RFC8291.body, s: nil, k: nil, e: nil) == RFC8291.plaintext)
    }

    @Test("published aesgcm vectors decrypt, including multi-record ones", arguments: aesgcmVectors)
    fileprivate func aesgcmVector(_ vector: AESGCMVector) throws {
        let device = try WebPushDecryptor(privateKey: P256KeyAgreement(rawPrivateKey: b64(vector.receiverPrivate)),
                                          authSecret: b64(vector.authSecret))
        let plaintext = try device.decryptAESGCM(body: b64(vector.ciphertext), salt: b64(vector.salt),
                                                 senderPublicKey: b64(vector.dh), recordSize: vector.recordSize)
        #expect(String(decoding: plaintext, as: UTF8.self) == vector.plaintext)
        if vector.recordSize == 4096 {
            #expect(try device.decrypt(m: vector.ciphertext, s: vector.salt, k: vector.dh, e: "aesgcm") == Array(vector.plaintext.utf8))
        }
    }

    @Test("aesgcm round trip through the relay's m/s/k/e fields, with and without padding")
    func aesgcmRoundTrip() throws {
        let device = try WebPushDecryptor.generate()
        let message = Array(#"{"access_token":"x","preferred_locale":"en","notification_id":"123","notification_type":"mention","icon":"https://example.social/a.png","title":"Alice mentioned you","body":"hello 👋"}"#.utf8)
        for padding in [0, 1, 100] {
            let sealed = try WebPushEncryptor.aesgcm(plaintext: message, receiverPublicKey: device.publicKey,
                                                     authSecret: device.authSecret, padding: padding)
            #expect(sealed.body.count == 2 + padding + message.count + 16)
            #expect(!sealed.salt.contains("=") && !sealed.dh.contains("="))
            let m = Base64URL.encode(sealed.body)
            #expect(try device.decrypt(m: m, s: sealed.salt, k: sealed.dh, e: "aesgcm") == message)
            // Metatext-era payloads carry no "e": s and k mean aesgcm.
            #expect(try device.decrypt(m: m, s: sealed.salt, k: sealed.dh, e: nil) == message)
        }
    }

    @Test("aes128gcm round trip with fresh keys, padding and a small record size")
    func aes128gcmRoundTrip() throws {
        let device = try WebPushDecryptor.generate()
        let message = Array("a new follower".utf8)
        for (padding, recordSize) in [(0, UInt32(4096)), (50, 4096), (0, UInt32(message.count + 17))] {
            let body = try WebPushEncryptor.aes128gcm(plaintext: message, receiverPublicKey: device.publicKey,
                                                      authSecret: device.authSecret, recordSize: recordSize, padding: padding)
            #expect(body.count == 86 + message.count + 1 + padding + 16)
            #expect(try device.decrypt(m: Base64URL.encode(body), s: nil, k: nil, e: "aes128gcm") == message)
        }
    }

    @Test("two encryptions of one message differ: a fresh sender key and salt every time")
    func freshKeysPerMessage() throws {
        let device = try WebPushDecryptor.generate()
        let a = try WebPushEncryptor.aes128gcm(plaintext: [1, 2, 3], receiverPublicKey: device.publicKey, authSecret: device.authSecret)
        let b = try WebPushEncryptor.aes128gcm(plaintext: [1, 2, 3], receiverPublicKey: device.publicKey, authSecret: device.authSecret)
        #expect(a.prefix(16) != b.prefix(16))
        #expect(a[21..<86] != b[21..<86])
    }

    @Test("a tampered aes128gcm body fails to decrypt with decryptionFailed")
    func aes128gcmTamper() throws {
        let device = try RFC8291.receiver()
        var body = b64(RFC8291.body)
        body[body.count - 20] ^= 0x80
        let error = try #require(throws: WebPushCryptoError.self) { try device.decryptAES128GCM(body: body) }
        #expect(error.code == .decryptionFailed)
        #expect(error.message.contains("altered"))
        // A changed salt derives other keys: the tag no longer verifies either.
        var salted = b64(RFC8291.body)
        salted[0] ^= 1
        #expect(throws: WebPushCryptoError(.decryptionFailed, "")) { try device.decryptAES128GCM(body: salted) }
    }

    @Test("a tampered aesgcm body, or the wrong auth secret, fails with decryptionFailed")
    func aesgcmTamper() throws {
        let device = try WebPushDecryptor.generate()
        let sealed = try WebPushEncryptor.aesgcm(plaintext: Array("secret".utf8), receiverPublicKey: device.publicKey,
                                                 authSecret: device.authSecret)
        var body = sealed.body
        body[0] ^= 1
        #expect(throws: WebPushCryptoError(.decryptionFailed, "")) {
            try device.decrypt(m: Base64URL.encode(body), s: sealed.salt, k: sealed.dh, e: "aesgcm")
        }
        let stranger = try WebPushDecryptor(privateKey: device.privateKey, authSecret: SecureRandom.bytes(16))
        #expect(throws: WebPushCryptoError(.decryptionFailed, "")) {
            try stranger.decrypt(m: Base64URL.encode(sealed.body), s: sealed.salt, k: sealed.dh, e: "aesgcm")
        }
    }

    @Test("a truncated aes128gcm message is refused, not shown in part")
    func truncated() throws {
        let device = try RFC8291.receiver()
        let body = b64(RFC8291.body)
        #expect(throws: WebPushCryptoError(.badHeader, "")) { try device.decryptAES128GCM(body: Array(body.prefix(40))) }
        #expect(throws: WebPushCryptoError(.badPadding, "")) { try device.decryptAES128GCM(body: Array(body.prefix(86))) }
        #expect(throws: WebPushCryptoError(.decryptionFailed, "")) { try device.decryptAES128GCM(body: Array(body.dropLast(1))) }
    }

    @Test("bad fields name what is wrong: base64, keys, encoding, missing s/k")
    func badFields() throws {
        let device = try RFC8291.receiver()
        #expect(throws: WebPushCryptoError(.badBase64, "")) { try device.decrypt(m: "not base64!", s: nil, k: nil, e: "aes128gcm") }
        #expect(throws: WebPushCryptoError(.unsupportedEncoding, "")) { try device.decrypt(m: RFC8291.body, s: nil, k: nil, e: "aesgcm2") }
        #expect(throws: WebPushCryptoError(.badHeader, "")) { try device.decrypt(m: "AAAA", s: "AAAA", k: nil, e: "aesgcm") }
        var offCurve = RFC8291.senderPublic
        offCurve[64] ^= 1
        #expect(throws: WebPushCryptoError(.invalidKey, "")) {
            try device.decryptAESGCM(body: [UInt8](repeating: 0, count: 20), salt: RFC8291.salt, senderPublicKey: offCurve)
        }
        #expect(throws: WebPushCryptoError(.invalidKey, "")) {
            try WebPushEncryptor.aes128gcm(plaintext: [1], receiverPublicKey: offCurve, authSecret: RFC8291.authSecret)
        }
        #expect(throws: WebPushCryptoError(.invalidParameter, "")) {
            try WebPushEncryptor.aesgcm(plaintext: [1], receiverPublicKey: RFC8291.receiverPublic, authSecret: [1, 2, 3])
        }
    }

    @Test("a message too big for WebPush's single record is refused before encrypting")
    func tooLarge() throws {
        let device = try WebPushDecryptor.generate()
        let big = [UInt8](repeating: 0x41, count: 4096)
        #expect(throws: WebPushCryptoError(.messageTooLarge, "")) {
            try WebPushEncryptor.aes128gcm(plaintext: big, receiverPublicKey: device.publicKey, authSecret: device.authSecret)
        }
        #expect(throws: WebPushCryptoError(.messageTooLarge, "")) {
            try WebPushEncryptor.aesgcm(plaintext: big, receiverPublicKey: device.publicKey, authSecret: device.authSecret)
        }
        // The largest that fits: 4096 - 1 delimiter - 16 tag.
        let fits = [UInt8](repeating: 0x41, count: 4096 - 17)
        let body = try WebPushEncryptor.aes128gcm(plaintext: fits, receiverPublicKey: device.publicKey, authSecret: device.authSecret)
        #expect(try device.decryptAES128GCM(body: body) == fits)
    }
}

@Suite("WebPush crypto errors")
struct WebPushCryptoErrorTests {
    @Test("equality is on the code: two decryption failures with different words are the same failure")
    func equalityOnCode() {
        #expect(WebPushCryptoError(.decryptionFailed, "one") == WebPushCryptoError(.decryptionFailed, "two"))
        #expect(WebPushCryptoError(.decryptionFailed, "one") != WebPushCryptoError(.badPadding, "one"))
        #expect("\(WebPushCryptoError(.badBase64, "dh is not base64url"))" == "badBase64: dh is not base64url")
    }
}
