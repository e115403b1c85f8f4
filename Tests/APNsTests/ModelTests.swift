import Foundation
import Testing
@testable import APNsCore
import Basics
@testable import APNs
import OpenSSLSupport

let token64 = String(repeating: "ab", count: 32)

/// The APNsError a call threw, or nil when it did not throw one.
func refusal(_ body: () throws -> Void) -> APNsError? {
    do { try body(); return nil } catch let error as APNsError { return error } catch { return nil }
}

func alertPayload() throws -> APNsPayload {
    try APNsAlertPayload(title: "Hi", body: "There").build()
}

@Suite("Device tokens")
struct DeviceTokenTests {
    @Test("an upper-case token is sent in lower case")
    func lowerCase() throws {
        let token = try DeviceToken(String(repeating: "AB", count: 32))
        #expect(token.hex == token64)
    }

    @Test("a lower-case token is kept as given: its digits are not copied")
    func lowerCaseShared() throws {
        let text = String(repeating: "0a", count: 40)  // 80 bytes: a String with storage of its own
        let token = try DeviceToken(text)
        #expect(token.hex == text)
        let given = text.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
        let kept = token.hex.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) }
        #expect(given != nil && kept == given)
    }

    @Test("a mixed-case token is lowered digit by digit, digits and letters alike")
    func mixedCase() throws {
        let token = try DeviceToken(String(repeating: "0aF9", count: 16))
        #expect(token.hex == String(repeating: "0af9", count: 16))
    }

    @Test("tokens of 64 and 200 digits are accepted, 62 and 202 refused")
    func lengths() throws {
        _ = try DeviceToken(String(repeating: "0", count: 64))
        _ = try DeviceToken(String(repeating: "0", count: 200))
        #expect(throws: APNsError(code: .invalidNotification, message: "")) { try DeviceToken(String(repeating: "0", count: 62)) }
        #expect(throws: APNsError(code: .invalidNotification, message: "")) { try DeviceToken(String(repeating: "0", count: 202)) }
    }

    @Test("an odd number of digits is refused with a message saying so")
    func oddLength() {
        let error = refusal { _ = try DeviceToken(String(repeating: "0", count: 65)) }
        #expect(error?.message.contains("even") == true)
    }

    @Test("a non-hex character is refused")
    func nonHex() {
        #expect(throws: APNsError.self) { try DeviceToken(String(repeating: "0", count: 63) + "g") }
    }

    @Test("the cleaner turns an old app's description into plain lower-case hex")
    func cleaner() throws {
        #expect(DeviceToken.cleaned("<ABCD 1234>") == "abcd1234")
        let old = "<" + (0..<8).map { _ in "ABCDEF01" }.joined(separator: " ") + ">"
        let token = try DeviceToken(DeviceToken.cleaned(old))
        #expect(token.hex == String(repeating: "abcdef01", count: 8))
    }

    @Test("the fingerprint is 8 hex digits of SHA-256 and never contains the token")
    func fingerprint() throws {
        let token = try DeviceToken(token64)
        #expect(token.fingerprint.count == 8)
        #expect(!token64.contains(token.fingerprint))
        #expect(token.fingerprint == (try DeviceToken(token64.uppercased())).fingerprint)
        #expect(!"\(token)".contains(token64))
    }

    @Test("the fingerprint is the same whichever SHA-256 computes it, for tokens of 32 to 100 bytes")
    func fingerprintByOpenSSL() throws {
        for digits in [64, 110, 118, 200] {
            for _ in 0..<20 {
                let hex = String((0..<digits).map { _ in "0123456789abcdef".randomElement()! })
                let token = try DeviceToken(hex)
                #expect(token.fingerprint(sha256FirstWord: SHA256Digest.firstWord(of:)) == token.fingerprint, "\(digits) digits")
            }
        }
        // A digest that fails falls back to the module's own.
        let token = try DeviceToken(token64)
        #expect(token.fingerprint(sha256FirstWord: { _ in nil }) == token.fingerprint)
    }

    @Test("SHA-256 matches the FIPS test vectors")
    func sha256() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Hex.encode(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let long = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        #expect(Hex.encode(SHA256.hash(long)) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }
}

@Suite("Topics and push types")
struct TopicTests {
    @Test("each push type adds its topic suffix", arguments: [
        ("alert", "com.example.app"), ("background", "com.example.app"), ("mdm", "com.example.app"),
        ("voip", "com.example.app.voip"), ("complication", "com.example.app.complication"),
        ("fileprovider", "com.example.app.pushkit.fileprovider"), ("location", "com.example.app.location-query"),
        ("liveactivity", "com.example.app.push-type.liveactivity"), ("pushtotalk", "com.example.app.voip-ptt"),
        ("widgets", "com.example.app.push-type.widgets"),
    ])
    func suffix(type: String, topic: String) throws {
        let pushType = try #require(APNsPushType(rawValue: type))
        let n = try APNsNotification(token: DeviceToken(token64), topic: "com.example.app", payload: alertPayload(),
                                     pushType: pushType, priority: pushType == .background ? 5 : 10)
        #expect(n.topic == topic)
    }

