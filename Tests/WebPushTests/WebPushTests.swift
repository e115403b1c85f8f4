import Foundation
import Testing
@testable import WebPush

typealias Headers = [(name: String, value: String)]

/// Fixed test values: a 16-byte salt, a 65-byte P-256 point (0x04…), a VAPID key.
enum Fixture {
    static let salt = "XaGvK-1McJRNX-agVfElbQ"
    static let dh = "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA"
    static let vapid = "BGzoIH3r5jBnqwpY7qeCAI05NxRkU_UP1kb-FIXJnIF6-BnU7LYqhZjbnlXO3BAO3yIK_76foTfNU3LaSnFQ-uI"
    static let body: [UInt8] = Array(0 ..< 40)

    /// What Mastodon's Sidekiq worker sends for the legacy aesgcm coding.
    static let mastodonHeaders: Headers = [
        ("Content-Type", "application/octet-stream"),
        ("Content-Encoding", "aesgcm"),
        ("Encryption", "salt=\(salt)"),
        ("Crypto-Key", "dh=\(dh);p256ecdsa=\(vapid)"),
        ("TTL", "172800"),
        ("Urgency", "normal"),
        ("Authorization", "WebPush eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9.e30.sig"),
    ]

    /// RFC 8291 Appendix A: the encrypted message (header + one record).
    static let rfc8291Body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func decodeBase64URL(_ s: String) -> [UInt8] {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Array(Data(base64Encoded: t)!)
    }

    static func aes128gcmBody(rs: UInt32 = 4096, idlen: UInt8 = 65, keyFirst: UInt8 = 0x04, records: Int = 10) -> [UInt8] {
        var b = [UInt8](repeating: 0xAB, count: 16)
        b += [UInt8(rs >> 24), UInt8(rs >> 16 & 0xFF), UInt8(rs >> 8 & 0xFF), UInt8(rs & 0xFF), idlen]
        b += [keyFirst] + [UInt8](repeating: 0x11, count: Int(idlen) - 1)
        b += [UInt8](repeating: 0x22, count: records)
        return b
    }
}

func aesgcm(encryption: String = "salt=\(Fixture.salt)", cryptoKey: String = "dh=\(Fixture.dh)",
            extra: Headers = []) -> Headers {
    [("Content-Encoding", "aesgcm"), ("Encryption", encryption), ("Crypto-Key", cryptoKey)] + extra
}

func failure(_ headers: Headers, body: [UInt8] = Fixture.body, maxBodyBytes: Int = WebPushParser.defaultMaxBodyBytes) -> WebPushError? {
    do {
        _ = try WebPushParser.parse(headers: headers, body: body, maxBodyBytes: maxBodyBytes)
        return nil
    } catch {
        return error
    }
}

