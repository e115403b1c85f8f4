import Foundation
import Testing
import APNs
import HTTPServer
import Observability
import ObservabilityTestSupport
import Basics
@testable import Relay

/// `/{name}/push/…` and `/{name}/relay-to/…` against a fake APNs per app, without sockets.
@Suite("Relay responder: the apps of APPS_FILE")
struct AppRoutesTests {
    struct Setup {
        let responder: RelayResponder
        let main: FakeSender
        let beta: FakeSender
        let logs: InMemoryLogSink
    }

    func make(configured: Bool = true) -> Setup {
        let main = FakeSender(), beta = FakeSender(), logs = InMemoryLogSink()
        let apps = AppDirectory()
        if configured {
            apps.replace(with: [AppDirectory.App(name: "beta", settings: .init(topic: "org.example.app.beta", relayToTopic: "org.example.toot.beta"),
                                                 sender: beta)], configured: true)
        }
        let responder = RelayResponder(settings: .init(topic: "org.example.app"), sender: main, apps: apps,
                                       logger: Logger(label: "test", level: .debug, sink: logs))
        return Setup(responder: responder, main: main, beta: beta, logs: logs)
    }

    @Test("a named app's /push and /relay-to go to its client with its topics; the unprefixed routes stay the default app's")
    func routes() async throws {
        let s = make()
        #expect(await s.responder.respond(to: Sample.aesgcm(path: "/beta/push/\(Sample.token)/sub-1")).status == 201)
        #expect(await s.responder.respond(to: Sample.aesgcm(path: "/beta/relay-to/production/\(Sample.token)")).status == 201)
        #expect(await s.responder.respond(to: Sample.aesgcm()).status == 201)
        #expect(s.beta.all.map(\.notification.topic) == ["org.example.app.beta", "org.example.toot.beta"])
        #expect(s.main.all.map(\.notification.topic) == ["org.example.app"])
        let lines = s.logs.records.filter { $0.message == "push delivered" }
        #expect(lines.map { $0.metadata["app"] } == [.string("beta"), .string("beta"), nil])
        let page = String(decoding: s.responder.metrics.registry.prometheusText().utf8, as: UTF8.self)
        #expect(page.contains(#"relay_app_requests_total{app="beta",route="push",status="201"} 1"#))
        #expect(page.contains(#"relay_app_requests_total{app="beta",route="relay-to",status="201"} 1"#))
    }

    @Test("an app APPS_FILE does not name answers 502 (never a 4xx), logged as an error, counted in relay_unknown_app_pushes_total and not as a misconfiguration (an outsider can send it)")
    func unknownApp() async throws {
        let s = make()
        let response = await s.responder.respond(to: Sample.aesgcm(path: "/gone/push/\(Sample.token)/sub-1"))
        #expect(response.status == 502)
        let body = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect((body?["reason"] as? String)?.contains(#"no app named "gone" in APPS_FILE"#) == true)
        let line = try #require(s.logs.records.last)
        #expect(line.level == .error && line.metadata["app"] == .string("gone"))
        #expect(s.main.all.isEmpty && s.beta.all.isEmpty)
        // Counted apart from the misconfigurations, which page: anyone can send this, and the
        // name from the path is no label.
        let page = s.responder.metrics.registry.prometheusText()
        #expect(page.contains("relay_unknown_app_pushes_total 1"), "\(page)")
        #expect(!page.contains("relay_misconfiguration_total"), "\(page)")
        #expect(!page.contains(#""gone""#))
        // A GET there is still refused as a method, not as a missing app.
        #expect(await s.responder.respond(to: HTTPRequest(method: "GET", target: "/gone/push/\(Sample.token)/x")).status == 405)
        // A bad token under a known app is the sender's 400, as on the default routes.
        #expect(await s.responder.respond(to: Sample.aesgcm(path: "/beta/push/nothex/sub-1")).status == 400)
    }

    @Test("without APPS_FILE a push to an app is still the relay's misconfiguration (502): the file unset by mistake must not unsubscribe anyone; a path that is no push stays 404")
    func notConfigured() async {
        let s = make(configured: false)
        let response = await s.responder.respond(to: Sample.aesgcm(path: "/beta/push/\(Sample.token)/sub-1"))
        #expect(response.status == 502)
        #expect(String(decoding: response.body, as: UTF8.self).contains("APPS_FILE is not set"))
        for name in ["beta", "gamma"] { _ = await s.responder.respond(to: Sample.aesgcm(path: "/\(name)/push/\(Sample.token)/sub-1")) }
        let page = s.responder.metrics.registry.prometheusText()
        #expect(page.contains("relay_unknown_app_pushes_total 3") && !page.contains("relay_misconfiguration_total"), "\(page)")
        #expect(await s.responder.respond(to: Sample.aesgcm(path: "/wp-admin/push/x")).status == 404)
        #expect(s.main.all.isEmpty)
    }
}
