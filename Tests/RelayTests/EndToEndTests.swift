import Foundation
import Testing
import APNs
import MockAPNs
import TestWaits
@testable import Relay

private let rfc8291Body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

/// The relay over real sockets against the APNs emulator: what Mastodon sends in, what Apple
/// receives out, and the status Mastodon hears back.
@Suite("End to end: HTTP/1.1 → relay → TLS + HTTP/2 emulator", .serialized, .timeLimit(.minutes(1)))
struct EndToEndTests {
    @Test("a Mastodon aesgcm push reaches Apple with exactly the headers and payload of docs/ARCHITECTURE.md §5, answered 201")
    func mastodonPush() async throws {
        try await RelayHarness.with { h in
            let t = token("ab")
            let response = try await h.push(token: t.uppercased(), id: "42",
                                            extra: [("TTL", "86400"), ("Urgency", "high"), ("Topic", "mention")])
            #expect(response.status == 201)
            let apnsID = try #require(response.header("apns-id"))
            #expect(apnsID == apnsID.lowercased() && UUID(uuidString: apnsID) != nil)

            let record = try #require(h.apple.records.first)
            #expect(h.apple.records.count == 1)
            #expect(record.status == 200)
            #expect(record.method == "POST")
            #expect(record.path == "/3/device/\(t)")
            #expect(record.header("apns-topic") == RelayHarness.topic)
            #expect(record.header("apns-push-type") == "alert")
            #expect(record.header("apns-priority") == "10")
            #expect(record.header("apns-id") == apnsID)
            #expect(record.header("apns-expiration") == String(Int(h.now.timeIntervalSince1970) + 86400))
            #expect(record.header("apns-collapse-id") == "mention")
            #expect(record.header("authorization")?.hasPrefix("bearer ") == true)
            let expected = #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"42","m":""#
                + base64URLPadded(Sample.body) + #"","s":""# + Sample.salt + #"","k":""# + Sample.dh + #"","e":"aesgcm"}"#
            #expect(String(decoding: record.payload, as: UTF8.self) == expected)
            #expect(h.sandbox.records.isEmpty)
        }
    }

    @Test("the RFC 8291 aes128gcm example goes out whole in m, with e and without s/k or optional headers")
    func rfc8291Push() async throws {
        try await RelayHarness.with { h in
            let t = token("cd")
            let body = base64URLDecode(rfc8291Body)
            let response = try await TestHTTP.post(port: h.port, target: "/push/\(t)/rfc%208291/",
                                                   headers: [("Content-Encoding", "aes128gcm"), ("Urgency", "very-low")],
                                                   body: body)
            #expect(response.status == 201)
            let record = try #require(h.apple.records.first)
            #expect(record.header("apns-id") == response.header("apns-id"))
            #expect(record.header("apns-priority") == "5")
            #expect(record.header("apns-expiration") == nil)
            #expect(record.header("apns-collapse-id") == nil)
            let expected = #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"rfc 8291","m":""#
                + base64URLPadded(body) + #"","e":"aes128gcm"}"#
            #expect(String(decoding: record.payload, as: UTF8.self) == expected)
        }
    }

    @Test("?sandbox=true goes to the sandbox host only, and its log line carries Apple's apns-unique-id")
    func sandboxRouting() async throws {
        try await RelayHarness.with { h in
            let response = try await h.push(token: token("5a"), query: "?sandbox=true")
            #expect(response.status == 201)
            #expect(h.sandbox.records.count == 1)
            #expect(h.sandbox.records.first?.header("apns-id") == response.header("apns-id"))
            #expect(h.apple.records.isEmpty)
            let production = try await h.push(token: token("5b"))
            #expect(production.status == 201)
            let lines = h.logs.records.filter { $0.message == "push delivered" }
            let sandboxLine = lines.first { $0.metadata["apns.environment"] == .string("sandbox") }
            guard case .string(let uniqueID)? = sandboxLine?.metadata["apns.unique_id"] else {
                Issue.record("no apns.unique_id on the sandbox push's line: \(String(describing: sandboxLine))"); return
            }
            #expect(uniqueID.count == 36 && uniqueID != response.header("apns-id"))
            // Production answers carry none, so its line has none.
            #expect(lines.first { $0.metadata["apns.environment"] == .string("production") }?.metadata["apns.unique_id"] == nil)
        }
    }

    /// Each emulator fault and the status the sender must hear (docs/ARCHITECTURE.md §6).
    static let faultRows: [(prefix: String, status: Int, retryAfter: String?)] = [
        (MockFaults.Prefix.unregistered, 410, nil),
        (MockFaults.Prefix.expiredToken, 410, nil),
        (MockFaults.Prefix.badDeviceToken, 410, nil),
        (MockFaults.Prefix.tooManyRequests, 429, "60"),
        (MockFaults.Prefix.internalServerError, 503, "30"),
        (MockFaults.Prefix.serviceUnavailable, 503, "30"),
        (MockFaults.Prefix.shutdown, 503, "30"),
        (MockFaults.Prefix.deviceTokenNotForTopic, 502, nil),
    ]

