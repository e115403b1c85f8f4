import Foundation
import Testing
import APNs
import MockAPNs
import WebPushCrypto
@testable import Relay

/// A Z85 decoder written for these tests from the rule alone (5 digits give 4 bytes, a trailing
/// group of n + 1 digits gives n bytes, each big-endian), sharing no code with the relay's `Z85`:
/// what the app's notification service extension does with `p`, `k` and `s`.
private func z85Decode(_ text: String) throws -> [UInt8] {
    let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
    let digits = try text.map { c in try #require(alphabet.firstIndex(of: c), "\(c) is not a Z85 digit") }
    var out: [UInt8] = []
    for start in stride(from: 0, to: digits.count, by: 5) {
        let group = digits[start..<min(start + 5, digits.count)]
        try #require(group.count >= 2, "a trailing group of one digit")
        let value = group.reduce(0) { $0 * 85 + $1 }
        for byte in (0..<(group.count - 1)).reversed() { out.append(UInt8((value >> (8 * byte)) & 0xFF)) }
    }
    return out
}

/// A message really encrypted for a fresh subscription, as Mastodon posts it, with the keys
/// the device holds to read it back.
private struct SealedPush {
    var device: WebPushDecryptor
    var plaintext: [UInt8]
    var body: [UInt8]
    var headers: [(String, String)]

    static func make(_ encoding: String, padding: Int = 0) throws -> SealedPush {
        let device = try WebPushDecryptor.generate()
        let plaintext = Array(#"{"notification_id":"7","notification_type":"mention","title":"Alice mentioned you"}"#.utf8)
        switch encoding {
        case "aesgcm":
            let sealed = try WebPushEncryptor.aesgcm(plaintext: plaintext, receiverPublicKey: device.publicKey,
                                                     authSecret: device.authSecret, padding: padding)
            return SealedPush(device: device, plaintext: plaintext, body: sealed.body, headers: [
                ("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(sealed.salt)"),
                ("Crypto-Key", "dh=\(sealed.dh);p256ecdsa=BAAA"), ("TTL", "3600"), ("Urgency", "high"),
            ])
        default:
            let body = try WebPushEncryptor.aes128gcm(plaintext: plaintext, receiverPublicKey: device.publicKey,
                                                      authSecret: device.authSecret, padding: padding)
            return SealedPush(device: device, plaintext: plaintext, body: body, headers: [
                ("Content-Encoding", "aes128gcm"), ("TTL", "3600"), ("Urgency", "high"),
            ])
        }
    }

    func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }

    /// The value of `name=` in a header, as the sender wrote it.
    func parameter(_ name: String, of header: String) throws -> String {
        let value = try #require(self.header(header))
        let item = try #require(value.split(separator: ";").first { $0.hasPrefix("\(name)=") })
        return String(item.dropFirst(name.count + 1))
    }
}

extension RelayHarness {
    fileprivate func relayTo(_ environment: String = "production", token: String, extra: String = "",
                 push: SealedPush? = nil) async throws -> TestHTTP.Response {
        let push = try push ?? SealedPush.make("aesgcm")
        return try await TestHTTP.post(port: port, target: "/relay-to/\(environment)/\(token)\(extra)",
                                       headers: push.headers, body: push.body)
    }
}

private func object(_ payload: [UInt8]) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any])
}