    @Test("a topic that already ends with the suffix is left as it is")
    func suffixNotDoubled() throws {
        let n = try APNsNotification(token: DeviceToken(token64), topic: "com.example.app.voip", payload: alertPayload(), pushType: .voip)
        #expect(n.topic == "com.example.app.voip")
    }

    @Test("a payload with only content-available is guessed to be background at priority 5")
    func guessBackground() throws {
        let n = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: APNsBackgroundPayload(data: ["x": 1]).build())
        #expect(n.pushType == .background)
        #expect(n.priority == 5)
        let raw = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: APNsPayload(json: Array(#"{"aps":{"content-available":1}}"#.utf8)))
        #expect(raw.pushType == .background)
    }

    @Test("any other payload is guessed to be an alert at priority 10")
    func guessAlert() throws {
        let n = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: alertPayload())
        #expect(n.pushType == .alert)
        #expect(n.priority == 10)
        let raw = try APNsNotification(token: DeviceToken(token64), topic: "t",
                                       payload: APNsPayload(json: Array(#"{"aps":{"content-available":1,"sound":"x"}}"#.utf8)))
        #expect(raw.pushType == .alert)
    }

    @Test("an empty topic or one with spaces is refused")
    func badTopic() throws {
        #expect(throws: APNsError.self) { try APNsNotification(token: DeviceToken(token64), topic: "", payload: alertPayload()) }
        #expect(throws: APNsError.self) { try APNsNotification(token: DeviceToken(token64), topic: "com.x app", payload: alertPayload()) }
    }
}

@Suite("Priority, expiration, collapse id")
struct HeaderRuleTests {
    func make(_ pushType: APNsPushType? = nil, priority: Int? = nil, expiration: Int? = nil, collapseID: String? = nil,
              payload: APNsPayload? = nil) throws -> APNsNotification {
        try APNsNotification(token: DeviceToken(token64), topic: "com.example.app", payload: payload ?? alertPayload(),
                             pushType: pushType, priority: priority, expiration: expiration, collapseID: collapseID)
    }

    @Test("priorities 10, 5 and 1 are accepted, anything else refused")
    func priorities() throws {
        for p in [10, 5, 1] { #expect(try make(priority: p).priority == p) }
        for p in [0, 2, 11, -5] { #expect(throws: APNsError.self) { try make(priority: p) } }
    }

    @Test("a background push refuses priority 10")
    func backgroundRefuses10() throws {
        let error = refusal { _ = try make(.background, priority: 10, payload: APNsBackgroundPayload().build()) }
        #expect(error?.code == .invalidNotification)
        #expect(error?.message.contains("background") == true)
        #expect(try make(.background, priority: 1, payload: APNsBackgroundPayload().build()).priority == 1)
    }

    @Test("expiration 0 means try once and is sent; a negative one is refused")
    func expiration() throws {
        let n = try make(expiration: 0)
        #expect(n.headers(authorization: "j").contains { $0 == ("apns-expiration", "0") })
        #expect(throws: APNsError.self) { try make(expiration: -1) }
    }

    @Test("a collapse id of 1 to 64 bytes is accepted, 0 or 65 refused")
    func collapseID() throws {
        _ = try make(collapseID: "a")
        _ = try make(collapseID: String(repeating: "é", count: 32))  // 64 bytes
        #expect(throws: APNsError.self) { try make(collapseID: "") }
        #expect(throws: APNsError.self) { try make(collapseID: String(repeating: "a", count: 65)) }
        #expect(throws: APNsError.self) { try make(collapseID: String(repeating: "é", count: 33)) }
    }

    @Test("an APNsID reads a UUID's text in either case and spells it in lower case, with its bytes in order")
    func apnsIDText() throws {
        let id = try #require(APNsID("2B4E5B8A-0C1D-4E2F-9A3B-4C5D6E7F8091"))
        #expect(id.description == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        #expect("\(id)" == "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091")
        #expect(id.bytes == [0x2b, 0x4e, 0x5b, 0x8a, 0x0c, 0x1d, 0x4e, 0x2f, 0x9a, 0x3b, 0x4c, 0x5d, 0x6e, 0x7f, 0x80, 0x91])
        #expect(APNsID(bytes: id.bytes) == id)
        #expect(APNsID(id.description) == id)
        #expect(APNsID("2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091") == APNsID("2B4E5B8A-0C1D-4E2F-9A3B-4C5D6E7F8091"))
        #expect(APNsID("not-a-uuid") == nil)
        #expect(APNsID("2b4e5b8a0c1d4e2f9a3b4c5d6e7f8091") == nil)
        #expect(APNsID(bytes: [1, 2, 3]) == nil)
        // Foundation's spelling of the same bytes, for every random one.
        for _ in 0..<50 {
            let random = APNsID.random()
            let uuid = try #require(UUID(uuidString: random.description))
            #expect(uuid.uuidString.lowercased() == random.description)
            #expect(random.bytes[6] >> 4 == 4 && random.bytes[8] >> 6 == 0b10)
        }
    }

    @Test("the apns-id is a lower-case UUID, generated when not given")
    func apnsID() throws {
        let given = UUID()
        let id = try #require(APNsID(given.uuidString))
        let n = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: alertPayload(), apnsID: id)
        #expect(n.apnsID == given.uuidString.lowercased())
        let generated = try make()
        #expect(generated.apnsID == generated.apnsID.lowercased())
        #expect(UUID(uuidString: generated.apnsID) != nil)
        #expect(try make().apnsID != generated.apnsID)
    }

    @Test("headers hold exactly topic, push type, priority, id and authorization when nothing optional is set")
    func headersMinimal() throws {
        let n = try make(.voip)
        let headers = n.headers(authorization: "JWT")
        #expect(headers.map(\.0) == ["apns-topic", "apns-push-type", "apns-priority", "apns-id", "authorization"])
        #expect(headers.map(\.1) == ["com.example.app.voip", "voip", "10", n.apnsID, "bearer JWT"])
        #expect(n.path == "/3/device/" + token64)
    }

    @Test("a provider token carries its bearer value, sent as the authorization header as is")
    func bearerOnce() throws {
        struct FixedSigner: ProviderTokenSigner { func sign(_ message: [UInt8]) throws -> [UInt8] { Array(repeating: 7, count: 64) } }
        let token = try ProviderToken(keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: 1_700_000_000, signer: FixedSigner())
        #expect(token.authorization == "bearer " + token.jwt)
        let n = try make(.alert)
        #expect(n.headers(bearer: token).map(\.0) == n.headers(authorization: token.jwt).map(\.0))
        #expect(n.headers(bearer: token).map(\.1) == n.headers(authorization: token.jwt).map(\.1))
    }

    @Test("expiration and collapse id headers appear only when set")
    func headersOptional() throws {
        let n = try make(priority: 5, expiration: 1_700_000_000, collapseID: "thread-1")
        let headers = Dictionary(uniqueKeysWithValues: n.headers(authorization: "J"))
        #expect(headers["apns-expiration"] == "1700000000")
        #expect(headers["apns-collapse-id"] == "thread-1")
        #expect(headers["apns-priority"] == "5")
        #expect(headers.count == 7)
    }
}

@Suite("Payload size limits")
struct SizeTests {
    func payload(size: Int) throws -> APNsPayload {
        let base = try APNsAlertPayload(title: "t", data: ["p": ""]).build().bytes.count
        return try APNsAlertPayload(title: "t", data: ["p": .string(String(repeating: "x", count: size - base))]).build()
    }

    @Test("an alert payload of 4096 bytes passes and 4097 is refused with both sizes in the message")
    func alertLimit() throws {
        let exact = try payload(size: 4096)
        #expect(exact.bytes.count == 4096)
        _ = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: exact)
        let error = try #require(refusal { _ = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: payload(size: 4097)) })
        #expect(error.message.contains("4097"))
        #expect(error.message.contains("4096"))
    }

    @Test("a voip payload may be 5120 bytes but not 5121")
    func voipLimit() throws {
        _ = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: payload(size: 5120), pushType: .voip)
        let error = try #require(refusal {
            _ = try APNsNotification(token: DeviceToken(token64), topic: "t", payload: payload(size: 5121), pushType: .voip)
        })
        #expect(error.message.contains("5121"))
        #expect(error.message.contains("5120"))
    }
}

