import Foundation
import Testing
import APNs
import HTTPServer
import Observability
import ObservabilityTestSupport
import Basics
@testable import Relay

private func make(_ sender: FakeSender = FakeSender(), relayToTopic: String? = "com.example.toot")
    -> (RelayResponder, InMemoryLogSink)
{
    let sink = InMemoryLogSink()
    let settings = RelayResponder.Settings(topic: "com.example.app", relayToTopic: relayToTopic, relayToAlert: "New post")
    let responder = RelayResponder(settings: settings, sender: sender,
                                   logger: Logger(label: "test", level: .debug, sink: sink),
                                   now: { WallTime(timeIntervalSince1970: 1_700_000_000) })
    return (responder, sink)
}

private func relayTo(_ environment: String = "production", token: String = Sample.token, extra: String = "") -> HTTPRequest {
    Sample.aesgcm(path: "/relay-to/\(environment)/\(token)\(extra)", extra: [("TTL", "60"), ("Topic", "t1")])
}

private func reason(_ response: HTTPResponse) -> String? {
    ((try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any])?["reason"] as? String
}

@Suite("Relay responder, relay-to route (fake APNs)")
struct RelayToResponderTests {
    @Test("a relay-to push goes out with its own topic, alert and payload, answered 201 with the apns-id")
    func delivered() async throws {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        let response = await responder.respond(to: relayTo(extra: "/a%2Fb/c"))
        #expect(response.status == 201)
        let sent = try #require(sender.all.first)
        #expect(response.headers["apns-id"] == sent.notification.apnsID)
        #expect(sent.environment == .production)
        #expect(sent.notification.topic == "com.example.toot")
        #expect(sent.notification.expiration == 1_700_000_060)
        #expect(sent.notification.collapseID == "t1")
        let payload = String(decoding: sent.notification.payload, as: UTF8.self)
        #expect(payload.hasPrefix(#"{"aps":{"alert":"New post","mutable-content":1,"content-available":1},"p":""#))
        #expect(payload.contains(#","x":"a/b/c","k":""#))
    }

    @Test("development selects the sandbox, production the production host")
    func environments() async throws {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        #expect(await responder.respond(to: relayTo("development")).status == 201)
        #expect(await responder.respond(to: relayTo("production")).status == 201)
        #expect(sender.all.map(\.environment) == [.sandbox, .production])
    }

    @Test("without RELAY_TO_TOPIC the route pushes to TOPIC, as /push does")
    func defaultTopic() async throws {
        let sender = FakeSender()
        let (responder, _) = make(sender, relayToTopic: nil)
        #expect(await responder.respond(to: relayTo()).status == 201)
        #expect(try #require(sender.all.first).notification.topic == "com.example.app")
    }

    @Test("an unknown environment is a 404 with a reason, a bad token a 400, a GET a 405; none reaches Apple")
    func refused() async {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        let staging = await responder.respond(to: relayTo("staging"))
        #expect(staging.status == 404)
        #expect(reason(staging)?.contains("/relay-to/{production|development}/{device_token}") == true)
        let badToken = await responder.respond(to: relayTo(token: "nothex"))
        #expect(badToken.status == 400)
        #expect(reason(badToken)?.contains("hex digits") == true)
        let get = await responder.respond(to: HTTPRequest(method: "GET", target: "/relay-to/production/\(Sample.token)"))
        #expect(get.status == 405)
        #expect(get.headers["Allow"] == "POST, OPTIONS")
        var unsupported = relayTo()
        unsupported.headers = HTTPHeaders([("Content-Encoding", "br")])
        #expect(await responder.respond(to: unsupported).status == 415)
        #expect(sender.all.isEmpty)
    }

    @Test("metrics and the log line label the route relay-to")
    func labelled() async throws {
        let (responder, sink) = make()
        _ = await responder.respond(to: relayTo())
        _ = await responder.respond(to: relayTo(token: "nothex"))
        let text = responder.metrics.registry.prometheusText()
        #expect(text.contains(#"relay_http_requests_total{route="relay-to",status="201"} 1"#))
        #expect(text.contains(#"relay_http_requests_total{route="relay-to",status="400"} 1"#))
        #expect(!text.contains(#"route="push""#))
        #expect(sink.records.count == 2)
        #expect(sink.records.allSatisfy { $0.metadata["route"] == .string("relay-to") })
    }

    @Test("a body too big for Apple goes out degraded with x kept, answered 201 and counted")
    func degraded() async throws {
        let sender = FakeSender()
        let (responder, _) = make(sender)
        var request = relayTo(extra: "/acct")
        request.body = [UInt8](repeating: 7, count: 4000)
        #expect(await responder.respond(to: request).status == 201)
        let payload = String(decoding: try #require(sender.all.first).notification.payload, as: UTF8.self)
        #expect(payload == #"{"aps":{"alert":"New post","mutable-content":1,"content-available":1},"x":"acct"}"#)
        #expect(responder.metrics.degradedPayloads.value == 1)
    }
}
