import Foundation
import Synchronization
import Testing
import BuiltProducts
import PushStore
import TestWaits

/// kill -9 at any moment loses nothing that was acknowledged: `push-store-probe put` writes
/// "ack ID N" the moment push N's put is answered; the test kills it at a moment drawn from a
/// seeded generator (after a random number of acknowledgements, while 8 threads keep putting),
/// opens the file itself, and finds every acknowledged push there.
@Suite("a store killed with SIGKILL", .serialized)
struct CrashSafetyTests {
    static let rounds = 10

    @Test("every put answered before a kill -9 is in the file when it is opened again")
    func acknowledgedPutsSurviveSIGKILL() async throws {
        let probe = try #require(BuiltProducts.executable("push-store-probe"), "swift build --build-tests builds push-store-probe")
        let place = try SQLitePlace()
        defer { place.remove() }
        let seed = UInt64(ProcessInfo.processInfo.environment["STORE_CRASH_SEED"] ?? "") ?? 0x5eed_32
        var random = SplitMix64(seed: seed)
        var acknowledged: [HeldPushID: Int] = [:]
        for round in 0..<Self.rounds {
            let killAfter = Int(random.next() % 1_000) + 1
            let run = try ProbeRun(probe: probe, arguments: ["put", place.path, String(round * 1_000_000)])
            defer { run.forceStop() }
            let enough = try await eventually(within: .seconds(30)) {
                guard run.isRunning else { throw StoreTestFailure(description: "the probe exited: \(run.errorText)") }
                return run.acknowledgements().count >= killAfter
            }
            #expect(enough, "seed \(seed) round \(round): \(run.acknowledgements().count) of \(killAfter) acknowledgements")
            if round == 0 {
                // While the probe has the file, this process cannot open it.
                #expect(throws: PushStoreError(.inUse, "")) { try place.openSQLite(.generous) }
            }
            kill(run.pid, SIGKILL)
            try await run.waitForExit()
            let lines = run.completeLines()
            #expect(!lines.contains { $0.hasPrefix("fail") }, "seed \(seed) round \(round): \(lines.filter { $0.hasPrefix("fail") })")
            for (id, n) in run.acknowledgements() { acknowledged[id] = n }

            let store = try place.openSQLite(.generous)
            let held = try await store.take(max: 10_000_000, nowMs: 1_700_000_000_000, leaseMs: 1).value("reading back")
            store.close()
            let byID = Dictionary(uniqueKeysWithValues: held.map { ($0.id, $0.push) })
            let missing = acknowledged.filter { id, n in
                guard let push = byID[id] else { return true }
                return push.apnsID != "00000000-0000-4000-8000-\(String(format: "%012d", n))"
                    || push.arrivalMs != 1_700_000_000_000 + Int64(n) || push.payload.count != 300 + n % 200
            }
            #expect(missing.isEmpty, "seed \(seed) round \(round): \(missing.count) of \(acknowledged.count) acknowledged pushes missing or changed, first \(missing.keys.sorted().prefix(5))")
            #expect(held.count >= acknowledged.count)
        }
    }
}

/// One run of the probe: its stdout read as it comes on a thread of its own.
final class ProbeRun: @unchecked Sendable {
    // @unchecked: the Process is started in init and then only read or signalled; `output` is a Mutex.
    private let process = Process()
    private let output = Mutex<(text: String, ended: Bool)>(("", false))
    private let errors: Pipe

    init(probe: URL, arguments: [String]) throws {
        process.executableURL = probe
        process.arguments = arguments
        process.environment = [:]
        let stdout = Pipe()
        errors = Pipe()
        process.standardOutput = stdout
        process.standardError = errors
        try process.run()
        let reading = stdout.fileHandleForReading
        Thread { [self] in
            while true {
                let data = reading.availableData
                if data.isEmpty { break }
                output.withLock { $0.text += String(decoding: data, as: UTF8.self) }
            }
            output.withLock { $0.ended = true }
        }.start()
    }

    var isRunning: Bool { process.isRunning }
    /// The exit status, once `waitForExit` has returned.
    var exitStatus: Int32 { process.terminationStatus }
    var pid: Int32 { process.processIdentifier }
    var errorText: String { String(decoding: errors.fileHandleForReading.availableData, as: UTF8.self) }

    /// The lines written whole so far (a kill can cut the last one: it was never acknowledged).
    func completeLines() -> [Substring] {
        output.withLock { state in
            let text = state.text
            guard let lastNewline = text.lastIndex(of: "\n") else { return [] }
            return text[..<lastNewline].split(separator: "\n")
        }
    }

    /// "ack ID N" lines: the store's id and the probe's push number.
    func acknowledgements() -> [(HeldPushID, Int)] {
        completeLines().compactMap { line in
            let words = line.split(separator: " ")
            guard words.count == 3, words[0] == "ack", let id = UInt64(words[1]), let n = Int(words[2]) else { return nil }
            return (HeldPushID(low: id), n)
        }
    }

    /// Waits for the process to end and its stdout to be read to the end.
    func waitForExit() async throws {
        try await onOwnThread { self.process.waitUntilExit() }
        let drained = try await eventually { self.output.withLock { $0.ended } }
        if !drained { throw StoreTestFailure(description: "the probe's stdout never ended") }
    }

    /// For a `defer`: SIGKILL when still running, so the probe never outlives the test.
    func forceStop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// A small seeded generator (SplitMix64), so a failing round can be run again with its seed.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
