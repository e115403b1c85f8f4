import Foundation
import Testing
import Encoders

@Suite("Random ids")
struct RandomBytesTests {
    @Test("256 UUIDs cost one getrandom call, the 257th the next one")
    func refillsPerUUID() {
        let random = RandomBytes()
        for _ in 0..<256 { _ = UUIDText.random(using: random) }
        #expect(random.refillCount == 1)
        _ = UUIDText.random(using: random)
        #expect(random.refillCount == 2)
    }

    @Test("the UUIDs are version 4, RFC 4122 variant, and never repeat")
    func versionAndUniqueness() {
        let random = RandomBytes()
        let ids = (0..<2000).map { _ in UUIDText.random(using: random) }
        #expect(Set(ids.map(UUIDText.lowercase)).count == ids.count)
        for id in ids {
            let bytes = withUnsafeBytes(of: id) { Array($0) }
            #expect(bytes[6] >> 4 == 4)
            #expect(bytes[8] >> 6 == 2)
        }
    }

    @Test("request ids are lower-case UUIDs of the same pool")
    func requestIDsAreUUIDs() {
        let before = RandomBytes.shared.refillCount
        let id = UUIDText.randomLowercase()
        #expect(RandomBytes.shared.refillCount - before <= 1)
        #expect(id.count == 36)
        #expect(id == id.lowercased())
        #expect(UUID(uuidString: id) != nil)
    }
}