@Suite("WebPush parsing")
struct WebPushParserTests {
    @Test("Mastodon's aesgcm request is read exactly")
    func mastodon() throws {
        let m = try WebPushParser.parse(headers: Fixture.mastodonHeaders, body: Fixture.body)
        #expect(m == WebPushMessage(encoding: .aesgcm, body: Fixture.body, salt: Fixture.salt, dh: Fixture.dh,
                                    ttl: 172800, urgency: .normal))
    }

    @Test("the RFC 8291 Appendix A aes128gcm body is accepted and its header read")
    func rfc8291() throws {
        let body = Fixture.decodeBase64URL(Fixture.rfc8291Body)
        #expect(body.count == 144)
        let headers: Headers = [("Content-Encoding", "aes128gcm"), ("TTL", "10")]
        let m = try WebPushParser.parse(headers: headers, body: body)
        #expect(m.encoding == .aes128gcm)
        #expect(m.body == body)
        #expect(m.salt == nil && m.dh == nil)
        #expect(m.recordSize == 4096)
        #expect(m.ttl == 10)
    }

    @Test("aes128gcm ignores stray Encryption and Crypto-Key headers")
    func aes128gcmIgnoresLegacyHeaders() throws {
        let headers: Headers = [("content-encoding", "aes128gcm"), ("Encryption", "garbage"), ("Crypto-Key", "p256ecdsa=\(Fixture.vapid)")]
        let m = try WebPushParser.parse(headers: headers, body: Fixture.aes128gcmBody())
        #expect(m.encoding == .aes128gcm && m.salt == nil && m.dh == nil)
    }

    static let variants: [(String, Headers, String, String)] = [
        ("lower-case names",
         [("content-encoding", "aesgcm"), ("encryption", "salt=\(Fixture.salt)"), ("crypto-key", "dh=\(Fixture.dh)")],
         Fixture.salt, Fixture.dh),
        ("upper-case names and value",
         [("CONTENT-ENCODING", "AESGCM"), ("ENCRYPTION", "SALT=\(Fixture.salt)"), ("CRYPTO-KEY", "DH=\(Fixture.dh)")],
         Fixture.salt, Fixture.dh),
        ("spaces around separators and =", aesgcm(encryption: "  salt = \(Fixture.salt) ", cryptoKey: "dh = \(Fixture.dh) ;  p256ecdsa=\(Fixture.vapid)"),
         Fixture.salt, Fixture.dh),
        ("comma separators", aesgcm(cryptoKey: "p256ecdsa=\(Fixture.vapid), dh=\(Fixture.dh)"), Fixture.salt, Fixture.dh),
        ("semicolon, dh last", aesgcm(cryptoKey: "p256ecdsa=\(Fixture.vapid);dh=\(Fixture.dh)"), Fixture.salt, Fixture.dh),
        ("quoted values", aesgcm(encryption: "salt=\"\(Fixture.salt)\"", cryptoKey: "dh=\"\(Fixture.dh)\";p256ecdsa=\"\(Fixture.vapid)\""),
         Fixture.salt, Fixture.dh),
        ("padded values", aesgcm(encryption: "salt=\(Fixture.salt)==", cryptoKey: "dh=\(Fixture.dh)="),
         Fixture.salt + "==", Fixture.dh + "="),
        ("keyid and rs parameters", aesgcm(encryption: "keyid=p256dh;salt=\(Fixture.salt);rs=4096", cryptoKey: "keyid=p256dh;dh=\(Fixture.dh)"),
         Fixture.salt, Fixture.dh),
        ("Content-Encoding absent", [("Encryption", "salt=\(Fixture.salt)"), ("Crypto-Key", "dh=\(Fixture.dh)")],
         Fixture.salt, Fixture.dh),
        ("standard base64 alphabet", aesgcm(encryption: "salt=XaGvK+1McJRNX+agVfElbQ==", cryptoKey: "dh=BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA="),
         "XaGvK+1McJRNX+agVfElbQ==", "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA="),
        ("repeated Crypto-Key headers",
         [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Fixture.salt)"), ("Crypto-Key", "p256ecdsa=\(Fixture.vapid)"), ("Crypto-Key", "dh=\(Fixture.dh)")],
         Fixture.salt, Fixture.dh),
        ("tabs and a Content-Encoding with spaces", [("Content-Encoding", " aesgcm "), ("Encryption", "\tsalt=\(Fixture.salt)"), ("Crypto-Key", "dh=\(Fixture.dh)\t")],
         Fixture.salt, Fixture.dh),
        ("a parameter whose name ends in salt is not the salt", aesgcm(encryption: "xsalt=abc;salt=\(Fixture.salt)"), Fixture.salt, Fixture.dh),
    ]

    @Test("header variants all yield the salt and dh as sent", arguments: variants)
    func variant(_ name: String, _ headers: Headers, _ salt: String, _ dh: String) throws {
        let m = try WebPushParser.parse(headers: headers, body: Fixture.body)
        #expect(m.encoding == .aesgcm, "\(name)")
        #expect(m.salt == salt, "\(name)")
        #expect(m.dh == dh, "\(name)")
    }

    static let malformed: [(Headers, [UInt8], Int, String)] = [
        ([("Content-Encoding", "gzip")], Fixture.body, 415, #"Content-Encoding "gzip" is not supported; send aes128gcm or aesgcm"#),
        ([("Content-Encoding", "aes128gcm, gzip")], Fixture.body, 415, #"Content-Encoding "aes128gcm, gzip" is not supported; send aes128gcm or aesgcm"#),
        ([("Content-Type", "text/plain")], Fixture.body, 415, "Content-Encoding header is missing; send aes128gcm or aesgcm"),
        (aesgcm(), [], 400, "body is empty"),
        ([("Content-Encoding", "aes128gcm")], [], 400, "body is empty"),
        ([("Content-Encoding", "aesgcm"), ("Crypto-Key", "dh=\(Fixture.dh)")], Fixture.body, 400, "Encryption header is missing"),
        ([("Encryption", "salt=\(Fixture.salt)")], Fixture.body, 400, "Crypto-Key header is missing"),
        (aesgcm(encryption: "keyid=p256dh;rs=4096"), Fixture.body, 400, "Encryption header has no salt"),
        (aesgcm(encryption: "salt"), Fixture.body, 400, "Encryption header has no salt"),
        (aesgcm(encryption: "salt="), Fixture.body, 400, "Encryption salt is not base64url"),
        (aesgcm(encryption: "salt=XaGvK*1McJRNX-agVfElbQ"), Fixture.body, 400, "Encryption salt is not base64url"),
        (aesgcm(encryption: "salt=XaGvK-1McJRNX-agVfElbQ="), Fixture.body, 400, "Encryption salt is not base64url"),
        (aesgcm(encryption: "salt=XaGvK-1McJRNX-agVfElbQAA"), Fixture.body, 400, "Encryption salt is 18 bytes, not 16"),
        (aesgcm(encryption: "salt=XaGvK-1McJRNX-agVfEl"), Fixture.body, 400, "Encryption salt is 15 bytes, not 16"),
        (aesgcm(cryptoKey: "p256ecdsa=\(Fixture.vapid)"), Fixture.body, 400, "Crypto-Key header has no dh"),
        (aesgcm(cryptoKey: "dh=not base64!"), Fixture.body, 400, "Crypto-Key dh is not base64url"),
        (aesgcm(cryptoKey: "dh=\(Fixture.dh.dropLast(4))"), Fixture.body, 400, "Crypto-Key dh is not a 65-byte uncompressed P-256 point"),
        (aesgcm(cryptoKey: "dh=A\(Fixture.dh.dropFirst())"), Fixture.body, 400, "Crypto-Key dh is not a 65-byte uncompressed P-256 point"),
        ([("Content-Encoding", "aes128gcm")], Array(Fixture.aes128gcmBody().prefix(20)), 400, "aes128gcm body is 20 bytes, shorter than its 21-byte header"),
        ([("Content-Encoding", "aes128gcm")], Fixture.aes128gcmBody(rs: 17), 400, "aes128gcm header record size 17 is below 18"),
        ([("Content-Encoding", "aes128gcm")], Fixture.aes128gcmBody(idlen: 32), 400, "aes128gcm header key id length is 32, not 65"),
        ([("Content-Encoding", "aes128gcm")], Fixture.aes128gcmBody(records: 0), 400, "aes128gcm body has no record after its 86-byte header"),
        ([("Content-Encoding", "aes128gcm")], Array(Fixture.aes128gcmBody().prefix(60)), 400, "aes128gcm body has no record after its 86-byte header"),
        ([("Content-Encoding", "aes128gcm")], Fixture.aes128gcmBody(keyFirst: 0x02), 400, "aes128gcm header key id is not an uncompressed P-256 point"),
    ]

    @Test("every malformed request gets its status and a one-line reason", arguments: malformed)
    func malformedRequest(_ headers: Headers, _ body: [UInt8], _ status: Int, _ reason: String) {
        let error = failure(headers, body: body)
        #expect(error == WebPushError(status: status, reason: reason))
    }

    @Test("a body over the cap answers 413")
    func tooLarge() {
        #expect(failure(aesgcm(), body: [UInt8](repeating: 1, count: 101), maxBodyBytes: 100)
                == WebPushError(status: 413, reason: "body is 101 bytes, over the 100-byte limit"))
        #expect(failure(aesgcm(), body: [UInt8](repeating: 1, count: 100), maxBodyBytes: 100) == nil)
    }

    @Test("a hostile Content-Encoding is clipped and made printable in the reason")
    func hostileEncoding() {
        let error = failure([("Content-Encoding", "x\r\n" + String(repeating: "y", count: 100))])
        #expect(error?.status == 415)
        #expect(error?.reason.contains("\n") == false)
        #expect((error?.reason.count ?? 0) < 120)
    }

    @Test("TTL: digits are read, TTL 0 kept, anything else ignored, huge values capped",
          arguments: [("172800", 172800), ("0", 0), (" 60 ", 60), ("-1", nil), ("abc", nil), ("1.5", nil), ("", nil),
                      ("99999999999999999999999999", WebPushParser.maxTTL)] as [(String, Int?)])
    func ttl(_ value: String, _ expected: Int?) throws {
        let m = try WebPushParser.parse(headers: aesgcm(extra: [("TTL", value)]), body: Fixture.body)
        #expect(m.ttl == expected)
    }

    @Test("TTL absent stays nil")
    func ttlAbsent() throws {
        #expect(try WebPushParser.parse(headers: aesgcm(), body: Fixture.body).ttl == nil)
    }

    @Test("Urgency: the four RFC 8030 values in any case; unknown reads as normal",
          arguments: [("very-low", .veryLow), ("LOW", .low), ("normal", .normal), ("High", .high),
                      ("urgent", .normal), (" low ", .low)] as [(String, WebPushMessage.Urgency)])
    func urgency(_ value: String, _ expected: WebPushMessage.Urgency) throws {
        let m = try WebPushParser.parse(headers: aesgcm(extra: [("urgency", value)]), body: Fixture.body)
        #expect(m.urgency == expected)
    }

    @Test("Urgency absent stays nil")
    func urgencyAbsent() throws {
        #expect(try WebPushParser.parse(headers: aesgcm(), body: Fixture.body).urgency == nil)
    }

    @Test("Topic is kept when Apple can use it as a collapse id, dropped otherwise",
          arguments: [("new-follow", "new-follow"), (" abc ", "abc"), (String(repeating: "a", count: 64), String(repeating: "a", count: 64)),
                      (String(repeating: "a", count: 65), nil), ("two words", nil), ("caf\u{e9}", nil), ("", nil)] as [(String, String?)])
    func topic(_ value: String, _ expected: String?) throws {
        let m = try WebPushParser.parse(headers: aesgcm(extra: [("Topic", value)]), body: Fixture.body)
        #expect(m.topic == expected)
    }

    @Test("base64 validation reports length and first byte without decoding",
          arguments: [(Fixture.dh, 65, 0x04), (Fixture.salt, 16, nil), (Fixture.salt + "==", 16, nil), ("QQ", 1, 0x41), ("QUI", 2, 0x41)] as [(String, Int, UInt8?)])
    func base64Info(_ s: String, _ count: Int, _ first: UInt8?) throws {
        let info = try #require(WebPushParser.base64Info(s[...]))
        #expect(info.count == count)
        if let first { #expect(info.first == first) }
        #expect(info.count == Fixture.decodeBase64URL(s.replacingOccurrences(of: "=", with: "")).count)
    }

    @Test("salt and dh decode to the same bytes in either alphabet, padded or not",
          arguments: [Fixture.salt, Fixture.salt + "==", Fixture.dh, Fixture.dh + "=", "-_8", "+/8=", "QUI", "QQ=="])
    func base64Decode(_ s: String) throws {
        let urlSafe = s.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(WebPushParser.base64Decode(s[...]) == Fixture.decodeBase64URL(urlSafe))
    }

    @Test("what base64 validation refuses does not decode either", arguments: ["Q", "QQ=", "Q=Q=", "a b", "QUJD*", ""])
    func base64DecodeRefuses(_ s: String) {
        #expect(WebPushParser.base64Decode(s[...]) == nil)
    }

    @Test("the parsed message hands out the bytes of its salt and dh; aes128gcm has none")
    func keyBytes() throws {
        let m = try WebPushParser.parse(headers: Fixture.mastodonHeaders, body: Fixture.body)
        #expect(m.saltBytes == Fixture.decodeBase64URL(Fixture.salt))
        #expect(m.dhBytes?.count == 65 && m.dhBytes?.first == 0x04)
        #expect(WebPushMessage(encoding: .aes128gcm, body: [1]).saltBytes == nil)
    }

    @Test("quoted parameter values may hold separators and escapes")
    func quotedParameter() {
        #expect(WebPushParser.parameter("a", in: #"b="x;y", a="1\"2""#) == #"1"2"#)
        #expect(WebPushParser.parameter("b", in: #"b="x;y", a="1\"2""#) == "x;y")
        #expect(WebPushParser.parameter("c", in: #"b="x;y", a="1\"2""#) == nil)
    }
}
