import Foundation
import Testing
import APNs
import MockAPNs
import TestWaits
import Basics
@testable import APNs
@testable import Relay

/// Apple's bad days, end to end: the relay against the emulator over TLS + HTTP/2.
@Suite("APNs pool endurance, end to end")
struct PoolEnduranceTests {
    @Test("connections that run out of stream ids are replaced: pushes keep answering 201 and /ready stays 200")
    func streamIDsRunOut() async throws {
        try await RelayHarness.with { h in
            #expect(try await h.push(token: token("b0")).status == 201)
            // Two ids left on each open connection: 2^31 - 3 and 2^31 - 1.
            #expect(await h.relay.client.setNextStreamID(Int32.max - 2) >= 1)
            for i in 0..<12 {
                let response = try await h.push(token: token(String(format: "c%03x", i)))
                #expect(response.status == 201, "push \(i): \(response.status) \(response.reason ?? "")")
            }
            #expect(h.apple.connectionCount > 2)
            #expect(try await eventually(within: .seconds(3)) { h.relay.isReady })
            #expect(try await TestHTTP.get(port: h.port, target: "/ready").status == 200)
        }
    }

    @Test("with two loops, each loop's pushes go out on its own connection: both carry load, every push 201")
    func eachLoopUsesItsConnection() async throws {
        try await RelayHarness.with(poolSize: 2, loops: 2) { h in
            // Ready means one connection is; a push on the other loop before its own is up crosses.
            #expect(try await eventually { h.relay.client.connectionStats().open == 2 }, "both loops' connections up")
            // The server deals HTTP connections round robin over the loops, one push each.
            var tokens: Set<String> = []
            for i in 0..<20 {
                let device = token(String(format: "d%03x", i))
                tokens.insert("/3/device/" + device)
                let response = try await h.push(token: device)
                #expect(response.status == 201, "push \(i): \(response.status) \(response.reason ?? "")")
            }
            let perConnection = streamsPerConnection(h.apple.records, paths: tokens)
            #expect(perConnection.count == 2, "\(perConnection)")
            #expect(perConnection.values.allSatisfy { $0 >= 5 }, "\(perConnection)")
            #expect(h.relay.metrics.crossLoopPushes.value == 0, "a push crossed loops with a connection on each")
        }
    }

    @Test("with fewer connections than loops, the pushes of the loop without one cross to the other, and are counted")
    func crossLoopPushesCounted() async throws {
        try await RelayHarness.with(poolSize: 1, loops: 2) { h in
            for i in 0..<20 {
                let response = try await h.push(token: token(String(format: "e%03x", i)))
                #expect(response.status == 201, "push \(i): \(response.status) \(response.reason ?? "")")
            }
            // The server deals HTTP connections round robin over the loops: about half crossed.
            #expect(h.relay.metrics.crossLoopPushes.value >= 5, "\(h.relay.metrics.crossLoopPushes.value)")
        }
    }

    @Test("ExpiredProviderToken with a pool of 4 and a 2 s push deadline: the shared token is signed again once and the push delivered, 201")
    func expiredTokenWithFourConnections() async throws {
        // Apple's rules on (new tokens per key at most every 20 minutes, a token lives an hour).
        let maxAge: Int64 = 3600
        try await RelayHarness.with(pushTimeout: .seconds(2), poolSize: 4, emulator: { $0.providerTokenMaxAge = maxAge }) { h in
            #expect(try await eventually(within: .seconds(5)) { h.relay.client.connectionStats().open == 4 })
            // The relay signed its token (with the real clock) before it was ready: in this second
            // or an earlier one. Once the real clock is past this second, a token signed again is
            // at least a second younger. Then Apple's clock jumps to an hour and a second after
            // this one: the first token is past its hour, the next one is not.
            let signedBy = WallTime.unixSecondsNow
            #expect(try await eventually(within: .seconds(3)) { WallTime.unixSecondsNow > signedBy })
            h.appleTime.fix(at: signedBy + maxAge + 1)
            let device = token("e1")
            let response = try await h.push(token: device)
            #expect(response.status == 201, "\(response.status) \(response.reason ?? "")")
            let records = h.apple.records.filter { $0.path == "/3/device/" + device }
            #expect(records.map(\.status) == [403, 200])
            #expect(records.first?.reason == "ExpiredProviderToken")
            #expect(records.first?.connectionID == records.last?.connectionID)
            #expect(h.apple.rules.tokenUpdatesRefused == 0)
            #expect(h.apple.connectionCount == 4, "a connection was replaced because of its token")
        }
    }

