import Testing
@testable import MockAPNs

private func token(_ prefix: String) -> String {
    prefix + String(repeating: "0", count: 64 - prefix.count)
}

@Suite("scripted faults")
struct FaultTests {
    @Test("each rejecting prefix answers Apple's status and reason", arguments: [
        (MockFaults.Prefix.unregistered, 410, "Unregistered"),
        (MockFaults.Prefix.expiredToken, 410, "ExpiredToken"),
        (MockFaults.Prefix.badDeviceToken, 400, "BadDeviceToken"),
        (MockFaults.Prefix.deviceTokenNotForTopic, 400, "DeviceTokenNotForTopic"),
        (MockFaults.Prefix.tooManyRequests, 429, "TooManyRequests"),
        (MockFaults.Prefix.internalServerError, 500, "InternalServerError"),
        (MockFaults.Prefix.serviceUnavailable, 503, "ServiceUnavailable"),
        (MockFaults.Prefix.shutdown, 503, "Shutdown"),
    ])
    func rejecting(prefix: String, status: Int, reason: String) throws {
        let response = try #require(Fixture.rules().decideFresh(Fixture.request(token: token(prefix))).response)
        #expect(response.status == status)
        #expect(response.reason == reason)
        #expect(response.header("apns-id") == Fixture.apnsID)
    }

    @Test("a dead token's 410 carries timestamp in milliseconds")
    func timestamp() throws {
        let decision = Fixture.rules().decideFresh(Fixture.request(token: token("dead")), now: Fixture.now)
        let body = try #require(decision.response.flatMap { MockJSON.parse($0.body) })
        #expect(body["timestamp"]?.integerValue == Fixture.now * 1000)
        #expect(body["reason"]?.stringValue == "Unregistered")
    }

    @Test("errors other than 410 carry no timestamp")
    func noTimestamp() throws {
        let decision = Fixture.rules().decideFresh(Fixture.request(token: token("0bad")))
        let body = try #require(decision.response.flatMap { MockJSON.parse($0.body) })
        #expect(body["timestamp"] == nil)
    }

    @Test("the delay prefix answers 200 after a delay")
    func delayPrefix() {
        guard case .delay(let d, let r) = Fixture.rules().decideFresh(Fixture.request(token: token("de1a"))).action else {
            Issue.record("expected a delayed answer")
            return
        }
        #expect(d == .seconds(2))
        #expect(r.status == 200)
    }

    @Test("the never prefix is never answered and the refuse prefix is reset with REFUSED_STREAM")
    func neverAndRefuse() {
        let rules = Fixture.rules()
        guard case .neverAnswer = rules.decideFresh(Fixture.request(token: token("0ff0"))).action else {
            Issue.record("expected no answer")
            return
        }
        guard case .refuseStream = rules.decideFresh(Fixture.request(token: token("7e5e"))).action else {
            Issue.record("expected REFUSED_STREAM")
            return
        }
    }

    @Test("a fault token in a malformed request gets the ordinary error")
    func faultAfterChecks() throws {
        let response = try #require(Fixture.rules().decideFresh(Fixture.request(token: token("0ff0"), set: ["apns-topic": nil])).response)
        #expect(response.status == 400)
        #expect(response.reason == "MissingTopic")
    }

    @Test("faults can be scripted while running, longest prefix first")
    func scripted() throws {
        let rules = Fixture.rules(faults: .none)
        #expect(rules.decideFresh(Fixture.request(token: token("dead"))).response?.status == 200)
        rules.updateFaults {
            $0.byTokenPrefix["ab"] = .reject(status: 500, reason: "InternalServerError")
            $0.byTokenPrefix["abcd"] = .reject(status: 410, reason: "Unregistered")
        }
        #expect(rules.decideFresh(Fixture.request(token: token("abcd"))).response?.reason == "Unregistered")
        #expect(rules.decideFresh(Fixture.request(token: token("ab00"))).response?.reason == "InternalServerError")
        rules.faults = .none
        #expect(rules.decideFresh(Fixture.request(token: token("abcd"))).response?.status == 200)
    }

    @Test("a global delay postpones every answer and adds to a prefix delay")
    func globalDelay() {
        var faults = MockFaults.standard
        faults.globalDelay = .milliseconds(300)
        let rules = Fixture.rules(faults: faults)
        guard case .delay(let d, let r) = rules.decideFresh(Fixture.request()).action else {
            Issue.record("expected a delayed answer")
            return
        }
        #expect(d == .milliseconds(300))
        #expect(r.status == 200)
        guard case .delay(let d2, _) = rules.decideFresh(Fixture.request(token: token("de1a"))).action else {
            Issue.record("expected a delayed answer")
            return
        }
        #expect(d2 == .milliseconds(2300))
    }

    @Test("GOAWAY follows the Nth request on each connection")
    func goAway() {
        var faults = MockFaults.none
        faults.goAwayAfterRequests = 3
        let rules = Fixture.rules(faults: faults)
        var connection = MockConnectionState(connectionID: 1)
        let flags = (0..<3).map { _ in rules.decide(Fixture.request(), connection: &connection, now: Fixture.now).goAwayAfter }
        #expect(flags == [false, false, true])
        #expect(String(decoding: MockDecision.goAwayDebugData, as: UTF8.self) == #"{"reason":"Shutdown"}"#)
        var fresh = MockConnectionState(connectionID: 2)
        #expect(rules.decide(Fixture.request(), connection: &fresh, now: Fixture.now).goAwayAfter == false)
    }
}

@Suite("MAX_CONCURRENT_STREAMS")
struct StreamLimitTests {
    @Test("the configured limit is advertised after the first authenticated success, once")
    func raiseOnce() {
        let rules = Fixture.rules()
        var connection = MockConnectionState(connectionID: 1)
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        let refused = rules.decide(Fixture.request(set: ["authorization": nil]), connection: &connection, now: Fixture.now)
        #expect(refused.newMaxConcurrentStreams == nil)
        let first = rules.decide(Fixture.request(), connection: &connection, now: Fixture.now)
        #expect(first.newMaxConcurrentStreams == 1000)
        let second = rules.decide(Fixture.request(), connection: &connection, now: Fixture.now)
        #expect(second.newMaxConcurrentStreams == nil)
        // Without dropToOneAfterRejection a rejection changes nothing.
        let rejected = rules.decide(Fixture.request(token: token("dead")), connection: &connection, now: Fixture.now)
        #expect(rejected.newMaxConcurrentStreams == nil)
    }

    @Test("with dropToOneAfterRejection the limit drops to 1 after a rejection and returns after a success")
    func dropToOne() {
        let rules = Fixture.rules(dropToOne: true)
        var connection = MockConnectionState(connectionID: 1)
        #expect(rules.decide(Fixture.request(), connection: &connection, now: Fixture.now).newMaxConcurrentStreams == 1000)
        #expect(rules.decide(Fixture.request(token: token("0bad")), connection: &connection, now: Fixture.now).newMaxConcurrentStreams == 1)
        #expect(rules.decide(Fixture.request(set: ["apns-topic": nil]), connection: &connection, now: Fixture.now).newMaxConcurrentStreams == nil)
        #expect(connection.advertisedMaxConcurrentStreams == 1)
        #expect(rules.decide(Fixture.request(), connection: &connection, now: Fixture.now).newMaxConcurrentStreams == 1000)
        #expect(connection.advertisedMaxConcurrentStreams == 1000)
    }
}
