import Foundation
import Testing
import TestWaits
import MockAPNs
import OpenSSLSupport
import BuiltProducts
#if canImport(Glibc)
import Glibc
#endif

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

/// Whether the relay the suites run is the shipped build (make ship): one static binary, so it
/// names no shared library. The debug build links the shared Swift runtime.
private let runsShippedBuild: Bool = {
    guard let relay = BuiltProducts.relay, let needed = try? neededLibraries(of: relay) else { return false }
    return needed.isEmpty
}()

/// What the shipped binary costs: its file (symbols kept, so a crash names its functions) and an
/// idle relay's memory as `ps` shows it. make test's second pass runs these against make ship's
/// binary; make bench reports the same figures, and the peak under load. BinaryLinkTests keeps
/// Foundation out of every build.
@Suite("Footprint of the shipped binary", .serialized, .enabled(if: runsShippedBuild))
struct FootprintTests {
    @Test("the shipped binary is at most 25 MB with its symbol table")
    func binarySize() throws {
        let binary = try BuiltProducts.relayExecutable()
        let size = try #require(try FileManager.default.attributesOfItem(atPath: binary.path)[.size] as? Int)
        #expect(size <= 25_000_000, "apns-relay is \(size) bytes")
        let bytes = try Data(contentsOf: binary)
        // A symbol table names the relay's functions by their mangled names; stripped, it holds none.
        #expect(bytes.range(of: Data("$s9EventLoopAAC".utf8)) != nil, "apns-relay has no symbol table: a crash would print addresses, not names")
    }

    @Test("the shipped binary links no regex engine: String.contains(String) and its kin pull in _StringProcessing")
    func noStringProcessing() throws {
        let bytes = try Data(contentsOf: try BuiltProducts.relayExecutable())
        // The module's mangled names prefix every one of its symbols in the kept symbol table.
        #expect(bytes.range(of: Data("17_StringProcessing".utf8)) == nil,
                "apns-relay links _StringProcessing (2.2 MB of binary, 0.45 MiB resident when idle): search text with StringBytes.contains")
    }

    @Test("an idle serve, its APNs connections open, keeps at most 13 MiB resident (VmRSS, as ps shows it), of which at most 4 MiB its own (RssAnon)")
    func idleResidentMemory() async throws {
        let apple = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [RelayHarness.topic], teamID: RelayHarness.teamID,
                                                 keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
            certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("relay-footprint-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let ca = directory.appendingPathComponent("ca.pem")
        try RelayHarness.certificates.caPEM.write(to: ca, atomically: true, encoding: .utf8)
        let port = try freePort()

        let process = Process()
        process.executableURL = try BuiltProducts.relayExecutable()
        process.arguments = ["serve"]
        process.environment = [
            "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID,
            "APPLE_TEAM_ID": RelayHarness.teamID, "TOPIC": RelayHarness.topic, "APNS_HOST": "localhost:\(apple.port)",
            "APNS_CA_FILE": ca.path, "PORT": "\(port)", "BIND_ADDRESS": "127.0.0.1", "CONNECTION_POOL_SIZE": "2",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }

        let ready = try await eventually(within: .seconds(15)) {
            try #require(process.isRunning, "the relay exited (\(process.terminationStatus))")
            return (try? await TestHTTP.get(port: port, target: "/ready"))?.status == 200
        }
        try #require(ready, "the relay never became ready")
        let status = try String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        let kB = try #require(Int(line.dropFirst("VmRSS:".count).filter(\.isNumber)))
        // Most of it is the binary's code in the page cache (file pages, shared by every process
        // running it): 8.7 MB of its 10.3 MB of text is mapped once a relay is up. SQLite, linked
        // in for the store of held pushes, made the binary 1.9 MB larger and an idle relay's file
        // pages 0.6 MiB more (12.0 to 12.6 MiB) without running a line of it; what the relay
        // allocates itself stayed at 2.7 MiB.
        #expect(kB <= 13 * 1024, "an idle relay holds \(line)")
        let anonymous = try #require(status.split(separator: "\n").first { $0.hasPrefix("RssAnon:") })
        let anonymousKB = try #require(Int(anonymous.dropFirst("RssAnon:".count).filter(\.isNumber)))
        #expect(anonymousKB <= 4 * 1024, "an idle relay allocates \(anonymous)")
    }
}