@Suite("Payload builders")
struct PayloadTests {
    @Test("an alert with title and body encodes aps first, keys in a fixed order")
    func simpleAlert() throws {
        let p = try APNsAlertPayload(title: "Hello", body: "World", data: ["z": 1, "a": "b"]).build()
        #expect(p.text == #"{"aps":{"alert":{"title":"Hello","body":"World"}},"a":"b","z":1}"#)
        #expect(!p.isBackgroundOnly)
    }

    @Test("every alert option is written under its Apple key")
    func allOptions() throws {
        let p = try APNsAlertPayload(
            title: "T", body: "B", subtitle: "S", titleLocKey: "TK", titleLocArgs: ["1"], locKey: "LK", locArgs: ["2", "3"],
            badge: 4, sound: "default", category: "cat", threadID: "th", mutableContent: true,
            interruptionLevel: .timeSensitive, relevanceScore: 0.5, targetContentID: "tc"
        ).build()
        #expect(p.text == #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B","title-loc-key":"TK","title-loc-args":["1"],"loc-key":"LK","loc-args":["2","3"]},"badge":4,"sound":"default","category":"cat","thread-id":"th","mutable-content":1,"interruption-level":"time-sensitive","relevance-score":0.5,"target-content-id":"tc"}}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(p.bytes)) as? [String: Any]
        #expect(parsed?["aps"] != nil)
    }