/// The `/relay-to` route of toot-relay and webpush-apn-relay over real sockets, against the
/// APNs emulator: what Apple receives is what those relays' apps decode and decrypt.
@Suite("End to end: relay-to route → TLS + HTTP/2 emulator", .serialized, .timeLimit(.minutes(1)))
struct RelayToEndToEndTests {
    @Test("a relay-to push reaches the environment's host and decrypts on the device from p, k and s",
          arguments: ["production", "development"], ["aesgcm", "aes128gcm"])
    func delivered(environment: String, encoding: String) async throws {
        try await RelayHarness.with { h in
            let push = try SealedPush.make(encoding)
            let t = token("ab")
            let response = try await h.relayTo(environment, token: t.uppercased(), extra: "/acct%2F7/x", push: push)
            #expect(response.status == 201)
            let apnsID = try #require(response.header("apns-id"))

            let (host, other) = environment == "production" ? (h.apple, h.sandbox) : (h.sandbox, h.apple)
            let record = try #require(host.records.first)
            #expect(host.records.count == 1 && other.records.isEmpty)
            #expect(record.status == 200)
            #expect(record.path == "/3/device/\(t)")
            #expect(record.header("apns-id") == apnsID)
            #expect(record.header("apns-topic") == RelayHarness.topic)
            #expect(record.header("apns-push-type") == "alert")
            #expect(record.header("apns-priority") == "10")
            #expect(record.header("apns-expiration") == String(Int(h.now.timeIntervalSince1970) + 3600))

            // Byte-compatible with toot-relay: aps first, exactly as those relays write it, then p.
            let text = String(decoding: record.payload, as: UTF8.self)
            #expect(text.hasPrefix(#"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":""#))
            let payload = try object(record.payload)
            #expect(payload["x"] as? String == "acct/7/x")
            let body = try z85Decode(try #require(payload["p"] as? String))
            #expect(body == push.body)

            let plaintext: [UInt8]
            if encoding == "aesgcm" {
                #expect(Set(payload.keys) == ["aps", "p", "x", "k", "s"])
                let dh = try z85Decode(try #require(payload["k"] as? String))
                let salt = try z85Decode(try #require(payload["s"] as? String))
                #expect(dh == base64URLDecode(try push.parameter("dh", of: "Crypto-Key")))
                #expect(salt == base64URLDecode(try push.parameter("salt", of: "Encryption")))
                plaintext = try push.device.decryptAESGCM(body: body, salt: salt, senderPublicKey: dh)
            } else {
                #expect(Set(payload.keys) == ["aps", "p", "x", "e"])
                #expect(payload["e"] as? String == "aes128gcm")
                plaintext = try push.device.decryptAES128GCM(body: body)
            }
            #expect(plaintext == push.plaintext)
        }
    }

    @Test("every emulator fault answers the status of the /push table on this route, and it keeps serving")
    func faultTable() async throws {
        try await RelayHarness.with { h in
            try await EndToEndTests.expectFaultTable { try await h.relayTo(token: $0) }
            #expect(try await h.relayTo("development", token: token("99")).status == 201)
            let metrics = String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
            #expect(metrics.contains(#"relay_http_requests_total{route="relay-to",status="410"} 3"#))
            #expect(metrics.contains(#"relay_http_requests_total{route="relay-to",status="502"} 1"#))
            #expect(metrics.contains(#"relay_http_requests_total{route="relay-to",status="201"} 1"#))
            #expect(metrics.contains(#"relay_misconfiguration_total{reason="DeviceTokenNotForTopic"} 1"#))
            #expect(h.logs.records.contains { $0.metadata["route"] == .string("relay-to") && $0.metadata["http.status"] == .int(429) })
        }
    }

    @Test("a stream Apple never answers ends in 504 at the push deadline")
    func neverAnswered() async throws {
        try await RelayHarness.with(pushTimeout: .milliseconds(800)) { h in
            let response = try await h.relayTo(token: token(MockFaults.Prefix.neverAnswer))
            #expect(response.status == 504)
        }
    }

    @Test("a RELAY_TO_TOPIC the key may not push to is a 502 on this route only; /push keeps working")
    func wrongTopic() async throws {
        try await RelayHarness.with(relayToTopic: "com.example.wrong") { h in
            let response = try await h.relayTo(token: token("77"))
            #expect(response.status == 502)
            #expect(h.apple.records.first?.header("apns-topic") == "com.example.wrong")
            #expect(try await h.push(token: token("78")).status == 201)
        }
    }

    @Test("requests that can never work get the /push statuses, and reach no APNs")
    func malformed() async throws {
        try await RelayHarness.with { h in
            let t = token("aa")
            let ok = try SealedPush.make("aesgcm")
            let cases: [(String, String, [(String, String)], [UInt8], Int)] = [
                ("unknown environment", "/relay-to/staging/\(t)", ok.headers, ok.body, 404),
                ("no token", "/relay-to/production/", ok.headers, ok.body, 404),
                ("bad token", "/relay-to/production/nothex", ok.headers, ok.body, 400),
                ("bad extra", "/relay-to/production/\(t)/%zz", ok.headers, ok.body, 400),
                ("missing salt", "/relay-to/production/\(t)", ok.headers.filter { $0.0 != "Encryption" }, ok.body, 400),
                ("empty body", "/relay-to/production/\(t)", ok.headers, [], 400),
                ("unsupported encoding", "/relay-to/production/\(t)", [("Content-Encoding", "gzip")], ok.body, 415),
                ("body over the cap", "/relay-to/production/\(t)", [("Content-Encoding", "aes128gcm")], [UInt8](repeating: 1, count: 70_000), 413),
            ]
            for (name, target, headers, body, status) in cases {
                let response = try await TestHTTP.post(port: h.port, target: target, headers: headers, body: body)
                #expect(response.status == status, "\(name)")
                #expect(response.reason?.isEmpty == false, "\(name)")
            }
            #expect(h.apple.records.isEmpty && h.sandbox.records.isEmpty)
        }
    }

    @Test("a message padded past Apple's limit goes out degraded with x, answered 201")
    func degraded() async throws {
        try await RelayHarness.with { h in
            // webpush-go pads every message to its 4096-byte record size by default.
            let push = try SealedPush.make("aes128gcm", padding: 3900)
            let response = try await h.relayTo(token: token("bb"), extra: "/acct", push: push)
            #expect(response.status == 201)
            let record = try #require(h.apple.records.first)
            #expect(record.status == 200)
            #expect(String(decoding: record.payload, as: UTF8.self)
                    == #"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"x":"acct"}"#)
        }
    }
}
