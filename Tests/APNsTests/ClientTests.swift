import Testing
import Foundation
import OpenSSLSupport
import TestWaits
import MockAPNs
@testable import APNsCore
@testable import APNs

private func base64urlDecode(_ text: Substring) -> [UInt8]? {
    var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while s.count % 4 != 0 { s += "=" }
    return Data(base64Encoded: s).map { Array($0) }
}

@Suite("APNsClient against the emulator over TLS + HTTP/2", .serialized)
struct ClientTests {
    @Test("a push reaches Apple with exactly the right headers and a valid JWT")
    func headersAndJWT() async throws {
        let harness = try ClientHarness()
        let notification = Fixture.notification("", 1, expiration: 0, collapseID: "thread-1")
        let result = await harness.client.send(notification, environment: .production)
        let response = try result.get()
        #expect(response.ok)
        #expect(response.apnsID == notification.apnsID)

        let record = try #require(harness.records(for: notification.token).first)
        #expect(record.method == "POST")
        #expect(record.path == "/3/device/" + Fixture.token("", 1).hex)
        #expect(record.header("apns-topic") == Fixture.topic)
        #expect(record.header("apns-push-type") == "alert")
        #expect(record.header("apns-priority") == "10")
        #expect(record.header("apns-id") == notification.apnsID)
        #expect(record.header("apns-expiration") == "0")
        #expect(record.header("apns-collapse-id") == "thread-1")
        #expect(record.headers.filter { $0.name == "authorization" }.count == 1)

        let authorization = try #require(record.header("authorization"))
        #expect(authorization.hasPrefix("bearer "))
        let parts = authorization.dropFirst(7).split(separator: ".")
        try #require(parts.count == 3)
        let header = try #require(base64urlDecode(parts[0]))
        let claims = try #require(base64urlDecode(parts[1]))
        #expect(String(decoding: header, as: UTF8.self) == #"{"alg":"ES256","kid":"\#(Fixture.kid)"}"#)
        let claimsText = String(decoding: claims, as: UTF8.self)
        #expect(claimsText.hasPrefix(#"{"iss":"\#(Fixture.team)","iat":"#))
        #expect(!claimsText.contains(#""iat":""#))  // an integer, never a string
        let signature = try #require(base64urlDecode(parts[2]))
        #expect(signature.count == 64)
        #expect(Fixture.key.publicKey.verify(signature: signature, message: Array("\(parts[0]).\(parts[1])".utf8)))
        await harness.close()
    }

    @Test("10,000 pushes over 4 connections: none lost, none duplicated, never more than 4 connections")
    func tenThousand() async throws {
        let count = 10_000
        let harness = try ClientHarness(poolSize: 4, faults: .none, recordCapacity: 20_000) {
            $0.queueCapacity = count
            $0.pushTimeout = .seconds(60)  // a correctness test on a busy 2-core machine, not a speed test
        }
        let ledger = Ledger()
        var ids: [String] = []
        ids.reserveCapacity(count)
        for i in 0..<count {
            let notification = Fixture.notification("", i)
            ids.append(notification.apnsID)
            harness.client.send(notification, environment: .production, completion: ledger.completion(i))
        }
        #expect(try await ledger.wait(for: count, timeout: .seconds(60)))
        #expect(ledger.eachEndedOnce(count))
        let okCount = ledger.results.values.count { (try? $0.get().ok) == true }
        #expect(okCount == count)
        if okCount != count {
            var codes: [String: Int] = [:]
            for r in ledger.results.values { if case .failure(let e) = r { codes[e.message, default: 0] += 1 } }
            print("failures:", codes)
        }
        var seen: [String: Int] = [:]
        for record in harness.server.records where record.status == 200 { seen[record.header("apns-id") ?? "", default: 0] += 1 }
        #expect(seen.count == count)
        #expect(ids.allSatisfy { seen[$0] == 1 })
        #expect(harness.server.maxOpenConnections <= 4)
        #expect(harness.server.connectionCount == 4)
        await harness.close()
    }

    @Test("a live MAX_CONCURRENT_STREAMS of 1 is never exceeded")
    func oneStream() async throws {
        let harness = try ClientHarness(poolSize: 1, maxStreams: 1, faults: MockFaults(globalDelay: .milliseconds(5)))
        let ledger = Ledger()
        for i in 0..<40 {
            harness.client.send(Fixture.notification("", i), environment: .production, completion: ledger.completion(i))
        }
        #expect(try await ledger.wait(for: 40))
        #expect(ledger.eachEndedOnce(40))
        #expect(ledger.results.values.allSatisfy { (try? $0.get().ok) == true })
        #expect(harness.server.maxOpenStreamsPerConnection == 1)
        await harness.close()
    }

