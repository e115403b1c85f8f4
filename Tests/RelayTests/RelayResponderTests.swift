import Foundation
import Synchronization
import Testing
import APNs
import HTTPServer
import Observability
import ObservabilityTestSupport
import Basics
@testable import Relay

/// Stands in for the APNs client: keeps what it was asked to send, answers as scripted.
final class FakeSender: APNsSending {
    struct Sent: Sendable {
        var notification: APNsNotification
        var environment: APNsEnvironment
    }
    private let sent = Mutex<[Sent]>([])
    private let answer: @Sendable (APNsNotification) -> Result<APNsResponse, APNsError>

    init(answer: @escaping @Sendable (APNsNotification) -> Result<APNsResponse, APNsError> = { n in
        .success(APNsResponse(ok: true, status: 200, apnsID: n.apnsID, device: n.token.fingerprint))
    }) {
        self.answer = answer
    }

    var all: [Sent] { sent.withLock { $0 } }

    func send(_ notification: APNsNotification, environment: APNsEnvironment) async -> Result<APNsResponse, APNsError> {
        sent.withLock { $0.append(Sent(notification: notification, environment: environment)) }
        return answer(notification)
    }
}

enum Sample {
    static let token = "a1b2c3d4" + String(repeating: "0f", count: 28)
    static let salt = "XaGvK-1McJRNX-agVfElbQ"
    static let dh = "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA"
    static let body: [UInt8] = Array(0..<40)

    static func aesgcm(path: String = "/push/\(token)/sub-1", extra: [(String, String)] = []) -> HTTPRequest {
        HTTPRequest(method: "POST", target: path,
                    headers: HTTPHeaders([("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(salt)"),
                                          ("Crypto-Key", "dh=\(dh);p256ecdsa=BAAA")] + extra),
                    body: body)
    }
}

private func make(_ sender: FakeSender = FakeSender(), readiness: @escaping RelayResponder.ReadinessCheck = { nil })
    -> (RelayResponder, InMemoryLogSink)
{
    let sink = InMemoryLogSink()
    let responder = RelayResponder(settings: .init(topic: "com.example.app"), sender: sender,
                                   logger: Logger(label: "test", level: .debug, sink: sink), readiness: readiness,
                                   now: { WallTime(timeIntervalSince1970: 1_700_000_000) })
    return (responder, sink)
}

private func json(_ response: HTTPResponse) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
}

@Suite("Relay responder (fake APNs)")
struct RelayResponderTests {
    @Test("a push answers 201 with the apns-id it sent to Apple, topic and plan applied")
    func pushDelivered() async throws {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        let response = await responder.respond(to: Sample.aesgcm(extra: [("TTL", "60"), ("Urgency", "low"), ("Topic", "t1")]))
        #expect(response.status == 201)
        let sent = try #require(sender.all.first)
        #expect(response.headers["apns-id"] == sent.notification.apnsID)
        #expect(sent.notification.apnsID == sent.notification.apnsID.lowercased())
        #expect(UUID(uuidString: sent.notification.apnsID) != nil)
        #expect(sent.environment == .production)
        #expect(sent.notification.topic == "com.example.app")
        #expect(sent.notification.pushType == .alert)
        #expect(sent.notification.priority == 5)
        #expect(sent.notification.expiration == 1_700_000_060)
        #expect(sent.notification.collapseID == "t1")
        #expect(sent.notification.token.hex == Sample.token)
    }

    @Test("?sandbox=true selects the sandbox; anything else production")
    func sandbox() async {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        _ = await responder.respond(to: Sample.aesgcm(path: "/push/\(Sample.token)/x?sandbox=true"))
        _ = await responder.respond(to: Sample.aesgcm(path: "/push/\(Sample.token)/x?sandbox=1"))
        #expect(sender.all.map(\.environment) == [.sandbox, .production])
    }

