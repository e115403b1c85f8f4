import Foundation
import Testing
@testable import Relay
import WebPush
import APNs
import Basics

private enum F {
    static let salt = "XaGvK-1McJRNX-agVfElbQ"
    static let dh = "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA"
    static let vapid = "BGzoIH3r5jBnqwpY7qeCAI05NxRkU_UP1kb-FIXJnIF6-BnU7LYqhZjbnlXO3BAO3yIK_76foTfNU3LaSnFQ-uI"
    static let body: [UInt8] = Array(0 ..< 40)
    static let bodyBase64URLPadded = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJw=="
    static let rfc8291Body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    static func decode(_ s: String) -> [UInt8] {
        var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while t.count % 4 != 0 { t += "=" }
        return Array(Data(base64Encoded: t)!)
    }
}

/// An aes128gcm message of `bodyBytes` with a well-formed header, for the size limits.
func aes128gcmMessage(bodyBytes: Int) -> WebPushMessage {
    var b = [UInt8](repeating: 0xAB, count: 16) + [0, 0, 0x10, 0, 65, 0x04]
    b += [UInt8](repeating: 0x5A, count: bodyBytes - b.count)
    return WebPushMessage(encoding: .aes128gcm, body: b, recordSize: 4096)
}

private func text(_ plan: APNsPushPlan) -> String { String(decoding: plan.payload, as: UTF8.self) }

@Suite("WebPush → APNs payload")
struct PayloadMapperTests {
    @Test("Mastodon's aesgcm request becomes the exact metatext-compatible payload")
    func mastodonPayload() throws {
        let headers: [(name: String, value: String)] = [
            ("Content-Encoding", "aesgcm"),
            ("Encryption", "salt=\(F.salt)"),
            ("Crypto-Key", "dh=\(F.dh);p256ecdsa=\(F.vapid)"),
            ("TTL", "172800"),
            ("Urgency", "normal"),
        ]
        let message = try WebPushParser.parse(headers: headers, body: F.body)
        let plan = PayloadMapper.plan(message: message, id: "42", now: 1_700_000_000)
        #expect(text(plan) == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"42","m":""#
            + F.bodyBase64URLPadded + #"","s":""# + F.salt + #"","k":""# + F.dh + #"","e":"aesgcm"}"#)
        #expect(plan.priority == 10)
        #expect(plan.expiration == 1_700_172_800)
        #expect(plan.collapseID == nil)
        #expect(plan.degraded == false)
    }

    @Test("salt and dh travel exactly as sent, padding included")
    func saltAsSent() {
        let m = WebPushMessage(encoding: .aesgcm, body: [1, 2, 3], salt: F.salt + "==", dh: F.dh + "=")
        let plan = PayloadMapper.plan(message: m, id: "x", now: 0)
        #expect(text(plan) == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"x","m":"AQID","s":""#
            + F.salt + #"==","k":""# + F.dh + #"=","e":"aesgcm"}"#)
    }

    @Test("the RFC 8291 aes128gcm body goes whole into m, with e aes128gcm and no s or k")
    func rfc8291Payload() throws {
        let body = F.decode(F.rfc8291Body)
        let headers: [(name: String, value: String)] = [("Content-Encoding", "aes128gcm"), ("TTL", "0"), ("Urgency", "low"), ("Topic", "follows")]
        let message = try WebPushParser.parse(headers: headers, body: body)
        let plan = PayloadMapper.plan(message: message, id: "acct-7", now: 1_700_000_000)
        // 144 bytes is a multiple of 3: padded base64url has no '=' here, so m equals the RFC text.
        #expect(text(plan) == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"acct-7","m":""#
            + F.rfc8291Body + #"","e":"aes128gcm"}"#)
        #expect(plan.expiration == 0)
        #expect(plan.priority == 5)
        #expect(plan.collapseID == "follows")
        #expect(!plan.degraded)
    }

