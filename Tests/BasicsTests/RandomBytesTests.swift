import Foundation
import Testing
import Basics

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

@Suite("The wall clock")
struct WallTimeTests {
    @Test("seconds round down, also before 1970; microseconds round to the nearest")
    func wholeUnits() {
        #expect(WallTime(nanosecondsSince1970: 1_700_000_000_999_999_999).unixSeconds == 1_700_000_000)
        #expect(WallTime(nanosecondsSince1970: -1).unixSeconds == -1)
        #expect(WallTime(nanosecondsSince1970: -1_000_000_000).unixSeconds == -1)
        #expect(WallTime(nanosecondsSince1970: 1_499).unixMicroseconds == 1)
        #expect(WallTime(nanosecondsSince1970: 1_500).unixMicroseconds == 2)
        #expect(WallTime(nanosecondsSince1970: -1_501).unixMicroseconds == -2)
    }

    @Test("a Double instant is kept to the microsecond, and reads back as the same Double")
    func fromDouble() {
        let instant = WallTime(timeIntervalSince1970: 1_709_210_096.789)
        #expect(instant.nanosecondsSince1970 == 1_709_210_096_789_000_000)
        #expect(instant.timeIntervalSince1970 == 1_709_210_096.789)
        #expect(WallTime(timeIntervalSince1970: -0.5).nanosecondsSince1970 == -500_000_000)
        #expect(WallTime(timeIntervalSince1970: 1).unixSeconds == 1)
        #expect(WallTime(timeIntervalSince1970: 1) < WallTime(timeIntervalSince1970: 1.000001))
    }

    @Test("now is Foundation's Date() to within a second")
    func nowIsRealTime() {
        let ours = WallTime.now.timeIntervalSince1970
        let foundation = Date().timeIntervalSince1970
        #expect(abs(ours - foundation) < 1)
    }
}