    @Test("each apns-id is fresh")
    func freshIDs() async {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        for _ in 0..<3 { _ = await responder.respond(to: Sample.aesgcm()) }
        #expect(Set(sender.all.map(\.notification.apnsID)).count == 3)
    }

    @Test("a push without X-Request-ID gets a fresh lower-case UUID as its request id")
    func requestIDGenerated() async throws {
        let (responder, _) = make()
        let first = try #require(await responder.respond(to: Sample.aesgcm()).headers["X-Request-ID"])
        let second = try #require(await responder.respond(to: Sample.aesgcm()).headers["X-Request-ID"])
        #expect(first != second)
        for id in [first, second] {
            #expect(id == id.lowercased())
            #expect(UUID(uuidString: id)?.uuidString.lowercased() == id)
            #expect(Array(id.utf8)[14] == UInt8(ascii: "4"))  // random (version 4)
        }
        let given = await responder.respond(to: Sample.aesgcm(extra: [("X-Request-ID", "abc-1")]))
        #expect(given.headers["X-Request-ID"] == "abc-1")
    }

    @Test("a generated request id is its UUID's text wherever it is written; a given one is itself")
    func requestIDText() {
        var rng = SystemRandomNumberGenerator()
        for _ in 0 ..< 200 {
            let uuid: UUIDText.Bytes = (rng.next(), rng.next())
            let id = RelayResponder.RequestID.generated(uuid)
            var lent: [UInt8] = []
            id.withText { lent = Array($0) }
            #expect(lent.count == UUIDText.textCount)
            #expect(String(decoding: lent, as: UTF8.self) == UUIDText.lowercase(uuid))
            #expect(id.text == UUIDText.lowercase(uuid))
        }
        #expect(RelayResponder.RequestID.given("abc-1").text == "abc-1")
        var request = Sample.aesgcm()
        request.requestID = "Req.1"
        #expect(RelayResponder.requestID(request).text == "Req.1")
        request.requestID = "a b"
        let fresh = RelayResponder.requestID(request).text
        #expect(UUID(uuidString: fresh)?.uuidString.lowercased() == fresh)
    }

