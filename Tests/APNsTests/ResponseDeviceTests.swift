import Testing
@testable import APNsCore
@testable import APNs

/// Apple's answers spell the token only when asked; a caller comparing or hashing answers
/// must not see the difference.
@Suite("APNsResponse device")
struct ResponseDeviceTests {
    @Test("a parsed answer names the device token and equals, hashes and prints like one built from it")
    func sameEitherWay() throws {
        let token = try DeviceToken(String(repeating: "c4", count: 32))
        let parsed = APNsResponse.parse(status: 200, headers: [("apns-id", "ABC")], body: [], device: token)
        let built = APNsResponse(ok: true, status: 200, apnsID: "abc", device: token.hex)
        #expect(parsed.device == token.hex)
        #expect(parsed == built)
        #expect(Set([parsed, built]).count == 1)
        #expect(parsed.json == built.json)
        #expect(!parsed.json.contains(token.fingerprint))
        let other = APNsResponse(ok: true, status: 200, apnsID: "abc", device: "00000000")
        #expect(parsed != other)
    }
}