    @Test("GOAWAY mid-flight loses nothing and duplicates nothing")
    func goAwayMidFlight() async throws {
        // Twelve connections in a row, each replaced at most once per 2 × the base delay: give the pushes time.
        let harness = try ClientHarness(poolSize: 2, faults: MockFaults(globalDelay: .milliseconds(2), goAwayAfterRequests: 25)) {
            $0.pushTimeout = .seconds(25)
        }
        let ledger = Ledger()
        var ids: [String] = []
        for i in 0..<300 {
            let notification = Fixture.notification("", i)
            ids.append(notification.apnsID)
            harness.client.send(notification, environment: .production, completion: ledger.completion(i))
        }
        #expect(try await ledger.wait(for: 300, timeout: .seconds(30)))
        #expect(ledger.eachEndedOnce(300))
        #expect(ledger.results.values.allSatisfy { (try? $0.get().ok) == true }, "\(Set(ledger.results.values.compactMap { r -> String? in if case .failure(let e) = r { return e.description } else { return nil } }).prefix(3))")
        #expect(ids.allSatisfy { harness.delivered($0) == 1 })
        #expect(harness.server.connectionCount > 2)
        await harness.close()
    }

    @Test("connections that run out of stream ids are replaced, and pushes keep being delivered")
    func streamIDsRunOut() async throws {
        let harness = try ClientHarness(poolSize: 2)
        #expect(try await harness.waitUntilReady())
        // Each connection carries one stream until its first answer: warm both.
        for i in 0..<4 { #expect(try await harness.client.send(Fixture.notification("", i), environment: .production).get().ok) }
        // Three ids left on each: 2^31 - 5, 2^31 - 3 and 2^31 - 1.
        #expect(await harness.client.setNextStreamID(Int32.max - 4) == 2)
        let count = 40
        let ledger = Ledger()
        for i in 0..<count {
            harness.client.send(Fixture.notification("", 100 + i), environment: .production, completion: ledger.completion(i))
        }
        #expect(try await ledger.wait(for: count))
        #expect(ledger.eachEndedOnce(count))
        let failures = ledger.results.values.compactMap { result -> String? in
            if case .failure(let error) = result { return "\(error)" } else { return nil }
        }
        #expect(failures.isEmpty, "\(failures.prefix(3))")
        #expect(harness.server.connectionCount > 2)
        #expect(harness.client.isReady)
        await harness.close()
    }

    @Test("a dead token answers 410 with removeToken and the time it died")
    func deadToken() async throws {
        let harness = try ClientHarness()
        let response = try await harness.client.send(Fixture.notification(MockFaults.Prefix.unregistered, 1), environment: .production).get()
        #expect(response.status == 410)
        #expect(response.reason == .unregistered)
        #expect(response.removeToken)
        let gone = try #require(response.goneSinceMs)
        #expect(abs(gone - Int64(Date().timeIntervalSince1970) * 1000) < 60_000)
        await harness.close()
    }

    @Test("500, 503 and Shutdown are retried on another connection at most twice, then Apple's answer is the result", arguments: [
        (MockFaults.Prefix.internalServerError, 500, APNsReason.internalServerError),
        (MockFaults.Prefix.serviceUnavailable, 503, APNsReason.serviceUnavailable),
        (MockFaults.Prefix.shutdown, 503, APNsReason.shutdown),
    ])
    func serverErrorsRetried(prefix: String, status: Int, reason: APNsReason) async throws {
        let harness = try ClientHarness(poolSize: 2)
        // Both connections up, so "another connection" exists when the first answer fails.
        #expect(try await harness.waitUntilReady(connections: 2))
        let notification = Fixture.notification(prefix, 1)
        // The waits between attempts (0.5 s, then 1 s) are the policy's, RetryPolicyTests on its clock.
        let response = try await harness.client.send(notification, environment: .production).get()
        #expect(!response.ok && response.status == status && response.reason == reason)
        #expect(!response.removeToken)
        let records = harness.records(for: notification.token)
        #expect(records.count == 3)
        #expect(Set(records.map(\.connectionID)).count >= 2)
        await harness.close()
    }

    @Test("429 TooManyRequests is retried twice under the library's policy, then answered")
    func tooManyRequests() async throws {
        let harness = try ClientHarness()
        let notification = Fixture.notification(MockFaults.Prefix.tooManyRequests, 1)
        let response = try await harness.client.send(notification, environment: .production).get()
        #expect(response.status == 429 && response.reason == .tooManyRequests)
        #expect(!response.removeToken)
        #expect(harness.records(for: notification.token).count == 3)
        await harness.close()
    }

    @Test("429 TooManyRequests is answered at once under the relay's policy")
    func tooManyRequestsRelay() async throws {
        let harness = try ClientHarness { $0.retryPolicy = .relay }
        let notification = Fixture.notification(MockFaults.Prefix.tooManyRequests, 1)
        let response = try await harness.client.send(notification, environment: .production).get()
        #expect(response.status == 429)
        #expect(harness.records(for: notification.token).count == 1)
        await harness.close()
    }

    @Test("a pool of 4 over 2 loops sends one provider token on every connection, reconnects included, and Apple's count of new tokens stays at 1")
    func oneTokenForThePool() async throws {
        let harness = try ClientHarness(poolSize: 4, faults: .none)
        #expect(try await harness.waitUntilReady(connections: 4))
        for round in 0..<2 {
            let ledger = Ledger()
            for i in 0..<40 {
                harness.client.send(Fixture.notification("", round * 100 + i), environment: .production, completion: ledger.completion(i))
            }
            #expect(try await ledger.wait(for: 40))
            #expect(ledger.results.values.allSatisfy { (try? $0.get().ok) == true })
            // Every connection goes; their replacements must bring the same token, not new ones.
            if round == 0 {
                harness.server.dropAllConnections()
                #expect(try await eventually(within: .seconds(10)) { harness.server.connectionCount >= 8 })
                #expect(try await harness.waitUntilReady(connections: 4))
            }
        }
        let records = harness.server.records
        #expect(Set(records.map(\.connectionID)).count >= 8, "the pool did not reconnect")
        #expect(Set(records.compactMap { $0.header("authorization") }).count == 1)
        #expect(harness.server.rules.newTokensAccepted == [Fixture.kid: 1])
        #expect(harness.server.rules.tokenUpdatesRefused == 0)
        await harness.close()
    }

    @Test("ExpiredProviderToken: the shared token is signed again once and the push resent on its own connection")
    func expiredProviderToken() async throws {
        let harness = try ClientHarness(poolSize: 4)
        #expect(try await harness.client.send(Fixture.notification("", 1), environment: .production).get().ok)
        #expect(try await harness.waitUntilReady(connections: 4))
        // Apple's clock says the token is 61 minutes old; ours has moved on 17 minutes, so the
        // token is not yet due for renewal here and the one signed now is young enough there.
        harness.clocks.server.store(61 * 60, ordering: .relaxed)
        harness.clocks.client.store(17 * 60, ordering: .relaxed)
        let notification = Fixture.notification("", 2)
        let response = try await harness.client.send(notification, environment: .production).get()
        #expect(response.ok)
        let records = harness.records(for: notification.token)
        #expect(records.map(\.status) == [403, 200])
        #expect(records.first?.reason == "ExpiredProviderToken")
        #expect(records[0].connectionID == records[1].connectionID)
        #expect(records[0].header("authorization") != records[1].header("authorization"))
        #expect(harness.client.connectionStats().open == 4)
        #expect(harness.server.connectionCount == 4, "a connection was replaced because of its token")
        // The other connections take up the new token too: no second signing.
        for i in 3..<11 { #expect(try await harness.client.send(Fixture.notification("", i), environment: .production).get().ok) }
        #expect(harness.server.rules.newTokensAccepted == [Fixture.kid: 2])
        await harness.close()
    }

    @Test("a clock Apple disagrees with (every token expired): one signing, then Apple's answer, never a signing per push")
    func expiredForEveryToken() async throws {
        let harness = try ClientHarness(poolSize: 2)
        #expect(try await harness.client.send(Fixture.notification("", 1), environment: .production).get().ok)
        harness.clocks.server.store(61 * 60, ordering: .relaxed)
        for i in 2..<6 {
            let response = try await harness.client.send(Fixture.notification("", i), environment: .production).get()
            #expect(response.status == 403 && response.reason == .expiredProviderToken)
        }
        let tokens = Set(harness.server.records.compactMap { $0.header("authorization") })
        #expect(tokens.count == 2, "\(tokens.count) tokens signed")
        #expect(harness.server.rules.tokenUpdatesRefused == 0)
        await harness.close()
    }

    @Test("the emulator killed and restarted mid-run: every push answered as delivered reached it")
    func killAndRestart() async throws {
        let harness = try ClientHarness(poolSize: 2, faults: MockFaults(globalDelay: .milliseconds(5)))
        let count = 300
        let ledger = Ledger()
        for i in 0..<count {
            harness.client.send(Fixture.notification("", i), environment: .production, completion: ledger.completion(i))
        }
        _ = try await harness.waitForRecords(count: 60, timeout: .seconds(10))
        harness.server.stop()
        // Down until the client has seen it: no connection of its pool is ready.
        #expect(try await eventually(within: .seconds(5)) { !harness.client.isReady })
        try harness.server.restart()
        #expect(try await ledger.wait(for: count))
        #expect(ledger.eachEndedOnce(count))
        var delivered = 0
        for result in ledger.results.values {
            switch result {
            case .success(let response):
                #expect(response.ok)
                #expect(harness.delivered(response.apnsID) >= 1)
                delivered += 1
            case .failure(let error):
                #expect(error.code == .unavailable || error.code == .timeout)
            }
        }
        #expect(delivered > 0)
        await harness.close()
    }

    @Test("a never-answered stream ends with timeout at the deadline, and its slot is freed")
    func neverAnswered() async throws {
        let harness = try ClientHarness(poolSize: 1, maxStreams: 1) { $0.pushTimeout = .milliseconds(300) }
        let result = await harness.client.send(Fixture.notification(MockFaults.Prefix.neverAnswer, 1), environment: .production)
        #expect(throws: APNsError(code: .timeout, message: "")) { try result.get() }
        // One stream allowed: the next push only goes out if the cancelled stream gave its slot back.
        let next = await harness.client.send(Fixture.notification("", 2), environment: .production)
        #expect((try? next.get().ok) == true)
        await harness.close()
    }

    @Test("a full queue answers overloaded at once")
    func queueFull() async throws {
        let harness = try ClientHarness(poolSize: 1, maxStreams: 1, faults: MockFaults(globalDelay: .milliseconds(300))) {
            $0.queueCapacity = 3
        }
        #expect(try await harness.waitUntilReady())
        let ledger = Ledger()
        for i in 0..<4 {  // one on the wire, three queued
            harness.client.send(Fixture.notification("", i), environment: .production, completion: ledger.completion(i))
        }
        harness.client.send(Fixture.notification("", 4), environment: .production, completion: ledger.completion(4))
        // Answered at once, on the pool's loop (sent from outside the loops, it hops there): the
        // first answer of all, while the push on the wire still waits 300 ms for Apple.
        #expect(try await ledger.wait(for: 1))
        #expect(ledger.endOrder.first == 4)
        let refused = try #require(ledger.results[4])
        #expect(throws: APNsError(code: .overloaded, message: "")) { try refused.get() }
        #expect(try await ledger.wait(for: 5))
        #expect(ledger.eachEndedOnce(5))
        #expect((0..<4).allSatisfy { (try? ledger.results[$0]?.get().ok) == true })
        await harness.close()
    }

    @Test("shutdown fails queued pushes, lets the in-flight one finish, then refuses new ones")
    func shutdown() async throws {
        let harness = try ClientHarness(poolSize: 1, maxStreams: 1, faults: MockFaults(globalDelay: .milliseconds(300)))
        #expect(try await harness.waitUntilReady())
        let ledger = Ledger()
        for i in 0..<3 {
            harness.client.send(Fixture.notification("", i), environment: .production, completion: ledger.completion(i))
        }
        #expect(try await harness.waitForRecords(count: 1, timeout: .seconds(5)))
        await harness.client.shutdown()
        #expect(ledger.eachEndedOnce(3))
        let results = ledger.results
        #expect((try? results[0]?.get().ok) == true)
        for i in 1..<3 {
            #expect(throws: APNsError(code: .shuttingDown, message: "")) { try results[i]?.get() }
        }
        let late = await harness.client.send(Fixture.notification("", 9), environment: .sandbox)
        #expect(throws: APNsError(code: .shuttingDown, message: "")) { try late.get() }
        #expect(harness.client.connectionStats().open == 0)
        await harness.close()
    }

    @Test("the sandbox pool opens on the first sandbox push; sendMany answers in the caller's order, unsent ones included, and lists tokens to remove")
    func sandboxAndSendMany() async throws {
        let harness = try ClientHarness(poolSize: 1)
        #expect(try await harness.waitUntilReady())
        #expect(harness.server.connectionCount == 1)
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        let devices = [Fixture.token("", 1).hex, Fixture.token(MockFaults.Prefix.unregistered, 2).hex, "not-a-token",
                       Fixture.token(MockFaults.Prefix.badDeviceToken, 4).hex.uppercased(),
                       Fixture.token(MockFaults.Prefix.deviceTokenNotForTopic, 5).hex, Fixture.token("", 6).hex]
        let result = await harness.client.sendMany(payload, to: devices,
                                                   options: APNsPushOptions(topic: Fixture.topic, sandbox: true))
        #expect(result.results.map(\.device) == devices)
        #expect(result.results.map(\.status) == [200, 410, 0, 400, 400, 200])
        #expect(result.results[2].reason == .notSent && result.results[2].meaning.contains("invalidNotification"))
        #expect(result.sent == 2)
        #expect(result.failed == 4)
        #expect(result.remove == [devices[1], devices[3], devices[4]])
        #expect(harness.server.connectionCount == 2)
        #expect(result.json.hasPrefix(#"{"sent":2,"failed":4,"remove":["#))
        await harness.close()
    }
}
