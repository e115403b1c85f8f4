import Testing
@testable import MockAPNs

/// The answer of a decision that responds (at once or after a delay).
private func answer(_ decision: MockDecision, sourceLocation: SourceLocation = #_sourceLocation) throws -> MockResponse {
    try #require(decision.response, sourceLocation: sourceLocation)
}

private func expectRejected(
    _ request: MockRequestHead,
    _ status: Int,
    _ reason: String,
    rules: MockAPNsRules = Fixture.rules(),
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let response = try answer(rules.decideFresh(request), sourceLocation: sourceLocation)
    #expect(response.status == status, sourceLocation: sourceLocation)
    #expect(response.reason == reason, sourceLocation: sourceLocation)
    #expect(response.header("content-type") == "application/json", sourceLocation: sourceLocation)
}

@Suite("a valid push")
struct ValidPushTests {
    @Test("a valid request answers 200 with the request's apns-id echoed")
    func validEchoesID() throws {
        let rules = Fixture.rules()
        let decision = rules.decideFresh(Fixture.request())
        let response = try answer(decision)
        #expect(response.status == 200)
        #expect(response.header("apns-id") == Fixture.apnsID)
        #expect(response.header("apns-unique-id") == nil)
        #expect(response.body.isEmpty)
        #expect(decision.goAwayAfter == false)
        guard case .respond = decision.action else {
            Issue.record("a valid push with no faults is answered at once")
            return
        }
    }

    @Test("without apns-id the answer carries a new lower-case UUID")
    func generatesID() throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-id": nil])))
        #expect(response.status == 200)
        let id = try #require(response.header("apns-id"))
        #expect(MockAPNsRules.isUUID(id))
        #expect(id == id.lowercased())
    }

    @Test("sandbox answers also carry apns-unique-id")
    func sandboxUniqueID() throws {
        let response = try answer(Fixture.rules(sandbox: true).decideFresh(Fixture.request()))
        #expect(response.status == 200)
        let unique = try #require(response.header("apns-unique-id"))
        #expect(MockAPNsRules.isUUID(unique))
    }

    @Test("an upper-case token is accepted, as Apple does; faults match it lower-cased")
    func upperCaseToken() throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(token: "DEAD" + String(repeating: "AB", count: 30))))
        #expect(response.status == 410)
        #expect(response.reason == "Unregistered")
    }

    @Test("every request is recorded with its connection, stream, status and reason")
    func records() throws {
        let rules = Fixture.rules()
        var connection = MockConnectionState(connectionID: 7)
        _ = rules.decide(Fixture.request(streamID: 1), connection: &connection, now: Fixture.now)
        _ = rules.decide(Fixture.request(set: ["apns-topic": nil], streamID: 3), connection: &connection, now: Fixture.now)
        _ = rules.decide(Fixture.request(token: "0ff0" + String(repeating: "00", count: 30), streamID: 5), connection: &connection, now: Fixture.now)
        let records = rules.records
        try #require(records.count == 3)
        #expect(records.map(\.connectionID) == [7, 7, 7])
        #expect(records.map(\.streamID) == [1, 3, 5])
        #expect(records.map(\.status) == [200, 400, nil])
        #expect(records.map(\.reason) == [nil, "MissingTopic", nil])
        #expect(records[0].apnsID == Fixture.apnsID)
        #expect(records[0].payload == Fixture.payload)
        #expect(records[0].header("apns-push-type") == "alert")
        #expect(records[0].path == "/3/device/\(Fixture.token)")
        #expect(connection.requestCount == 3)
        rules.clearRecords()
        #expect(rules.records.isEmpty)
    }

    @Test("records keep only the newest, up to the capacity")
    func recordCapacity() {
        let rules = MockAPNsRules(configuration: Fixture.rules().configuration, recordCapacity: 2)
        for stream in [1, 3, 5] as [Int32] { _ = rules.decideFresh(Fixture.request(streamID: stream)) }
        #expect(rules.records.map(\.streamID) == [3, 5])
    }
}

@Suite("path and method")
struct PathTests {
    @Test("a method other than POST answers 405 MethodNotAllowed")
    func method() throws {
        try expectRejected(Fixture.request(method: "GET"), 405, "MethodNotAllowed")
    }

    @Test("a path outside /3/device/ answers 404 BadPath", arguments: ["/", "/3/devices/abcd", "/2/device/\(Fixture.token)", "/3/device/\(Fixture.token)/x"])
    func badPath(path: String) throws {
        try expectRejected(Fixture.request(path: path), 404, "BadPath")
    }

    @Test("/3/device/ without a token answers 400 MissingDeviceToken")
    func missingToken() throws {
        try expectRejected(Fixture.request(path: "/3/device/"), 400, "MissingDeviceToken")
    }

