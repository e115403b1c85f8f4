import Testing
@testable import APNs

/// Apple's answers hash the token only when asked; a caller comparing or hashing answers
/// must not see the difference.
@Suite("APNsResponse device fingerprint")
struct ResponseDeviceTests {
    @Test("a parsed answer equals, hashes and prints like one built from the fingerprint")
    func sameEitherWay() throws {
        let token = try DeviceToken(String(repeating: "c4", count: 32))
        let parsed = APNsResponse.parse(status: 200, headers: [("apns-id", "ABC")], body: [], device: token)
        let built = APNsResponse(ok: true, status: 200, apnsID: "abc", device: token.fingerprint)
        #expect(parsed.device == token.fingerprint)
        #expect(parsed == built)
        #expect(Set([parsed, built]).count == 1)
        #expect(parsed.json == built.json)
        #expect(!parsed.json.contains(token.hex))
        let other = APNsResponse(ok: true, status: 200, apnsID: "abc", device: "00000000")
        #expect(parsed != other)
    }
}