    @Test("a 4000-byte body goes out degraded: the same alert and i, nothing else")
    func degraded() {
        let m = WebPushMessage(encoding: .aesgcm, body: [UInt8](repeating: 7, count: 4000), salt: F.salt, dh: F.dh, ttl: 60, urgency: .high, topic: "t")
        let plan = PayloadMapper.plan(message: m, id: "42", now: 100)
        #expect(plan.degraded)
        #expect(text(plan) == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"42"}"#)
        #expect(plan.priority == 10 && plan.expiration == 160 && plan.collapseID == "t")
    }

    @Test("the largest body that fits goes out whole; one more byte degrades")
    func boundary() {
        var lastWhole = 0
        for n in 2800 ... 3100 {
            let plan = PayloadMapper.plan(message: aes128gcmMessage(bodyBytes: n), id: "12345", now: 0)
            if plan.degraded {
                #expect(plan.payload.count < 200)
            } else {
                #expect(plan.payload.count <= PayloadMapper.maxPayloadBytes)
                lastWhole = n
            }
        }
        #expect(lastWhole > 2800 && lastWhole < 3100)
        let edge = PayloadMapper.plan(message: aes128gcmMessage(bodyBytes: lastWhole), id: "12345", now: 0)
        #expect(edge.payload.count > PayloadMapper.maxPayloadBytes - 4)  // base64 grows by 4 bytes per 3
        #expect(PayloadMapper.plan(message: aes128gcmMessage(bodyBytes: lastWhole + 1), id: "12345", now: 0).degraded)
    }

    @Test("the longest id the route allows still fits degraded, even all control characters")
    func longestIDFits() {
        let id = String(repeating: "\u{01}", count: PushRoute.maxIDBytes)
        let plan = PayloadMapper.plan(message: aes128gcmMessage(bodyBytes: 3000), id: id, now: 0)
        #expect(plan.degraded)
        #expect(plan.payload.count <= PayloadMapper.maxPayloadBytes)
    }

    @Test("the id and loc key are JSON-escaped: quotes, backslash, control characters; UTF-8 passes through")
    func escaping() throws {
        let id = "a\"b\\c\nd\u{1F}e😀é"
        let m = WebPushMessage(encoding: .aes128gcm, body: [0xFF])
        let plan = PayloadMapper.plan(message: m, id: id, alertLocKey: "k\"\t", now: 0)
        #expect(text(plan) == #"{"aps":{"alert":{"loc-key":"k\"\t"},"mutable-content":1},"i":"a\"b\\c\nd\u001fe😀é","m":"_w==","e":"aes128gcm"}"#)
        // And a JSON parser reads back exactly what went in.
        let object = try #require(try JSONSerialization.jsonObject(with: Data(plan.payload)) as? [String: Any])
        #expect(object["i"] as? String == id)
        let alert = (object["aps"] as? [String: Any])?["alert"] as? [String: Any]
        #expect(alert?["loc-key"] as? String == "k\"\t")
    }

