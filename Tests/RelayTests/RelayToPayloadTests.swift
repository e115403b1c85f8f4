import Foundation
import Testing
@testable import Relay
import WebPush

/// The Z85 texts below were computed by the Python script quoted in Z85Tests.swift, extended
/// with `enc(bytes(range(40)))` and `enc(base64.urlsafe_b64decode(…))` of the salt and dh.
private enum F {
    static let salt = "XaGvK-1McJRNX-agVfElbQ"
    static let dh = "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA"
    static let body: [UInt8] = Array(0 ..< 40)
    static let bodyZ85 = "009c61o!#m2NH?C3>iWS5d]J*6CRx17-skh9337xar.{NbQB=+"
    static let saltZ85 = "u7[CL)m.F-o<^4QrQ?wL"
    static let dhZ85 = "1u}&TTBNGZqA.ZziyJhuA3@z?B*JA]P3p}SS7SqkW56OB>BC:)0fB5Ae9]bkcPa48)JurJb6kFEyj8gs1r"
    static let aps = #"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1}"#
}

private func text(_ plan: APNsPushPlan) -> String { String(decoding: plan.payload, as: UTF8.self) }

@Suite("WebPush → APNs payload, relay-to")
struct RelayToPayloadTests {
    @Test("Mastodon's aesgcm request becomes toot-relay's payload: p, x, then k and s as Z85 bytes")
    func aesgcmPayload() throws {
        let headers: [(name: String, value: String)] = [
            ("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(F.salt)"), ("Crypto-Key", "dh=\(F.dh);p256ecdsa=BAAA"),
            ("TTL", "172800"), ("Urgency", "low"), ("Topic", "mention"),
        ]
        let message = try WebPushParser.parse(headers: headers, body: F.body)
        let plan = PayloadMapper.relayToPlan(message: message, extra: "acct/7", now: 1_700_000_000)
        #expect(text(plan) == F.aps + #","p":""# + F.bodyZ85 + #"","x":"acct/7","k":""# + F.dhZ85 + #"","s":""# + F.saltZ85 + #""}"#)
        #expect(plan.priority == 5)
        #expect(plan.expiration == 1_700_172_800)
        #expect(plan.collapseID == "mention")
        #expect(!plan.degraded)
    }

    @Test("salt and dh are the same bytes however they were sent: padded, unpadded or in the +/ alphabet")
    func saltAnySpelling() {
        let standard = F.dh.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let m = WebPushMessage(encoding: .aesgcm, body: [1, 2, 3], salt: F.salt + "==", dh: standard + "=")
        #expect(text(PayloadMapper.relayToPlan(message: m, extra: nil, now: 0))
                == F.aps + #","p":"09c6","k":""# + F.dhZ85 + #"","s":""# + F.saltZ85 + #""}"#)
    }

    @Test("aes128gcm: the whole body in p, e aes128gcm, no k or s; no x without an extra path")
    func aes128gcmPayload() {
        let m = WebPushMessage(encoding: .aes128gcm, body: F.body)
        let plan = PayloadMapper.relayToPlan(message: m, extra: nil, now: 0)
        #expect(text(plan) == F.aps + #","p":""# + F.bodyZ85 + #"","e":"aes128gcm"}"#)
        #expect(plan.expiration == nil && plan.priority == 10 && plan.collapseID == nil)
    }

    @Test("the alert text is the configured one, JSON-escaped; so is x")
    func alertAndExtraEscaped() throws {
        let m = WebPushMessage(encoding: .aes128gcm, body: [1, 2, 3])
        let plan = PayloadMapper.relayToPlan(message: m, extra: "a\"b\\c\u{1}", alert: "New \"post\"", now: 0)
        #expect(text(plan) == #"{"aps":{"alert":"New \"post\"","mutable-content":1,"content-available":1},"p":"09c6","x":"a\"b\\c\u0001","e":"aes128gcm"}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(plan.payload)) as? [String: Any])
        #expect(object["x"] as? String == "a\"b\\c\u{1}")
    }

    @Test("a 4000-byte body goes out degraded: the same aps and x, no p, k, s or e")
    func degraded() {
        let m = WebPushMessage(encoding: .aesgcm, body: [UInt8](repeating: 7, count: 4000), salt: F.salt, dh: F.dh, ttl: 60, topic: "t")
        let plan = PayloadMapper.relayToPlan(message: m, extra: "x1", now: 100)
        #expect(plan.degraded)
        #expect(text(plan) == F.aps + #","x":"x1"}"#)
        #expect(plan.expiration == 160 && plan.collapseID == "t")
        let bare = PayloadMapper.relayToPlan(message: aes128gcmMessage(bodyBytes: 4000), extra: nil, now: 0)
        #expect(text(bare) == F.aps + "}")
    }

    @Test("the largest body that fits goes out whole, at most 4096 bytes; one more byte degrades")
    func boundary() {
        var lastWhole = 0
        for n in 3100 ... 3400 {
            let plan = PayloadMapper.relayToPlan(message: aes128gcmMessage(bodyBytes: n), extra: "12345", now: 0)
            if plan.degraded {
                #expect(plan.payload.count < 200)
            } else {
                #expect(plan.payload.count <= PayloadMapper.maxPayloadBytes)
                lastWhole = n
            }
        }
        #expect(lastWhole > 3100 && lastWhole < 3400)
        let edge = PayloadMapper.relayToPlan(message: aes128gcmMessage(bodyBytes: lastWhole), extra: "12345", now: 0)
        #expect(edge.payload.count > PayloadMapper.maxPayloadBytes - 5)  // Z85 grows by 5 bytes per 4
        #expect(PayloadMapper.relayToPlan(message: aes128gcmMessage(bodyBytes: lastWhole + 1), extra: "12345", now: 0).degraded)
    }

    @Test("the longest extra path and alert the configuration allows still fit degraded")
    func longestFits() {
        let extra = String(repeating: "\u{01}", count: PushRoute.maxIDBytes)
        let alert = String(repeating: "\"", count: RelayConfiguration.maxRelayToAlertBytes)
        let plan = PayloadMapper.relayToPlan(message: aes128gcmMessage(bodyBytes: 3000), extra: extra, alert: alert, now: 0)
        #expect(plan.degraded)
        #expect(plan.payload.count <= PayloadMapper.maxPayloadBytes)
    }
}
