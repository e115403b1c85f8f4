import Foundation
import Testing
import BuiltProducts

/// The shared libraries an ELF executable names (its DT_NEEDED entries), read from the file.
func neededLibraries(of url: URL) throws -> [String] {
    let bytes = [UInt8](try Data(contentsOf: url))
    func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    func u32(_ at: Int) -> Int { u16(at) | u16(at + 2) << 16 }
    func u64(_ at: Int) -> Int { u32(at) | u32(at + 4) << 32 }
    // ELF64, little-endian: the only kind the toolchain builds here.
    guard bytes.count > 64, bytes[0..<4].elementsEqual([0x7F, 0x45, 0x4C, 0x46]), bytes[4] == 2, bytes[5] == 1 else {
        throw CocoaError(.fileReadCorruptFile)
    }
    let sectionTable = u64(0x28), entrySize = u16(0x3A), count = u16(0x3C)
    var needed: [String] = []
    for i in 0..<count {
        let header = sectionTable + i * entrySize
        guard u32(header + 4) == 6 else { continue }  // SHT_DYNAMIC
        let offset = u64(header + 0x18), size = u64(header + 0x20), link = u32(header + 0x28)
        let strings = u64(sectionTable + link * entrySize + 0x18)
        var entry = offset
        while entry + 16 <= offset + size {
            let tag = u64(entry), value = u64(entry + 8)
            if tag == 0 { break }
            if tag == 1 {  // DT_NEEDED
                let start = strings + value
                let end = bytes[start...].firstIndex(of: 0) ?? bytes.endIndex
                needed.append(String(decoding: bytes[start..<end], as: UTF8.self))
            }
            entry += 16
        }
    }
    return needed
}

@Suite("Footprint")
struct FootprintTests {
    /// Foundation proper drags in FoundationInternationalization and ICU's data, most of a
    /// 75 MB static binary; FoundationEssentials is all the relay needs.
    @Test("the relay links FoundationEssentials, never Foundation or its ICU")
    func noFoundationICU() throws {
        let binary = try BuiltProducts.relayExecutable()
        let needed = try neededLibraries(of: binary)
        #expect(needed.contains { $0.hasPrefix("libswiftCore") }, "a dynamically linked debug build names the Swift runtime")
        let heavy = needed.filter { $0.hasPrefix("libFoundation.") || $0.hasPrefix("libFoundationInternationalization") || $0.contains("ICU") }
        #expect(heavy.isEmpty, "apns-relay links \(heavy); import FoundationEssentials instead of Foundation")
    }
}
