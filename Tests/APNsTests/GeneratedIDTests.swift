import Foundation
import Testing
@testable import APNsCore
@testable import APNs

/// Apple's logs are searched by apns-id, so a generated one must be a well-formed, random
/// (version 4) UUID in lower case, never repeated.
@Suite("Generated apns-id")
struct GeneratedIDTests {
    @Test("a generated apns-id is a lower-case version-4 UUID, fresh every time")
    func randomV4() throws {
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        var seen = Set<String>()
        for _ in 0..<200 {
            let id = try APNsNotification(token: token, topic: "t", payload: payload).apnsID
            let utf8 = Array(id.utf8)
            #expect(utf8.count == 36)
            #expect(id == id.lowercased())
            #expect(UUID(uuidString: id) != nil)
            #expect(utf8[14] == UInt8(ascii: "4"))
            #expect([UInt8]("89ab".utf8).contains(utf8[19]))
            seen.insert(id)
        }
        #expect(seen.count == 200)
    }
}
