import Foundation
import Testing
import MockAPNs
import PushStore
import TestWaits
@testable import Relay

/// Holding in Redis (`STORE_URL`): the relay over real sockets, a real redis-server of the
/// test's own, the emulator taken away and brought back.
@Suite("Holding in Redis", .serialized, .timeLimit(.minutes(2)))
struct HoldRedisEndToEndTests {
    @Test("Redis down at start: the relay starts, /health says store_ok false, a push Apple cannot take is 503; Redis up: held 201, then delivered")
    func redisDownAtStart() async throws {
        let redis = try RedisServer()
        defer { redis.remove() }
        redis.stop()
        let address = try RedisAddress.parse(redis.url()).get()
        try await RelayHarness.with(pushTimeout: .seconds(2), hold: HoldConfiguration(store: .redis(address))) { h in
            let health = try await TestHTTP.get(port: h.port, target: "/health")
            #expect(String(decoding: health.body, as: UTF8.self)
                    == #"{"status":"alive","held":0,"store":"\#(address.description)","store_ok":false}"#)
            // Live pushes still go: /ready is about Apple, and says the store's state.
            #expect(try await eventually { (try await TestHTTP.get(port: h.port, target: "/ready")).status == 200 })
            let ready = try await TestHTTP.get(port: h.port, target: "/ready")
            #expect(String(decoding: ready.body, as: UTF8.self) == #"{"status":"ready","store_ok":false}"#)
            h.apple.stop()
            let refused = try await HoldEndToEndTests.pushes(h, count: 1)
            // 503, or 504 when the push's deadline passed first (a loaded machine): never a 4xx.
            #expect(refused.count == 1 && refused.allSatisfy { [503, 504].contains($0.status) }, "\(refused.map(\.status))")
            var page = String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
            #expect(page.contains("relay_store_up 0"))
            // The put, and the delivery's first look at the store.
            #expect(page.contains(#"relay_store_errors_total{kind="unreachable"} "#) && !page.contains(#"relay_store_errors_total{kind="unreachable"} 0"#))

            // One line while the store cannot be read, not one a tick.
            try await Task.sleep(for: .seconds(3))
            #expect(h.logs.records.filter { $0.message == "held pushes cannot be read from the store" }.count == 1)
            try redis.start()
            #expect(try await eventually(within: .seconds(15)) {
                String(decoding: try await TestHTTP.get(port: h.port, target: "/health").body, as: UTF8.self).contains(#""store_ok":true"#)
            })
            #expect(try await eventually { h.logs.records.contains { $0.message == "held pushes can be read from the store again" } })
            let answers = try await HoldEndToEndTests.pushes(h, count: 20, first: 1)
            #expect(answers.allSatisfy { $0.status == 201 && $0.header("X-Relay-Held") == "true" }, "\(answers.map(\.status))")
            try h.apple.restart()
            #expect(try await eventually(within: .seconds(30)) { h.apple.records.filter { $0.status == 200 }.count >= 20 })
            #expect(h.apple.records.filter { $0.status == 200 }.count == 20)
            page = String(decoding: try await TestHTTP.get(port: h.port, target: "/metrics").body, as: UTF8.self)
            #expect(page.contains("relay_store_up 1"))
            #expect(page.contains(#"relay_store_call_seconds_count{call="put"}"#), "\(page)")
        }
    }
}