    @Test("an X-Request-ID that is long or holds other characters is replaced by a fresh one")
    func hostileRequestIDReplaced() async throws {
        let (responder, sink) = make()
        let plain = "Req.1_a:b/c+d=e-" + String(repeating: "z", count: 112)
        let hostile = [String(repeating: "a", count: 129), String(repeating: "\u{7}", count: 16_000),
                       #"x\" http.status=201 forged=yes z=""#, "a b", "", "é"]
        for given in hostile {
            let answer = await responder.respond(to: Sample.aesgcm(extra: [("X-Request-ID", given)]))
            let echoed = try #require(answer.headers["X-Request-ID"])
            #expect(echoed != given)
            #expect(UUID(uuidString: echoed)?.uuidString.lowercased() == echoed)
            #expect(sink.records.last?.metadata["request.id"] == .string(echoed))
        }
        let kept = await responder.respond(to: Sample.aesgcm(extra: [("X-Request-ID", plain)]))
        #expect(kept.headers["X-Request-ID"] == plain)
        #expect(sink.records.last?.metadata["request.id"] == .string(plain))
    }

    @Test("GET /, /health and webpush-apn-relay's /relay-to/_health answer 200; /ready follows the readiness check")
    func probes() async {
        let ready = Atomic<Bool>(false)
        let (responder, _) = make(readiness: { ready.load(ordering: .relaxed) ? nil : "not connected" })
        #expect(await responder.respond(to: HTTPRequest(method: "GET", target: "/")).status == 200)
        #expect(await responder.respond(to: HTTPRequest(method: "GET", target: "/health")).status == 200)
        // webpush-apn-relay's probe path answers as /health does.
        let theirs = await responder.respond(to: HTTPRequest(method: "GET", target: "/relay-to/_health"))
        let ours = await responder.respond(to: HTTPRequest(method: "GET", target: "/health"))
        #expect(theirs.status == 200 && theirs.body == ours.body)
        #expect(await responder.respond(to: HTTPRequest(method: "HEAD", target: "/relay-to/_health")).status == 200)
        let notReady = await responder.respond(to: HTTPRequest(method: "GET", target: "/ready"))
        #expect(notReady.status == 503)
        #expect(json(notReady)["reason"] as? String == "not connected")
        ready.store(true, ordering: .relaxed)
        #expect(await responder.respond(to: HTTPRequest(method: "GET", target: "/ready")).status == 200)
    }

    @Test("/metrics is Prometheus text with request, APNs and latency series")
    func metrics() async {
        let (responder, _) = make()
        _ = await responder.respond(to: Sample.aesgcm())
        let page = await responder.respond(to: HTTPRequest(method: "GET", target: "/metrics"))
        #expect(page.status == 200)
        #expect(page.headers["Content-Type"]?.hasPrefix("text/plain; version=0.0.4") == true)
        let text = String(decoding: page.body, as: UTF8.self)
        #expect(text.contains(#"relay_http_requests_total{route="push",status="201"} 1"#))
        #expect(text.contains(#"relay_apns_responses_total{reason="none",status="200"} 1"#))
        #expect(text.contains("relay_push_duration_seconds_count 1"))
        #expect(text.contains("relay_pushes_in_flight 0"))
        #expect(text.contains(#"relay_build_info{version="\#(RelayVersion.current)"} 1"#))
    }

    @Test("unknown paths answer 404, wrong methods 405 with Allow, all with a JSON reason")
    func routing() async {
        let (responder, _) = make()
        let cases: [(String, String, Int, String?)] = [
            ("GET", "/nope", 404, nil),
            ("POST", "/push/\(Sample.token)", 404, nil),
            ("POST", "/push/\(Sample.token)/a/b", 404, nil),
            ("GET", "/push/\(Sample.token)/a", 405, "POST, OPTIONS"),
            ("PUT", "/push/\(Sample.token)/a", 405, "POST, OPTIONS"),
            ("HEAD", "/push/xyz/a", 405, "POST, OPTIONS"),
            ("POST", "/health", 405, "GET, HEAD, OPTIONS"),
            ("POST", "/relay-to/_health", 405, "GET, HEAD, OPTIONS"),
            ("DELETE", "/metrics", 405, "GET, HEAD, OPTIONS"),
            ("POST", "/", 405, "GET, HEAD, OPTIONS"),
        ]
        for (method, target, status, allow) in cases {
            let response = await responder.respond(to: HTTPRequest(method: method, target: target))
            #expect(response.status == status, "\(method) \(target)")
            #expect(response.headers["Allow"] == allow, "\(method) \(target)")
            #expect(response.headers["Content-Type"] == "application/json")
            #expect((json(response)["reason"] as? String)?.isEmpty == false, "\(method) \(target)")
        }
    }

    @Test("HEAD answers every GET route with the GET's status and headers")
    func headLikeGet() async {
        for (target, ready) in [("/", true), ("/health", true), ("/ready", true), ("/ready", false), ("/metrics", true)] {
            let (responder, _) = make(readiness: { ready ? nil : "no APNs connection is up" })
            let get = await responder.respond(to: HTTPRequest(method: "GET", target: target))
            let head = await responder.respond(to: HTTPRequest(method: "HEAD", target: target))
            #expect(head.status == get.status, "HEAD \(target)")
            #expect(head.headers["Content-Type"] == get.headers["Content-Type"], "HEAD \(target)")
            #expect(head.headers["Allow"] == nil, "HEAD \(target)")
        }
    }

    @Test("OPTIONS answers 204 with the route's Allow and sends no push")
    func options() async {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        for (target, allow) in [("/", "GET, HEAD, OPTIONS"), ("/health", "GET, HEAD, OPTIONS"),
                                ("/ready", "GET, HEAD, OPTIONS"), ("/metrics", "GET, HEAD, OPTIONS"),
                                ("/push/\(Sample.token)/a", "POST, OPTIONS")] {
            let response = await responder.respond(to: HTTPRequest(method: "OPTIONS", target: target))
            #expect(response.status == 204, "OPTIONS \(target)")
            #expect(response.headers["Allow"] == allow, "OPTIONS \(target)")
            #expect(response.body.isEmpty)
        }
        #expect(sender.all.isEmpty)
    }

    @Test("malformed pushes answer their status, reach no APNs, and the relay keeps serving")
    func malformed() async {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        let t = Sample.token
        let cases: [(HTTPRequest, Int)] = [
            (Sample.aesgcm(path: "/push/xyz/a"), 400),
            (Sample.aesgcm(path: "/push/\(t)0/a"), 400),
            (Sample.aesgcm(path: "/push/\(t)/%zz"), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aesgcm", "Crypto-Key": "dh=\(Sample.dh)"], body: Sample.body), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aesgcm", "Encryption": "salt=\(Sample.salt)"], body: Sample.body), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aesgcm", "Encryption": "salt=AAAA", "Crypto-Key": "dh=\(Sample.dh)"], body: Sample.body), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aes128gcm"], body: [1, 2, 3]), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aesgcm", "Encryption": "salt=\(Sample.salt)", "Crypto-Key": "dh=\(Sample.dh)"], body: []), 400),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "br"], body: Sample.body), 415),
            (HTTPRequest(method: "POST", target: "/push/\(t)/a", headers: ["Content-Encoding": "aes128gcm"], body: [UInt8](repeating: 1, count: 70_000)), 413),
        ]
        for (request, status) in cases {
            let response = await responder.respond(to: request)
            #expect(response.status == status, "\(request.target) \(request.headers)")
            #expect((json(response)["reason"] as? String)?.isEmpty == false)
        }
        #expect(sender.all.isEmpty)
        #expect(await responder.respond(to: Sample.aesgcm()).status == 201)
    }

    @Test("one JSON-ready log line per push, with a fingerprint and never the token")
    func logLine() async throws {
        let (responder, sink) = make(FakeSender { n in
            .success(APNsResponse(ok: false, status: 410, apnsID: n.apnsID, device: n.token.fingerprint,
                                  reason: APNsReason("Unregistered"), goneSinceMs: 7))
        })
        var request = Sample.aesgcm()
        request.requestID = "req-42"
        let response = await responder.respond(to: request)
        #expect(response.status == 410)
        #expect(json(response)["reason"] as? String == "Unregistered")
        #expect(json(response)["timestamp"] as? Int == 7)
        let records = sink.records
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record.metadata["request.id"] == .string("req-42"))
        #expect(record.metadata["route"] == .string("push"))
        #expect(record.metadata["http.status"] == .int(410))
        #expect(record.metadata["apns.reason"] == .string("Unregistered"))
        #expect(record.metadata["apns.status"] == .int(410))
        #expect(record.metadata["apns.error"] == nil)
        #expect(record.metadata["apns.id"] == .string(response.headers["apns-id"] ?? "missing"))
        #expect(record.metadata["latency_ms"] != nil)
        #expect(record.metadata["device"] == .string(try DeviceToken(Sample.token).fingerprint))
        let line = JSONLogSink().format(record)
        #expect(!line.contains(Sample.token))
        #expect(!line.lowercased().contains("bearer"))
    }

    @Test("Apple's answer goes in the push's line: its status and reason, or the error when none came; a refused push has neither")
    func apnsPartOfTheLine() async throws {
        let (failing, failedSink) = make(FakeSender { _ in .failure(APNsError(code: .timeout, message: "no answer")) })
        _ = await failing.respond(to: Sample.aesgcm())
        let failed = try #require(failedSink.records.last)
        #expect(failed.metadata["apns.error"] == .string("timeout"))
        #expect(failed.metadata["apns.status"] == nil && failed.metadata["apns.reason"] == nil)

        let (delivering, deliveredSink) = make()
        _ = await delivering.respond(to: Sample.aesgcm())
        let delivered = try #require(deliveredSink.records.last)
        #expect(delivered.metadata["apns.status"] == .int(200))
        #expect(delivered.metadata["apns.error"] == nil && delivered.metadata["apns.reason"] == nil)

        _ = await delivering.respond(to: Sample.aesgcm(path: "/push/xyz/a"))
        let refused = try #require(deliveredSink.records.last)
        #expect(refused.metadata["http.status"] == .int(400))
        #expect(refused.metadata["apns.status"] == nil && refused.metadata["apns.error"] == nil && refused.metadata["apns.reason"] == nil)
    }

    @Test("a misconfiguration answers 502, logs an error and counts it")
    func misconfiguration() async {
        let (responder, sink) = make(FakeSender { n in
            .success(APNsResponse(ok: false, status: 400, apnsID: n.apnsID, device: n.token.fingerprint,
                                  reason: APNsReason("DeviceTokenNotForTopic")))
        })
        let response = await responder.respond(to: Sample.aesgcm())
        #expect(response.status == 502)
        #expect(sink.records.last?.level == .error)
        #expect(responder.metrics.registry.prometheusText().contains(#"relay_misconfiguration_total{reason="DeviceTokenNotForTopic"} 1"#))
    }

    @Test("a payload too big for Apple goes out degraded, answered 201 and counted")
    func degraded() async throws {
        let sender = FakeSender()
        let (responder, sink) = make(sender)
        var request = Sample.aesgcm()
        request.body = [UInt8](repeating: 7, count: 5000)
        let response = await responder.respond(to: request)
        #expect(response.status == 201)
        let payload = String(decoding: try #require(sender.all.first).notification.payload, as: UTF8.self)
        #expect(payload == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"sub-1"}"#)
        #expect(responder.metrics.degradedPayloads.value == 1)
        let line = try #require(sink.records.last)
        #expect(line.metadata["payload.degraded"] == true)
        guard case .string(let why)? = line.metadata["payload.degraded_reason"] else {
            Issue.record("the log line does not say why the push was degraded: \(line.metadata)")
            return
        }
        #expect(why.contains("5000-byte encrypted body") && why.contains("over Apple's 4096"), "\(why)")
    }

    @Test("a body padded to webpush-go's default record size of 4096 is logged with the fix")
    func degradedByRecordSize() async throws {
        let (responder, sink) = make()
        // aes128gcm header: salt(16) ‖ rs = 4096 ‖ idlen = 65 ‖ keyid(65), then one padded record.
        var body = [UInt8](repeating: 0xAB, count: 16) + [0, 0, 0x10, 0, 65, 0x04] + [UInt8](repeating: 0x5A, count: 64)
        body += [UInt8](repeating: 0x33, count: 4096)
        let request = HTTPRequest(method: "POST", target: "/push/\(Sample.token)/sub-1",
                                  headers: ["Content-Encoding": "aes128gcm"], body: body)
        #expect(await responder.respond(to: request).status == 201)
        guard case .string(let why)? = sink.records.last?.metadata["payload.degraded_reason"] else {
            Issue.record("no payload.degraded_reason in \(String(describing: sink.records.last))")
            return
        }
        #expect(why.contains("rs=4096") && why.contains("2048"), "\(why)")
    }

    @Test("Retry-After accompanies 429 and 503")
    func retryAfter() async {
        let (r429, _) = make(FakeSender { n in
            .success(APNsResponse(ok: false, status: 429, apnsID: n.apnsID, device: "", reason: APNsReason("TooManyRequests")))
        })
        #expect(await r429.respond(to: Sample.aesgcm()).headers["Retry-After"] == "60")
        let (r503, _) = make(FakeSender { _ in .failure(APNsError(code: .overloaded, message: "queue full")) })
        let busy = await r503.respond(to: Sample.aesgcm())
        #expect(busy.status == 503)
        #expect(busy.headers["Retry-After"] == "5")
    }
}
