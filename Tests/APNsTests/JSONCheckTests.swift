import Foundation
import Testing
@testable import APNsCore
@testable import APNs

/// The payload check replaced `JSONSerialization` on the hot path; it must accept and refuse
/// exactly what `JSONSerialization` did, or a payload Apple would refuse could cost a stream.
@Suite("Payload JSON check")
struct JSONCheckTests {
    /// What `APNsPayload(json:)` decided when it parsed with `JSONSerialization`.
    static func reference(_ bytes: [UInt8]) -> JSONCheck.Outcome {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)) else { return .notJSON }
        guard let top = object as? [String: Any] else { return .notObject }
        guard let aps = top["aps"] as? [String: Any] else { return .noAPSObject }
        return .valid(backgroundOnly: aps.count == 1 && aps["content-available"] != nil)
    }

    static let samples: [String] = [
        #"{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"i":"1","m":"AAEC","e":"aes128gcm"}"#,
        #"{"aps":{"content-available":1}}"#,
        #"{"aps":{"content-available":1,"sound":"x"}}"#,
        #"{"aps":{"content-available":null}}"#,
        #"{"aps":{"content-available":1,"content-available":2}}"#,
        #"{"aps":{}}"#,
        #"{"aps":[]}"#,
        #"{"aps":1}"#,
        #"{"aps":{"a":1},"aps":2}"#,
        #"{"aps":2,"aps":{"a":1}}"#,
        #"{"\u0061ps":{"content-\u0061vailable":1}}"#,
        #"{"a\"ps":{}}"#,
        #" { "aps" : { "alert" : "hi" } } "#,
        "{\"aps\":{\"alert\":\"caf\u{e9}\"}}",
        #"{"aps":{"alert":"\ud83d\ude00"}}"#,
        #"{"aps":{"alert":"\ud83d"}}"#,
        #"{"aps":{"alert":"\ude00"}}"#,
        #"{"aps":{"alert":"\x"}}"#,
        #"{"aps":{"alert":"a\/b\b\f\n\r\t"}}"#,
        #"{"aps":{"n":[1,-2,3.5,1e3,-0.5E-2,0,true,false,null,{}]}}"#,
        #"{"aps":{"n":01}}"#,
        #"{"aps":{"n":1.}}"#,
        #"{"aps":{"n":-}}"#,
        #"{"aps":{"n":.5}}"#,
        #"{"aps":{"n":1e}}"#,
        #"{"aps":{"n":+1}}"#,
        #"{"aps":{"a":1,}}"#,
        #"{"aps":{"a":1}}x"#,
        #"{"aps":{"a":tru}}"#,
        #"{"aps":{"a" 1}}"#,
        #"{"aps":{1:1}}"#,
        #"{"aps":{"a":[1,]}}"#,
        #"{"aps":{"a":[1,,]}}"#,
        #"{"aps":{"a":[,]}}"#,
        #"{"aps":{,}}"#,
        #"{"aps":{"content-available":1,},}"#,
        #"{"aps":{"a":1,,"b":2}}"#,
        "[1,]",
        "{\"aps\":{\"a\":\"\u{1}\"}}",
        #"{}"#, "[1]", "[]", "1", "\"aps\"", "null", "{", "", " ",
        #"{"aps":{"alert":"hi"}"#,
        String(repeating: "[", count: 600) + String(repeating: "]", count: 600),
        #"{"aps":{"a":"#  + String(repeating: "[", count: 600) + String(repeating: "]", count: 600) + "}}",
    ]

    @Test("agrees with JSONSerialization on valid and broken payloads")
    func agreesOnSamples() {
        for sample in Self.samples {
            let bytes = Array(sample.utf8)
            #expect(JSONCheck.check(bytes) == Self.reference(bytes), "\(sample.prefix(80))")
        }
    }

    @Test("refuses invalid UTF-8 as JSONSerialization does")
    func invalidUTF8() {
        let bytes: [UInt8] = Array(#"{"aps":{"alert":""#.utf8) + [0xC3, 0x28] + Array(#""}}"#.utf8)
        #expect(JSONCheck.check(bytes) == Self.reference(bytes))
        #expect(JSONCheck.check(bytes) == .notJSON)
    }

    @Test("agrees with JSONSerialization on every one-byte mutation of a relay payload")
    func agreesOnMutations() {
        let base = Array(#"{"aps":{"alert":{"loc-key":"k"},"mutable-content":1},"i":"7","m":"AB==","s":"x","e":"aesgcm"}"#.utf8)
        let replacements: [UInt8] = Array(#"{}[]",:\ 0-.eatu"#.utf8)
        var disagreements: [String] = []
        for index in base.indices {
            for byte in replacements where byte != base[index] {
                var mutated = base
                mutated[index] = byte
                if JSONCheck.check(mutated) != Self.reference(mutated) {
                    disagreements.append(String(decoding: mutated, as: UTF8.self))
                }
            }
            var shorter = base
            shorter.remove(at: index)
            if JSONCheck.check(shorter) != Self.reference(shorter) {
                disagreements.append(String(decoding: shorter, as: UTF8.self))
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }
}
