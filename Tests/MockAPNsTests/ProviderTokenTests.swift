import Testing
@testable import MockAPNs

private func status(_ decision: MockDecision) -> (Int?, String?) {
    (decision.response?.status, decision.response?.reason)
}

@Suite("provider token")
struct ProviderTokenTests {
    @Test("no authorization header answers 403 MissingProviderToken", arguments: [nil, "", "bearer", "bearer "] as [String?])
    func missing(value: String?) throws {
        let decision = Fixture.rules().decideFresh(Fixture.request(set: ["authorization": value]))
        #expect(status(decision) == (403, "MissingProviderToken"))
    }

    @Test("a JWT with a string iat is refused (403 InvalidProviderToken)")
    func stringIAT() {
        let jwt = Fixture.jwt(claims: #"{"iss":"\#(Fixture.team)","iat":"\#(Fixture.now)"}"#)
        #expect(status(Fixture.rules().decideFresh(Fixture.request(jwt: jwt))) == (403, "InvalidProviderToken"))
    }

    static let invalidTokens: [(String, String)] = {
        let good = Fixture.jwt()
        let parts = good.split(separator: ".").map(String.init)
        let otherClaims = Fixture.base64url(Array(#"{"iss":"\#(Fixture.team)","iat":\#(Fixture.now + 1)}"#.utf8))
        return [
            ("not a JWT", "abc"),
            ("two parts", parts[0] + "." + parts[1]),
            ("tampered claims keep the old signature", parts[0] + "." + otherClaims + "." + parts[2]),
            ("padded base64url", parts[0] + "." + parts[1] + "." + parts[2] + "="),
            ("a short signature", parts[0] + "." + parts[1] + "." + Fixture.base64url([UInt8](repeating: 1, count: 63))),
            ("alg HS256", Fixture.jwt(header: #"{"alg":"HS256","kid":"\#(Fixture.kid)"}"#)),
            ("unknown kid", Fixture.jwt(header: #"{"alg":"ES256","kid":"OTHERKEY00"}"#)),
            ("no kid", Fixture.jwt(header: #"{"alg":"ES256"}"#)),
            ("wrong team", Fixture.jwt(claims: #"{"iss":"OTHERTEAM0","iat":\#(Fixture.now)}"#)),
            ("no iat", Fixture.jwt(claims: #"{"iss":"\#(Fixture.team)"}"#)),
            ("fractional iat", Fixture.jwt(claims: #"{"iss":"\#(Fixture.team)","iat":\#(Fixture.now).5}"#)),
            ("iat with exponent", Fixture.jwt(claims: #"{"iss":"\#(Fixture.team)","iat":1.75e9}"#)),
            ("claims not an object", Fixture.jwt(claims: "[1]")),
            ("iat an hour in the future", Fixture.jwt(iat: Fixture.now + 3600)),
            ("basic scheme", "basic"),
        ]
    }()

    @Test("a malformed, foreign or badly signed JWT answers 403 InvalidProviderToken", arguments: invalidTokens)
    func invalid(label: String, jwt: String) {
        let request: MockRequestHead
        if jwt == "basic" {
            request = Fixture.request(set: ["authorization": "Basic dXNlcjpwYXNz"])
        } else {
            request = Fixture.request(jwt: jwt)
        }
        #expect(status(Fixture.rules().decideFresh(request)) == (403, "InvalidProviderToken"), "\(label)")
    }

    @Test("the bearer scheme is case-insensitive")
    func schemeCase() {
        let request = Fixture.request(set: ["authorization": "Bearer \(Fixture.jwt())"])
        #expect(status(Fixture.rules().decideFresh(request)) == (200, nil))
    }

    @Test("a token issued over an hour ago answers 403 ExpiredProviderToken; exactly an hour is accepted")
    func expired() {
        let rules = Fixture.rules()
        #expect(status(rules.decideFresh(Fixture.request(jwt: Fixture.jwt(iat: Fixture.now - 3601)))) == (403, "ExpiredProviderToken"))
        #expect(status(rules.decideFresh(Fixture.request(jwt: Fixture.jwt(iat: Fixture.now - 3600)))) == (200, nil))
    }

    @Test("a token accepted on a connection expires there after an hour")
    func expiresOnConnection() {
        let rules = Fixture.rules()
        var connection = MockConnectionState(connectionID: 1)
        let jwt = Fixture.jwt()
        #expect(status(rules.decide(Fixture.request(jwt: jwt), connection: &connection, now: Fixture.now)) == (200, nil))
        #expect(status(rules.decide(Fixture.request(jwt: jwt), connection: &connection, now: Fixture.now + 3000)) == (200, nil))
        #expect(status(rules.decide(Fixture.request(jwt: jwt), connection: &connection, now: Fixture.now + 3601)) == (403, "ExpiredProviderToken"))
    }

    @Test("a different token within 20 minutes on one connection answers 429 TooManyProviderTokenUpdates")
    func tooManyUpdates() {
        let rules = Fixture.rules()
        var connection = MockConnectionState(connectionID: 1)
        let first = Fixture.jwt(iat: Fixture.now)
        let second = Fixture.jwt(iat: Fixture.now + 600)
        #expect(status(rules.decide(Fixture.request(jwt: first), connection: &connection, now: Fixture.now)) == (200, nil))
        #expect(connection.authenticated)
        #expect(status(rules.decide(Fixture.request(jwt: second), connection: &connection, now: Fixture.now + 600)) == (429, "TooManyProviderTokenUpdates"))
        // The first token stays in force after the refused update.
        #expect(status(rules.decide(Fixture.request(jwt: first), connection: &connection, now: Fixture.now + 601)) == (200, nil))
        // 20 minutes after the first was accepted, the update is allowed.
        #expect(status(rules.decide(Fixture.request(jwt: second), connection: &connection, now: Fixture.now + 1200)) == (200, nil))
        #expect(connection.acceptedToken == second)
        // A second connection may use another token at once.
        var other = MockConnectionState(connectionID: 2)
        #expect(status(rules.decide(Fixture.request(jwt: first), connection: &other, now: Fixture.now + 1201)) == (200, nil))
    }

    @Test("the token check comes before the header checks")
    func tokenBeforeHeaders() {
        let decision = Fixture.rules().decideFresh(Fixture.request(set: ["authorization": nil, "apns-topic": nil]))
        #expect(status(decision) == (403, "MissingProviderToken"))
    }
}

@Suite("decoders")
struct DecoderTests {
    @Test("base64url decodes unpadded text and refuses padding, foreign characters and stray bits")
    func base64url() {
        #expect(MockBase64URL.decode(Array("aGk".utf8)) == Array("hi".utf8))
        #expect(MockBase64URL.decode(Array("-_8".utf8)) == [0xFB, 0xFF])
        #expect(MockBase64URL.decode(Array("".utf8)) == [])
        #expect(MockBase64URL.decode(Array("aGk=".utf8)) == nil)
        #expect(MockBase64URL.decode(Array("a+k".utf8)) == nil)
        #expect(MockBase64URL.decode(Array("aGl".utf8)) == nil)
        #expect(MockBase64URL.decode(Array("a".utf8)) == nil)
        let bytes = (0..<200).map { UInt8(truncatingIfNeeded: $0 &* 37) }
        #expect(MockBase64URL.decode(Array(Fixture.base64url(bytes).utf8)) == bytes)
    }

    @Test("the JSON reader keeps integers apart from strings and fractions")
    func json() throws {
        let value = try #require(MockJSON.parse(Array(#" {"a":[1,-2.5e3,true,null],"s":"x\"\u00e9\ud83d\ude00","n":-12} "#.utf8)))
        #expect(value["n"]?.integerValue == -12)
        #expect(value["s"]?.stringValue == "x\"é😀")
        #expect(value["a"] == .array([.number("1"), .number("-2.5e3"), .bool(true), .null]))
        #expect(MockJSON.number("1.0").integerValue == nil)
        #expect(MockJSON.string("1").integerValue == nil)
        for bad in ["", "{", #"{"a"}"#, "[1,]", "01", "1.", #""\x""#, "{} {}", "\"\u{01}\""] {
            #expect(MockJSON.parse(Array(bad.utf8)) == nil, "\(bad)")
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(MockJSON.parse(Array(deep.utf8)) == nil)
    }
}