    /// The relay hands the mapper's bytes to APNs without scanning them again, so the mapper must
    /// never write what the scan would refuse: checked here over seeded random ids and bodies.
    @Test("every payload the mapper writes passes APNs's payload check, full or degraded")
    func alwaysValidPayload() throws {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next() -> UInt64 {  // SplitMix64: the same sequence on every run
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        let alphabet: [Unicode.Scalar] = ["a", "\"", "\\", "\n", "\u{0}", "\u{1F}", "\u{7F}", "é", "😀", "\u{2028}", "/", " "]
        var degraded = 0
        for _ in 0..<300 {
            var id = String.UnicodeScalarView()
            for _ in 0..<Int(next() % 40 + 1) { id.append(alphabet[Int(next() % UInt64(alphabet.count))]) }
            let body = (0..<Int(next() % 4000 + 1)).map { _ in UInt8(truncatingIfNeeded: next()) }
            let message = next() % 2 == 0
                ? WebPushMessage(encoding: .aes128gcm, body: body)
                : WebPushMessage(encoding: .aesgcm, body: body, salt: F.salt, dh: F.dh)
            let plan = PayloadMapper.plan(message: message, id: String(id), now: 0)
            if plan.degraded { degraded += 1 }
            let checked = try APNsPayload(json: plan.payload)
            #expect(!checked.isBackgroundOnly)
            #expect(plan.payload.count <= PayloadMapper.maxPayloadBytes)
        }
        #expect(degraded > 0 && degraded < 300)
    }

    @Test("TTL maps to apns-expiration: now + TTL, 0 stays 0, absent sends none",
          arguments: [(172800, 1_700_172_800), (0, 0), (1, 1_700_000_001), (nil, nil)] as [(Int?, Int?)])
    func expiration(_ ttl: Int?, _ expected: Int?) {
        let m = WebPushMessage(encoding: .aes128gcm, body: [1], ttl: ttl)
        #expect(PayloadMapper.plan(message: m, id: "1", now: 1_700_000_000).expiration == expected)
    }

    @Test("a huge TTL never overflows the expiration")
    func hugeTTL() {
        let m = WebPushMessage(encoding: .aes128gcm, body: [1], ttl: Int.max)
        #expect(PayloadMapper.plan(message: m, id: "1", now: 1_700_000_000).expiration == Int.max)
    }

    @Test("Urgency maps to apns-priority: very-low and low → 5, the rest → 10",
          arguments: [(.veryLow, 5), (.low, 5), (.normal, 10), (.high, 10), (nil, 10)] as [(WebPushMessage.Urgency?, Int)])
    func priority(_ urgency: WebPushMessage.Urgency?, _ expected: Int) {
        let m = WebPushMessage(encoding: .aesgcm, body: [1], salt: F.salt, dh: F.dh, urgency: urgency)
        #expect(PayloadMapper.plan(message: m, id: "1", now: 0).priority == expected)
    }
}

@Suite("WebPush → APNs payload, written in one piece")
struct PayloadFastPathTests {
    @Test("the payload written at once is byte for byte the one appended piece by piece, for varied ids, keys, bodies and loc-keys")
    func sameBytes() {
        let ids = ["42", "acct-7/notification-123", "", "q\"uote", "back\\slash", "tab\there", "é", String(repeating: "i", count: 512)]
        let keys = [F.salt, F.dh, "", "with\"quote", "ctl\u{1}"]
        let locKeys = [PayloadMapper.defaultAlertLocKey, "k", "k\"\t", "ünïcode"]
        var seed: UInt64 = 14
        func pick<T>(_ list: [T]) -> T {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return list[Int(seed >> 33) % list.count]
        }
        var fastCount = 0
        for round in 0 ..< 400 {
            let encoding: WebPushEncoding = round % 3 == 0 ? .aes128gcm : .aesgcm
            let bodySize = pick([1, 2, 3, 40, 300, 2900, 3000, 3100])
            let body = (0 ..< bodySize).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ round) }
            let salt: String? = round % 5 == 0 ? nil : pick(keys)
            let dh: String? = round % 7 == 0 ? nil : pick(keys)
            let message = WebPushMessage(encoding: encoding, body: body, salt: salt, dh: dh)
            let id = pick(ids), locKey = pick(locKeys)
            let plan = PayloadMapper.plan(message: message, id: id, alertLocKey: locKey, now: 0)
            let general = PayloadMapper.payload(message: message, id: id, alertLocKey: locKey, degraded: plan.degraded)
            #expect(plan.payload == general, "id \(id) loc-key \(locKey) salt \(salt ?? "-") dh \(dh ?? "-") body \(bodySize)")
            let plain = [id, locKey, salt ?? "", dh ?? ""].allSatisfy { JSONString.escapedCount($0) == $0.utf8.count }
            if plain && !plan.degraded { fastCount += 1 }
        }
        // Both ways were exercised: many payloads took the one-piece path.
        #expect(fastCount > 50)
    }
}