    @Test("the relay's payload: a loc-key alert with mutable content and its keys beside aps")
    func relayShape() throws {
        let p = try APNsAlertPayload(locKey: "apns-default-message", mutableContent: true,
                                     data: ["i": "7", "m": "bWVz", "e": "aesgcm"]).build()
        #expect(p.text == #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":"aesgcm","i":"7","m":"bWVz"}"#)
    }

    @Test("an alert with nothing to show is refused")
    func emptyAlert() {
        #expect(throws: APNsError.self) { try APNsAlertPayload().build() }
        #expect(throws: APNsError.self) { try APNsAlertPayload(badge: 1, sound: "default").build() }
    }

    @Test("an alert with only a title, a body, a subtitle or a loc-key is accepted")
    func halfAlert() throws {
        #expect(try APNsAlertPayload(title: "T").build().text == #"{"aps":{"alert":{"title":"T"}}}"#)
        #expect(try APNsAlertPayload(body: "B").build().text == #"{"aps":{"alert":{"body":"B"}}}"#)
        #expect(try APNsAlertPayload(subtitle: "S").build().text == #"{"aps":{"alert":{"subtitle":"S"}}}"#)
        #expect(try APNsAlertPayload(locKey: "K").build().text == #"{"aps":{"alert":{"loc-key":"K"}}}"#)
    }

    @Test("a sound is a name or the critical-sound dictionary")
    func sounds() throws {
        #expect(try APNsAlertPayload(title: "T", sound: "ping.aiff").build().text
            == #"{"aps":{"alert":{"title":"T"},"sound":"ping.aiff"}}"#)
        #expect(try APNsAlertPayload(title: "T", sound: .critical(name: "alarm.caf", volume: 0.5)).build().text
            == #"{"aps":{"alert":{"title":"T"},"sound":{"critical":1,"name":"alarm.caf","volume":0.5}}}"#)
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", sound: .critical(volume: 2)).build() }
    }

    @Test("an aps key inside data is refused, for alerts and background pushes")
    func apsInData() {
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", data: ["aps": 1]).build() }
        #expect(throws: APNsError.self) { try APNsBackgroundPayload(data: ["aps": [:]]).build() }
    }

    @Test("loc args without their loc key are refused")
    func argsWithoutKey() {
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", locArgs: ["a"]).build() }
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", titleLocArgs: ["a"]).build() }
    }

    @Test("a negative badge or a relevance score outside 0...1 is refused")
    func ranges() {
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", badge: -1).build() }
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", relevanceScore: 1.5).build() }
        #expect(throws: APNsError.self) { try APNsAlertPayload(title: "T", data: ["x": .double(.nan)]).build() }
    }

    @Test("a background payload is content-available 1 with keys beside aps")
    func background() throws {
        let p = try APNsBackgroundPayload(data: ["k": ["n": 1, "b": true, "l": [1, nil]]]).build()
        #expect(p.text == #"{"aps":{"content-available":1},"k":{"b":true,"l":[1,null],"n":1}}"#)
        #expect(p.isBackgroundOnly)
    }

    @Test("strings are escaped so the payload stays valid JSON")
    func escaping() throws {
        let p = try APNsAlertPayload(title: "a\"b\\c\nd\u{01}é").build()
        #expect(p.text == #"{"aps":{"alert":{"title":"a\"b\\c\nd\u0001é"}}}"#)
        let parsed = try JSONSerialization.jsonObject(with: Data(p.bytes)) as? [String: Any]
        let title = ((parsed?["aps"] as? [String: Any])?["alert"] as? [String: Any])?["title"] as? String
        #expect(title == "a\"b\\c\nd\u{01}é")
    }

    @Test("a raw payload must be a JSON object with aps")
    func rawPayload() {
        #expect(throws: APNsError.self) { try APNsPayload(json: []) }
        #expect(throws: APNsError.self) { try APNsPayload(json: Array("[1]".utf8)) }
        #expect(throws: APNsError.self) { try APNsPayload(json: Array(#"{"a":1}"#.utf8)) }
        #expect(throws: APNsError.self) { try APNsPayload(json: Array("{".utf8)) }
    }
}