    @Test("a token that is not hex, odd, too short or too long answers 400 BadDeviceToken", arguments: [
        String(repeating: "zz", count: 32),
        String(repeating: "ab", count: 32) + "a",
        String(repeating: "ab", count: 31),
        String(repeating: "ab", count: 101),
        String(repeating: "ab", count: 31) + "-a",
    ])
    func badToken(token: String) throws {
        try expectRejected(Fixture.request(token: token), 400, "BadDeviceToken")
    }

    @Test("the all-zero token, which no device has, answers 400 BadDeviceToken")
    func allZeroToken() throws {
        try expectRejected(Fixture.request(token: String(repeating: "0", count: 64)), 400, "BadDeviceToken")
    }

    @Test("the provider token is judged before the device token, as Apple does", arguments: [
        String(repeating: "0", count: 64), String(repeating: "zz", count: 32), "",
    ])
    func providerTokenFirst(token: String) throws {
        let unknownKey = Fixture.jwt(header: #"{"alg":"ES256","kid":"OTHERKEY00"}"#)
        try expectRejected(Fixture.request(token: token, jwt: unknownKey), 403, "InvalidProviderToken")
        let otherTeam = Fixture.jwt(claims: #"{"iss":"OTHERTEAM0","iat":\#(Fixture.now)}"#)
        try expectRejected(Fixture.request(token: token, jwt: otherTeam), 403, "InvalidProviderToken")
    }

    @Test("a key trusted at run time is accepted, a revoked one refused")
    func keysChangeAtRunTime() throws {
        let rules = Fixture.rules()
        let newKey = Fixture.jwt(header: #"{"alg":"ES256","kid":"NEWKEY6789"}"#)
        try expectRejected(Fixture.request(jwt: newKey), 403, "InvalidProviderToken", rules: rules)
        rules.keys["NEWKEY6789"] = Fixture.verifier
        rules.keys[Fixture.kid] = nil
        var state = MockConnectionState(connectionID: 1)
        #expect(rules.decide(Fixture.request(jwt: newKey), connection: &state, now: Fixture.now).response?.status == 200)
        try expectRejected(Fixture.request(), 403, "InvalidProviderToken", rules: rules)
    }
}

@Suite("headers")
struct HeaderTests {
    @Test("a repeated header answers 400 DuplicateHeaders")
    func duplicate() throws {
        try expectRejected(Fixture.request(extra: [("apns-priority", "10")]), 400, "DuplicateHeaders")
        try expectRejected(Fixture.request(extra: [("apns-topic", Fixture.topic)]), 400, "DuplicateHeaders")
    }

    @Test("no apns-topic answers 400 MissingTopic")
    func missingTopic() throws {
        try expectRejected(Fixture.request(set: ["apns-topic": nil]), 400, "MissingTopic")
    }

    @Test("an unknown base topic answers 400 TopicDisallowed", arguments: ["com.other.app", "com.example", "com.example.application"])
    func topicDisallowed(topic: String) throws {
        try expectRejected(Fixture.request(set: ["apns-topic": topic]), 400, "TopicDisallowed")
    }

    @Test("a topic suffix that does not match the push type answers 400 BadTopic", arguments: [
        ("voip", "com.example.app"),
        ("alert", "com.example.app.voip"),
        ("liveactivity", "com.example.app.voip"),
        ("pushtotalk", "com.example.app.voip"),
        ("widgets", "com.example.app.push-type.liveactivity"),
    ])
    func badTopic(pushType: String, topic: String) throws {
        try expectRejected(Fixture.request(set: ["apns-push-type": pushType, "apns-topic": topic, "apns-priority": "5"]), 400, "BadTopic")
    }

    @Test("each push type with the suffix it demands is accepted", arguments: MockAPNsRules.topicSuffix.sorted { $0.key < $1.key })
    func everyPushType(pushType: String, suffix: String) throws {
        let request = Fixture.request(set: ["apns-push-type": pushType, "apns-topic": Fixture.topic + suffix, "apns-priority": "5"])
        let response = try answer(Fixture.rules().decideFresh(request))
        #expect(response.status == 200, "\(pushType) → \(Fixture.topic + suffix): \(response.reason ?? "")")
    }

    @Test("an unknown push type answers 400 InvalidPushType", arguments: ["Alert", "notification", ""])
    func invalidPushType(pushType: String) throws {
        try expectRejected(Fixture.request(set: ["apns-push-type": pushType]), 400, "InvalidPushType")
    }

    @Test("a request without apns-push-type is an alert, as Apple takes it on iOS")
    func missingPushTypeIsAlert() throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-push-type": nil])))
        #expect(response.status == 200, "\(response.reason ?? "")")
        // An alert's topic is the bare bundle id: a suffixed one is still refused.
        try expectRejected(Fixture.request(set: ["apns-push-type": nil, "apns-topic": Fixture.topic + ".voip"]), 400, "BadTopic")
    }

    @Test("with requirePushType on, a missing push type answers 400 InvalidPushType")
    func requiredPushType() throws {
        try expectRejected(Fixture.request(set: ["apns-push-type": nil]), 400, "InvalidPushType",
                           rules: Fixture.rules(requirePushType: true))
    }

    @Test("a priority other than 1, 5 or 10 answers 400 BadPriority", arguments: ["0", "7", "high", "", "010"])
    func badPriority(priority: String) throws {
        try expectRejected(Fixture.request(set: ["apns-priority": priority]), 400, "BadPriority")
    }

    @Test("background with priority 10 answers 400 BadPriority; with 5 it is accepted")
    func backgroundPriority() throws {
        try expectRejected(Fixture.request(set: ["apns-push-type": "background", "apns-priority": "10"]), 400, "BadPriority")
        let ok = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-push-type": "background", "apns-priority": "5"])))
        #expect(ok.status == 200)
    }

    @Test("priorities 1, 5 and 10 and no priority are accepted for alerts", arguments: ["1", "5", "10", nil] as [String?])
    func goodPriority(priority: String?) throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-priority": priority])))
        #expect(response.status == 200)
    }

    @Test("a non-integer expiration answers 400 BadExpirationDate", arguments: ["soon", "", "1.5", "-1", "99999999999999999999"])
    func badExpiration(expiration: String) throws {
        try expectRejected(Fixture.request(set: ["apns-expiration": expiration]), 400, "BadExpirationDate")
    }

    @Test("an integer expiration, 0 included, is accepted", arguments: ["0", "1750003600"])
    func goodExpiration(expiration: String) throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-expiration": expiration])))
        #expect(response.status == 200)
    }

