import Foundation
import Synchronization
import Testing
import BuiltProducts
import PushStore
import TestWaits

/// What the SQLite engine adds to the protocol: group commit, a full disk as a value, the file's
/// lock, and what it refuses to open.
@Suite("SQLite push store")
struct SQLitePushStoreTests {
    static let now: Int64 = 1_700_000_000_000

    @Test("puts waiting together share one commit, and each is answered only after it")
    func groupCommit() async throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        let store = try place.openSQLite(.generous)
        defer { store.close() }
        _ = try await store.put([samplePush(0)]).value()
        let before = store.commits
        store.pauseWriter()
        let answered = AnsweredPuts()
        for n in 1...200 {
            store.put([samplePush(n, device: n)]) { answered.add($0) }
        }
        #expect(answered.count == 0, "nothing is answered before its commit")
        store.resumeWriter()
        #expect(try await eventually { answered.count == 200 })
        #expect(answered.failures == 0)
        #expect(store.commits - before == 1)
        #expect(try await store.counts().value().entries == 201)
    }

    @Test("a full disk answers the put with diskFull, stores nothing of it, and later puts succeed once there is room")
    func fullDiskIsAValue() async throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        let store = try place.openSQLite(.generous)
        defer { store.close() }
        let kept = try await store.put([samplePush(0, device: 0, payloadBytes: 2_000)]).value().ids
        try await limitFile(store, extraPages: 4)
        var failure: PushStoreError?
        var stored = kept
        for n in 1...200 {
            switch await store.put([samplePush(n, device: n, payloadBytes: 2_000)]) {
            case .success(let receipt): stored += receipt.ids
            case .failure(let error): failure = error
            }
            if failure != nil { break }
        }
        #expect(failure?.code == .diskFull, "\(String(describing: failure))")
        #expect(stored.count < 200)
        let counts = try await store.counts().value()
        #expect(counts.entries == stored.count)
        #expect(try await store.take(max: 500, nowMs: Self.now, leaseMs: 1).value().map(\.id) == stored)
        // Still full: the next put fails the same way; a finish frees room for the one after.
        #expect(await store.put([samplePush(500, device: 500, payloadBytes: 2_000)]).failureCode == .diskFull)
        try await store.finish(Array(stored.dropFirst())).value()
        _ = try await store.put([samplePush(501, device: 501, payloadBytes: 2_000)]).value("after a finish")
        // The disk grows again: puts go on.
        try await limitFile(store, extraPages: nil)
        for n in 600..<620 { _ = try await store.put([samplePush(n, device: n, payloadBytes: 2_000)]).value("after the bound went") }
        #expect(try await store.counts().value().entries == 22)
    }

    @Test("a finish and a put that fail in one turn are retried apart: the finish frees the room the put needs next")
    func finishesAreNotHeldBackByFailingPuts() async throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        let store = try place.openSQLite(.generous)
        defer { store.close() }
        var ids: [HeldPushID] = []
        for n in 0..<20 { ids += try await store.put([samplePush(n, device: n, payloadBytes: 2_000)]).value().ids }
        try await limitFile(store, extraPages: 0)
        store.pauseWriter()
        let finished = AnsweredPuts()
        let put = AnsweredPuts()
        store.finish(ids) { finished.add($0.map { PutReceipt(ids: [], droppedForDeviceCap: 0) }) }
        store.put((100..<140).map { samplePush($0, device: $0, payloadBytes: 2_000) }) { put.add($0) }
        store.resumeWriter()
        #expect(try await eventually { finished.count == 1 && put.count == 1 })
        #expect(finished.failures == 0)
        #expect(put.failures == 1)
        #expect(try await store.counts().value().entries == 0)
        _ = try await store.put([samplePush(200, payloadBytes: 2_000)]).value("after the finish freed pages")
    }

    @Test("a second store on the same file is refused while the first has it open")
    func oneProcessPerFile() async throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        let first = try place.openSQLite(.generous)
        _ = try await first.put([samplePush(0)]).value()
        #expect(throws: PushStoreError(.inUse, "")) { try place.openSQLite(.generous) }
        first.close()
        let second = try place.openSQLite(.generous)
        defer { second.close() }
        #expect(try await second.counts().value().entries == 1)
    }

    @Test("a file that is not a store, or a directory that cannot be written, is refused at open")
    func refusedAtOpen() throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        try Data("not a database, just text that is long enough to be read as a header".utf8).write(to: URL(fileURLWithPath: place.path))
        #expect(throws: PushStoreError(.cannotOpen, "")) { try place.openSQLite(.generous) }
        #expect(throws: PushStoreError(.cannotOpen, "")) {
            try SQLitePushStore(path: place.directory.appendingPathComponent("missing/held.sqlite").path, limits: .generous)
        }
    }

    @Test("a store written by a later schema version is refused at open, not read as this one")
    func laterSchemaRefused() async throws {
        let place = try SQLitePlace()
        defer { place.remove() }
        let store = try place.openSQLite(.generous)
        _ = try await store.put([samplePush(0)]).value()
        store.close()
        // user_version is the big-endian 4 bytes at offset 60 of the file's header (closed: the log is checkpointed into the file).
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: place.path))
        try file.seek(toOffset: 60)
        try file.write(contentsOf: Data([0, 0, 0, 9]))
        try file.close()
        do {
            _ = try place.openSQLite(.generous)
            Issue.record("a store of schema version 9 was opened")
        } catch {
            #expect(error.code == .cannotOpen)
            #expect(error.message.hasSuffix("has schema version 9; this relay knows 1"), "\(error)")
        }
    }

    /// Run as root (as CI is), the probe is started as `nobody` on a file root owns: SQLite opens
    /// such a file read-only without a word.
    @Test("a store file this process may not write is refused at open as read-only",
          .enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/runuser")))
    func readOnlyFileRefused() async throws {
        let probe = try #require(BuiltProducts.executable("push-store-probe"), "swift build --build-tests builds push-store-probe")
        let place = try SQLitePlace()
        defer { place.remove() }
        let store = try place.openSQLite(.generous)
        _ = try await store.put([samplePush(0)]).value()
        store.close()
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: place.directory.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: place.path)
        let run = try ProbeRun(probe: URL(fileURLWithPath: "/usr/sbin/runuser"),
                               arguments: ["-u", "nobody", "--", probe.path, "bench", place.path, "1", "1"])
        defer { run.forceStop() }
        try await run.waitForExit()
        #expect(run.exitStatus == 1)
        #expect(run.errorText.contains("cannotOpen: the store at \(place.path) is read-only to this process"), "\(run.errorText)")
    }

    private func limitFile(_ store: SQLitePushStore, extraPages: Int?) async throws {
        let result = await withCheckedContinuation { continuation in
            store.limitFile(extraPages: extraPages) { continuation.resume(returning: $0) }
        }
        try result.value("limiting the file")
    }
}

/// Put answers as they arrive on the store's thread.
final class AnsweredPuts: Sendable {
    private let results = Mutex<[Result<PutReceipt, PushStoreError>]>([])
    func add(_ result: Result<PutReceipt, PushStoreError>) { results.withLock { $0.append(result) } }
    var count: Int { results.withLock { $0.count } }
    var failures: Int { results.withLock { $0.filter { if case .failure = $0 { true } else { false } }.count } }
}