    @Test("a GOAWAY after every request: no push Apple never saw fails 'after N attempts', no connect without a GOAWAY before it, and every reconnect is counted")
    func goAwayStorm() async throws {
        let pool = 2
        let base = Duration.milliseconds(200)
        try await RelayHarness.with(
            pushTimeout: .seconds(3), poolSize: pool, emulator: { $0.faults.goAwayAfterRequests = 1 },
            tuneClient: { $0.backoffBase = base; $0.backoffMax = .seconds(2) }
        ) { h in
            // Both first connections up, so every connect from here on is a reconnect.
            #expect(try await eventually(within: .seconds(5)) {
                h.relay.client.connectionStats().open >= pool && h.apple.connectionCount >= pool
            })
            let connectsBefore = h.apple.connectionCount
            let requestsBefore = h.apple.records.count
            let reconnectsBefore = h.relay.metrics.reconnects.value
            let count = 60
            let answers = try await withThrowingTaskGroup(of: (String, TestHTTP.Response).self) { group in
                for i in 0..<count {
                    let device = token(String(format: "a%03x", i))
                    group.addTask { (device, try await h.push(token: device, id: "storm-\(i)")) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            let seen = Set(h.apple.records.map(\.path))

            #expect(answers.count == count)
            let unexpected = answers.filter { ![201, 503, 504].contains($0.1.status) }
            #expect(unexpected.isEmpty, "\(unexpected.prefix(3).map { "\($0.1.status) \($0.1.reason ?? "")" })")
            #expect(answers.allSatisfy { $0.1.status != 503 || $0.1.header("Retry-After") != nil })
            let countedButUnsent = answers.filter { device, answer in
                (answer.reason ?? "").contains("attempts") && !seen.contains("/3/device/" + device)
            }
            #expect(countedButUnsent.isEmpty,
                    "\(countedButUnsent.count) pushes never reached the emulator, yet: \(countedButUnsent.first?.1.reason ?? "")")
            #expect(answers.contains { $0.1.status == 201 })

            // A connection ends only by the GOAWAY that follows a request on it, and a slot
            // replaces only a connection that ended: no connect without a request before it.
            // (How far apart a slot's connects are is the pool's rule, PoolBackoffTests, on its clock.)
            let connects = h.apple.connectionCount - connectsBefore
            let requests = h.apple.records.count - requestsBefore
            #expect(connects <= requests, "\(connects) connects for \(requests) requests")

            // Every connect after the first ones is a reconnect, counted once (a pending one may land late).
            _ = try await eventually(within: .seconds(3)) {
                h.relay.metrics.reconnects.value - reconnectsBefore == h.apple.connectionCount - connectsBefore
            }
            let reconnects = h.relay.metrics.reconnects.value - reconnectsBefore
            #expect(reconnects == h.apple.connectionCount - connectsBefore, "\(reconnects) counted, \(h.apple.connectionCount - connectsBefore) seen")
            #expect(h.relay.metrics.reconnects.value > 0)
            #expect(h.logs.records.contains { $0.message == "APNs reconnecting" })
        }
    }

    @Test("when every APNs connection is failing and backs off past the deadline, a push is answered 503 at once and /ready is 503")
    func unreachableAnswersAtOnce() async throws {
        try await RelayHarness.with(tuneClient: { $0.backoffBase = .seconds(20); $0.backoffMax = .seconds(60) }) { h in
            h.apple.stop()
            #expect(try await eventually(within: .seconds(5)) { !h.relay.isReady })
            #expect(try await TestHTTP.get(port: h.port, target: "/ready").status == 503)

            // 503 at once, not the 504 of a push held until its deadline (6 s) with no connection.
            let response = try await h.push(token: token("ab"))
            #expect(response.status == 503, "\(response.status) \(response.reason ?? "")")
            #expect(response.header("Retry-After") != nil)
        }
    }
}

@Suite("APNS_MAX_STREAMS_PER_CONNECTION")
struct MaxStreamsConfigurationTests {
    private static let minimal: [String: String] = [
        "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "TEAM123456",
        "TOPIC": "com.example.app",
    ]

    @Test("defaults to a billion, takes 1 to 2^30, and reaches the APNs client")
    func maxStreams() throws {
        #expect(try RelayConfiguration.load(environment: Self.minimal).apnsMaxStreamsPerConnection == 1_000_000_000)
        var env = Self.minimal
        env["APNS_MAX_STREAMS_PER_CONNECTION"] = "5000"
        let configuration = try RelayConfiguration.load(environment: env)
        #expect(configuration.apnsMaxStreamsPerConnection == 5000)
        #expect(try RelayServer.clientConfiguration(configuration).maxStreamsPerConnection == 5000)
        for bad in ["0", "1073741825", "lots"] {
            env["APNS_MAX_STREAMS_PER_CONNECTION"] = bad
            #expect(throws: ConfigurationError(.invalid, "APNS_MAX_STREAMS_PER_CONNECTION", "")) {
                try RelayConfiguration.load(environment: env)
            }
        }
        #expect(RelayConfiguration.variableNames.contains("APNS_MAX_STREAMS_PER_CONNECTION"))
    }
}

/// How many of the requests for `paths` each emulator connection carried.
private func streamsPerConnection(_ records: [MockRecord], paths: Set<String>) -> [Int: Int] {
    var counts: [Int: Int] = [:]
    for record in records where paths.contains(record.path) { counts[record.connectionID, default: 0] += 1 }
    return counts
}