    @Test("an apns-id that is not a UUID answers 400 BadMessageId", arguments: [
        "not-a-uuid", "6f1d3c1e2b0a4c5e9f7a0123456789ab", "6f1d3c1e-2b0a-4c5e-9f7a-0123456789ag", "{6f1d3c1e-2b0a-4c5e-9f7a-0123456789a}",
    ])
    func badMessageID(id: String) throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-id": id])))
        #expect(response.status == 400)
        #expect(response.reason == "BadMessageId")
        #expect(response.header("apns-id") != id)
    }

    @Test("a collapse id over 64 bytes answers 400 BadCollapseId; 64 bytes are accepted")
    func collapseID() throws {
        try expectRejected(Fixture.request(set: ["apns-collapse-id": String(repeating: "c", count: 65)]), 400, "BadCollapseId")
        // 32 two-byte characters: 64 bytes, accepted; one more byte is too many.
        try expectRejected(Fixture.request(set: ["apns-collapse-id": String(repeating: "é", count: 32) + "c"]), 400, "BadCollapseId")
        let ok = try answer(Fixture.rules().decideFresh(Fixture.request(set: ["apns-collapse-id": String(repeating: "é", count: 32)])))
        #expect(ok.status == 200)
    }
}

@Suite("payload")
struct PayloadTests {
    @Test("an empty body answers 400 PayloadEmpty")
    func empty() throws {
        try expectRejected(Fixture.request(body: []), 400, "PayloadEmpty")
    }

    @Test("a body over 4096 bytes answers 413 PayloadTooLarge; 4096 are accepted")
    func tooLarge() throws {
        try expectRejected(Fixture.request(body: Fixture.payload(size: 4097)), 413, "PayloadTooLarge")
        let ok = try answer(Fixture.rules().decideFresh(Fixture.request(body: Fixture.payload(size: 4096))))
        #expect(ok.status == 200)
    }

    @Test("voip allows 5120 bytes, not 5121")
    func voipLimit() throws {
        let voip: [String: String?] = ["apns-push-type": "voip", "apns-topic": Fixture.topic + ".voip"]
        let ok = try answer(Fixture.rules().decideFresh(Fixture.request(set: voip, body: Fixture.payload(size: 5120))))
        #expect(ok.status == 200)
        try expectRejected(Fixture.request(set: voip, body: Fixture.payload(size: 5121)), 413, "PayloadTooLarge")
    }

    @Test("with strictPayload on, a body that is not a JSON object with an aps object answers 400 BadPayload", arguments: [
        #"[{"aps":{}}]"#, #"{"alert":"hi"}"#, #"{"aps":"hi"}"#, #"{"aps":{}"#, "not json", #"{"aps":{}} x"#, "{}",
    ])
    func notAnAPSObject(body: String) throws {
        try expectRejected(Fixture.request(body: Array(body.utf8)), 400, MockAPNsRules.badPayloadReason,
                           rules: Fixture.rules(strictPayload: true))
    }

    @Test("by default any non-empty body within the limit is accepted, {} included, as Apple does",
          arguments: ["{}", #"{"alert":"hi"}"#, #"{"aps":"hi"}"#])
    func applePayload(body: String) throws {
        let response = try answer(Fixture.rules().decideFresh(Fixture.request(body: Array(body.utf8))))
        #expect(response.status == 200, "\(body): \(response.reason ?? "")")
    }
}
