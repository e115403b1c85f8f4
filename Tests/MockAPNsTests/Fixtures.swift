import MockAPNs

// A tiny JWT maker and a fake "signature" bound to the message, so a tampered token fails
// verification exactly as a real ES256 key would make it fail.

enum Fixture {
    static let team = "TEAM123456"
    static let kid = "KEYID12345"
    static let topic = "com.example.app"
    static let now: Int64 = 1_750_000_000
    static let token = String(repeating: "ab", count: 32)
    static let apnsID = "6f1d3c1e-2b0a-4c5e-9f7a-0123456789ab"
    static let payload = Array(#"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"1"}"#.utf8)

    /// 64 bytes that depend on every byte of the message (FNV-1a with eight seeds).
    static func fakeSign(_ message: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for seed in 0..<8 as Range<UInt64> {
            var h: UInt64 = 0xcbf2_9ce4_8422_2325 ^ seed
            for b in message { h = (h ^ UInt64(b)) &* 0x100_0000_01b3 }
            for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: h >> (8 * UInt64(i)))) }
        }
        return out
    }

    static let verifier = MockKeyVerifier { message, signature in fakeSign(message) == signature }

    static func base64url(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var out = ""
        var i = 0
        while i < bytes.count {
            let chunk = Array(bytes[i..<min(i + 3, bytes.count)])
            let n = (UInt32(chunk[0]) << 16) | (UInt32(chunk.count > 1 ? chunk[1] : 0) << 8) | UInt32(chunk.count > 2 ? chunk[2] : 0)
            let chars = chunk.count + 1
            for j in 0..<chars { out.append(alphabet[Int((n >> UInt32(18 - 6 * j)) & 63)]) }
            i += 3
        }
        return out
    }

    /// A JWT from raw header and claims JSON texts, signed with the fake signer.
    static func jwt(header: String? = nil, claims: String? = nil, iat: Int64 = now) -> String {
        let h = base64url(Array((header ?? #"{"alg":"ES256","kid":"\#(kid)"}"#).utf8))
        let c = base64url(Array((claims ?? #"{"iss":"\#(team)","iat":\#(iat)}"#).utf8))
        let signature = fakeSign(Array("\(h).\(c)".utf8))
        return "\(h).\(c).\(base64url(signature))"
    }

    static func rules(
        sandbox: Bool = false,
        dropToOne: Bool = false,
        faults: MockFaults = .standard,
        requirePushType: Bool = false,
        strictPayload: Bool = false
    ) -> MockAPNsRules {
        MockAPNsRules(
            configuration: MockAPNsConfiguration(
                topics: [topic],
                teamID: team,
                keys: [kid: verifier],
                maxConcurrentStreams: 1000,
                dropToOneAfterRejection: dropToOne,
                sandbox: sandbox,
                faults: faults,
                requirePushType: requirePushType,
                strictPayload: strictPayload
            )
        )
    }

    static func defaultHeaders(jwt: String) -> [(name: String, value: String)] {
        [
            ("authorization", "bearer \(jwt)"),
            ("apns-topic", topic),
            ("apns-push-type", "alert"),
            ("apns-priority", "10"),
            ("apns-id", apnsID),
        ]
    }

    /// A valid request, with some headers replaced (a nil value removes the header).
    static func request(
        token: String = token,
        method: String = "POST",
        path: String? = nil,
        jwt: String = jwt(),
        set: [String: String?] = [:],
        extra: [(name: String, value: String)] = [],
        body: [UInt8] = payload,
        streamID: Int32 = 1
    ) -> MockRequestHead {
        let defaults = defaultHeaders(jwt: jwt)
        var headers: [(name: String, value: String)] = []
        for (name, value) in defaults {
            if let replacement = set[name] {
                if let replacement { headers.append((name, replacement)) }
            } else {
                headers.append((name, value))
            }
        }
        for (name, value) in set.sorted(by: { $0.key < $1.key }) where !defaults.contains(where: { $0.name == name }) {
            if let value { headers.append((name, value)) }
        }
        headers += extra
        return MockRequestHead(method: method, path: path ?? "/3/device/\(token)", headers: headers, body: body, streamID: streamID)
    }

    /// A valid JSON payload of exactly `size` bytes.
    static func payload(size: Int) -> [UInt8] {
        let head = Array(#"{"aps":{},"p":""#.utf8)
        let tail = Array(#""}"#.utf8)
        return head + [UInt8](repeating: UInt8(ascii: "x"), count: size - head.count - tail.count) + tail
    }
}

extension MockAPNsRules {
    /// Decides one request on a fresh connection.
    func decideFresh(_ request: MockRequestHead, now: Int64 = Fixture.now) -> MockDecision {
        var connection = MockConnectionState(connectionID: 1)
        return decide(request, connection: &connection, now: now)
    }
}