    /// Sends one push per row with `send` (given the row's token) and checks its answer.
    static func expectFaultTable(_ send: (String) async throws -> TestHTTP.Response) async throws {
        for row in faultRows {
            let response = try await send(token(row.prefix))
            #expect(response.status == row.status, "prefix \(row.prefix)")
            #expect(response.header("Retry-After") == row.retryAfter, "prefix \(row.prefix)")
            #expect(response.reason?.isEmpty == false, "prefix \(row.prefix)")
            if row.status == 410 { #expect(response.json["timestamp"] is Int, "prefix \(row.prefix)") }
        }
    }

    @Test("every emulator fault answers the status of the table, and the relay keeps serving")
    func faultTable() async throws {
        try await RelayHarness.with { h in
            try await Self.expectFaultTable { try await h.push(token: $0) }
            #expect(try await h.push(token: token("99")).status == 201)
            let metrics = try await TestHTTP.get(port: h.port, target: "/metrics")
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(text.contains(#"relay_apns_responses_total{reason="Unregistered",status="410"} 1"#))
            #expect(text.contains(#"relay_misconfiguration_total{reason="DeviceTokenNotForTopic"} 1"#))
            #expect(text.contains(#"relay_http_requests_total{route="push",status="201"} 1"#))
            // The process as an exporter reports it, read at the scrape: this test process's own.
            func value(_ name: String) -> Double? {
                text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ")[1]) }
            }
            #expect((value("process_resident_memory_bytes") ?? 0) > 1_000_000)
            #expect((value("process_open_fds") ?? 0) >= 3)
            #expect(value("process_max_fds").map { $0 >= (value("process_open_fds") ?? 0) } ?? true)
            #expect(value("relay_apns_queued_pushes") == 0)
        }
    }

    @Test("a stream Apple never answers ends in 504 at the push deadline")
    func neverAnswered() async throws {
        try await RelayHarness.with(pushTimeout: .milliseconds(800)) { h in
            let response = try await h.push(token: token(MockFaults.Prefix.neverAnswer))
            #expect(response.status == 504)
            #expect(response.reason?.isEmpty == false)
        }
    }

    @Test("a topic the key may not push to is our misconfiguration: 502, never a 4xx")
    func wrongTopic() async throws {
        try await RelayHarness.with(topic: "com.example.wrong") { h in
            let response = try await h.push(token: token("77"))
            #expect(response.status == 502)
            #expect(h.logs.records.contains { $0.level == .error && $0.metadata["http.status"] == .int(502) })
        }
    }

    @Test("connections to Apple are logged as they open, so an operator sees the relay reach Apple")
    func connectionEventsLogged() async throws {
        try await RelayHarness.with { h in
            _ = try await h.push(token: token("77"))
            #expect(h.logs.records.contains { $0.message == "APNs connection opened" && $0.metadata["apns.environment"] == .string("production") })
        }
    }

    @Test("header variants from real senders are all accepted and relayed as sent")
    func headerVariants() async throws {
        try await RelayHarness.with { h in
            let variants: [[(String, String)]] = [
                [("content-encoding", "aesgcm"), ("encryption", "salt=\(Sample.salt)"), ("crypto-key", "dh=\(Sample.dh)")],
                [("Content-Encoding", "aesgcm"), ("Encryption", "keyid=p256dh; salt=\(Sample.salt)==; rs=4096"),
                 ("Crypto-Key", "keyid=p256dh;dh=\(Sample.dh), p256ecdsa=BAAA")],
                [("Encryption", "salt=\"\(Sample.salt)\""), ("Crypto-Key", "p256ecdsa=BAAA;dh=\(Sample.dh)")],
            ]
            for (index, headers) in variants.enumerated() {
                let response = try await TestHTTP.post(port: h.port, target: "/push/\(token("e\(index)"))/v\(index)",
                                                       headers: headers, body: Sample.body)
                #expect(response.status == 201, "variant \(index)")
            }
            #expect(h.apple.records.count == variants.count)
            for record in h.apple.records {
                let payload = String(decoding: record.payload, as: UTF8.self)
                #expect(payload.contains(#""k":"\#(Sample.dh)""#))
                #expect(payload.contains(#""e":"aesgcm""#))
            }
        }
    }

    @Test("every malformed request of the contract gets its status, and the relay still serves")
    func malformedOverTheWire() async throws {
        try await RelayHarness.with { h in
            let t = token("aa")
            let ok: [(String, String)] = [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"),
                                          ("Crypto-Key", "dh=\(Sample.dh)")]
            let cases: [(String, String, [(String, String)], [UInt8], Int)] = [
                ("bad token", "/push/nothex/a", ok, Sample.body, 400),
                ("odd token", "/push/\(t)a/a", ok, Sample.body, 400),
                ("missing salt", "/push/\(t)/a", [ok[0], ok[2]], Sample.body, 400),
                ("short salt", "/push/\(t)/a", [ok[0], ("Encryption", "salt=AAAA"), ok[2]], Sample.body, 400),
                ("missing dh", "/push/\(t)/a", [ok[0], ok[1]], Sample.body, 400),
                ("bad dh", "/push/\(t)/a", [ok[0], ok[1], ("Crypto-Key", "dh=AAAA")], Sample.body, 400),
                ("bad aes128gcm header", "/push/\(t)/a", [("Content-Encoding", "aes128gcm")], [UInt8](repeating: 1, count: 30), 400),
                ("empty body", "/push/\(t)/a", ok, [], 400),
                ("unsupported encoding", "/push/\(t)/a", [("Content-Encoding", "gzip")], Sample.body, 415),
                ("body over the cap", "/push/\(t)/a", [("Content-Encoding", "aes128gcm")], [UInt8](repeating: 1, count: 70_000), 413),
                ("unknown path", "/subscribe", ok, Sample.body, 404),
            ]
            for (name, target, headers, body, status) in cases {
                let response = try await TestHTTP.post(port: h.port, target: target, headers: headers, body: body)
                #expect(response.status == status, "\(name)")
            }
            let wrongMethod = try await TestHTTP.get(port: h.port, target: "/push/\(t)/a")
            #expect(wrongMethod.status == 405)
            #expect(wrongMethod.header("Allow") == "POST, OPTIONS")
            #expect(wrongMethod.reason?.isEmpty == false)
            #expect(h.apple.records.isEmpty)
            #expect(try await h.push(token: t).status == 201)
            #expect(try await TestHTTP.get(port: h.port, target: "/health").status == 200)
            #expect(try await TestHTTP.get(port: h.port, target: "/ready").status == 200)
        }
    }

    /// Sends `count` pushes at once, runs `disturb` once the first reached Apple, and checks
    /// that every 201 has a 200 record with its apns-id (nothing accepted was lost).
    private func pushesSurvive(_ h: RelayHarness, count: Int, disturb: @escaping @Sendable () throws -> Void) async throws {
        let responses = try await withThrowingTaskGroup(of: TestHTTP.Response.self) { group in
            for i in 0..<count {
                group.addTask {
                    try await h.push(token: token(String(format: "%04x", 0x1000 + i)), extra: [("X-Request-ID", "r\(i)")])
                }
                if i == count / 3 {
                    #expect(try await eventually { !h.apple.records.isEmpty })
                    try disturb()
                }
            }
            var all: [TestHTTP.Response] = []
            for try await r in group { all.append(r) }
            return all
        }
        #expect(responses.count == count)
        let accepted = Set(h.apple.records.filter { $0.status == 200 }.compactMap { $0.header("apns-id") })
        for response in responses {
            #expect(response.status == 201 || response.status == 503, "status \(response.status)")
            if response.status == 201 {
                #expect(accepted.contains(response.header("apns-id") ?? "none"))
            }
        }
        #expect(responses.contains { $0.status == 201 })
    }

    @Test("a GOAWAY from Apple mid-run loses no push")
    func goAway() async throws {
        try await RelayHarness.with { h in
            try await pushesSurvive(h, count: 30) { h.apple.goAwayAll() }
            #expect(try await h.push(token: token("fe")).status == 201)
        }
    }

    @Test("an emulator restart mid-run loses no push, and the relay reconnects")
    func restart() async throws {
        try await RelayHarness.with { h in
            try await pushesSurvive(h, count: 30) { try h.apple.restart() }
            #expect(try await eventually { try await h.push(token: token("fd")).status == 201 })
        }
    }

    @Test("drain answers a push in flight before closing, then refuses connections")
    func drain() async throws {
        let h = try RelayHarness()
        try await h.waitUntilReady()
        h.apple.rules.updateFaults { $0.byTokenPrefix[MockFaults.Prefix.delay] = .delay(.milliseconds(700)) }
        let inFlight = Task { try await h.push(token: token(MockFaults.Prefix.delay)) }
        #expect(try await eventually { !h.apple.records.isEmpty })
        let drained = await h.relay.shutdown(deadline: .seconds(5))
        let response = try await inFlight.value
        #expect(response.status == 201)
        #expect(drained)
        #expect(TestHTTP.refused(port: h.port))
        h.apple.stop()
        h.sandbox.stop()
    }
}
