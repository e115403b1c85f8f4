import Foundation
import Testing
@testable import APNsCore
@testable import APNs

/// What Foundation's `JSONDecoder` made of the same text through `APNsJSON`'s `Decodable`
/// conformance: the behaviour the library had before it read JSON itself.
private func foundationReading(_ text: [UInt8]) -> APNsJSON? {
    try? JSONDecoder().decode(APNsJSON.self, from: Data(text))
}

@Suite("APNsJSON.parse: the library's own JSON reader")
struct JSONParseTests {
    static let texts: [String] = [
        // Numbers: whole values that fit Int are ints however they are written.
        "1", "1.0", "1e2", "1E+2", "2.0e0", "1.5", "-0", "-0.0", "0.1", "1e-400", "4.9e-324", "1.7976931348623157e308",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
        "12345678901234567890", "100000000000000000000.0", "9223372036854775808.0", "-9223372036854775808.0",
        "-9223372036854775808e0", "1.5e1", "15e-1",
        // Numbers JSON does not have, or that overflow.
        "1e400", "-1e400", "01", "-", "1.", ".5", "+1", "NaN", "Infinity", "0x10",
        // Arrays and objects, trailing commas, duplicate keys, nesting.
        "[1,]", "{\"a\":1,}", "[1,2,]", "[,]", "{,}", "[1,,2]", "{\"a\":1,\"a\":2}", " \n[true , false,null] ", "[[[]]]",
        "{\"a\":{\"b\":[1,2.5,\"x\"]}}", "[1 2]", "{\"a\" 1}", "{1:2}", "{\"a\":}", "[", "]", "{", "{\"a\":1",
        // Strings and escapes.
        "\"\\u00e9\\ud83d\\ude00\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\/\"", "\"a\tb\"", "[\"\\x\"]", "\"\u{7F}\"", "'a'",
        "\"é🎺\"", "\"\\\"\\\\\\b\\f\\n\\r\\t\"", "\"\\u12\"", "\"unterminated",
        // Whole documents: garbage after, nothing at all, a byte order mark, comments.
        "[1] x", "", " ", "nul", "truex", "true", "null", "\u{FEFF}[1]", "/* c */ [1]",
        // Apple's error bodies.
        #"{"reason":"BadDeviceToken"}"#, #"{"reason":"Unregistered","timestamp":1700000000000}"#,
        #"{"timestamp":1.7e12}"#, #"{"timestamp":"x","reason":3}"#, #"{"reason":"Shutdown"}"#,
    ]

    @Test("every text reads as JSONDecoder read it: the same value, or refused alike")
    func sameAsFoundation() {
        for text in Self.texts {
            let bytes = Array(text.utf8)
            #expect(APNsJSON.parse(bytes) == foundationReading(bytes), "\(text.debugDescription)")
        }
    }

    @Test("nesting is refused past 512 levels, as JSONDecoder refused it")
    func depth() {
        for depth in [511, 512, 513, 600] {
            let text = Array((String(repeating: "[", count: depth) + String(repeating: "]", count: depth)).utf8)
            // (JSONDecoder took seconds for these in a debug build; it accepted 512 and refused 513.)
            #expect((APNsJSON.parse(text) != nil) == (depth <= 512), "depth \(depth)")
        }
    }

    @Test("bytes that are not UTF-8 are not JSON")
    func notUTF8() {
        #expect(APNsJSON.parse([0x22, 0xFF, 0x22]) == nil)
        #expect(APNsJSON.parse(Array("\"é\"".utf8)) == .string("é"))
    }

    @Test("a value reads back from the bytes the writer made of it")
    func roundTrip() throws {
        let value: APNsJSON = ["b": [1, 2.5, "x", nil, true], "a": ["nested": "é\n🎺"], "c": -7]
        var writer = JSONWriter()
        try writer.value(value)
        #expect(APNsJSON.parse(writer.bytes) == value)
    }

    @Test("object(parsing:) keeps its errors: not JSON, and not an object")
    func objectErrors() throws {
        #expect(throws: APNsError.self) { try APNsJSON.object(parsing: "{\"a\":") }
        do { _ = try APNsJSON.object(parsing: "[1]"); Issue.record("an array read as an object") } catch {
            #expect(error.message.contains("must be a JSON object"))
        }
        do { _ = try APNsJSON.object(parsing: "{nope}"); Issue.record("not JSON read as an object") } catch {
            #expect(error.message == "data is not valid JSON: {nope}")
        }
        #expect(try APNsJSON.object(parsing: #"{"k":1}"#) == ["k": 1])
    }

    @Test("Apple's error bodies give their reason and timestamp; a field of another type is dropped alone", arguments: [
        (#"{"reason":"BadDeviceToken"}"#, "BadDeviceToken", nil),
        (#"{"reason":"Unregistered","timestamp":1700000000000}"#, "Unregistered", 1_700_000_000_000),
        (#"{"reason":"ExpiredToken","timestamp":1.7e12}"#, "ExpiredToken", 1_700_000_000_000),
        (#"{"reason":"Unregistered","timestamp":1700000000000.9}"#, "Unregistered", 1_700_000_000_000),
        (#"{"timestamp":"1700000000000","reason":"Unregistered"}"#, "Unregistered", nil),
        (#"{"reason":3,"timestamp":5}"#, nil, 5),
        (#"{"reason":"TooManyRequests","timestamp":1e19}"#, "TooManyRequests", nil),
        (#" {"reason" : "Shutdown" , } "#, "Shutdown", nil),
        (#"{"reason":"BadTopic","reason":"BadPath"}"#, "BadTopic", nil),
        (#"["BadDeviceToken"]"#, nil, nil),
        ("not json", nil, nil),
        (#"{"reason":"BadDeviceToken""#, nil, nil),
        ("", nil, nil),
    ] as [(String, String?, Int64?)])
    func errorBodies(body: String, reason: String?, timestamp: Int64?) throws {
        let parsed = APNsResponse.ErrorBody(Array(body.utf8))
        #expect(parsed == APNsResponse.ErrorBody(reason: reason, timestamp: timestamp))
        let response = APNsResponse.parse(status: 410, headers: [], body: Array(body.utf8), device: try DeviceToken(token64))
        #expect(response.reason?.rawValue == reason)
        #expect(response.goneSinceMs == timestamp)
        #expect(response.removeToken)
    }
}
