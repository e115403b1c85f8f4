import Foundation
import Synchronization
import Testing
import EventLoop

/// A scratch directory of its own, removed by the test that made it.
private func scratchDirectory() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("local-file-\(getpid())-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
    return path
}

/// What the FIFO test's reader and its rescuer thread tell each other.
private final class FIFOFlags: Sendable {
    /// Signalled when the read has returned; the rescuer waits for it at most 10 s.
    let finished = DispatchSemaphore(value: 0)
    /// Signalled when the rescuer is done.
    let rescuerDone = DispatchSemaphore(value: 0)
    let rescued = Mutex(false)
}

@Suite("Local files and the environment without Foundation")
struct LocalFileTests {
    @Test("a file's text is read whole, as Foundation reads it")
    func readsText() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/AuthKey.p8"
        let text = "-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\néà 🎺\n"
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        #expect(LocalFile.text(atPath: path) == text)
        #expect(LocalFile.text(atPath: path) == (try String(contentsOfFile: path, encoding: .utf8)))
        #expect(LocalFile.isReadable(atPath: path))
    }

    @Test("a large file comes back byte for byte, across many reads")
    func readsLargeFile() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/tokens"
        // 1 MiB and a bit: many reads as the chunk grows, not a multiple of any chunk.
        var bytes = [UInt8](repeating: 0, count: (1 << 20) + 12_345)
        for i in stride(from: 0, to: bytes.count, by: 4093) { bytes[i] = UInt8(truncatingIfNeeded: i >> 12) | 1 }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(try LocalFile.bytes(atPath: path) == bytes)
        let empty = directory + "/empty"
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(try LocalFile.bytes(atPath: empty) == [])
        #expect(LocalFile.text(atPath: empty) == "")
    }

    @Test("a missing file is an error naming the path and errno's text, and is not readable")
    func missingFile() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/absent.pem"
        #expect(LocalFile.text(atPath: path) == nil)
        #expect(!LocalFile.isReadable(atPath: path))
        do {
            _ = try LocalFile.bytes(atPath: path)
            Issue.record("read a file that does not exist")
        } catch {
            #expect(error.errno == ENOENT)
            #expect(error.description == "cannot read \(path): No such file or directory")
        }
    }

    @Test("a directory opens but cannot be read: an error, as with Foundation")
    func unreadableDirectory() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(LocalFile.text(atPath: directory) == nil)
        #expect((try? String(contentsOfFile: directory, encoding: .utf8)) == nil)
        do {
            _ = try LocalFile.bytes(atPath: directory)
            Issue.record("read a directory as a file")
        } catch {
            #expect(error.errno == EISDIR)
        }
    }

    @Test("a UTF-8 byte order mark is not part of the text, as Foundation dropped it")
    func byteOrderMark() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/relay.env"
        try Data([0xEF, 0xBB, 0xBF] + Array("PORT=3000\n".utf8)).write(to: URL(fileURLWithPath: path))
        #expect(LocalFile.text(atPath: path) == "PORT=3000\n")
        #expect(LocalFile.text(atPath: path) == (try String(contentsOfFile: path, encoding: .utf8)))
        #expect(try LocalFile.bytes(atPath: path).count == 13)
    }

    @Test("bytes that are not UTF-8 are no text")
    func notUTF8() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/binary"
        try Data([0x41, 0xFF, 0xFE, 0x42]).write(to: URL(fileURLWithPath: path))
        #expect(try LocalFile.bytes(atPath: path) == [0x41, 0xFF, 0xFE, 0x42])
        #expect(LocalFile.text(atPath: path) == nil)
    }

    @Test("an endless device as a key file is refused past the limit instead of read for ever")
    func endlessDevice() throws {
        // The default limit: a key path naming /dev/zero must fail, not fill memory.
        do {
            _ = try LocalFile.bytes(atPath: "/dev/zero")
            Issue.record("read /dev/zero to its end")
        } catch {
            #expect(error.errno == EFBIG)
        }
        #expect(LocalFile.text(atPath: "/dev/zero") == nil)
    }

    @Test("a file of exactly the limit is read; one byte more is refused")
    func limitIsExact() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/limit"
        try Data(repeating: 0x41, count: 100_000).write(to: URL(fileURLWithPath: path))
        #expect(try LocalFile.bytes(atPath: path, maxBytes: 100_000).count == 100_000)
        #expect(throws: LocalFile.Failure.self) { try LocalFile.bytes(atPath: path, maxBytes: 99_999) }
    }

    @Test("a FIFO no one writes to reads as empty instead of waiting for a writer")
    func fifoWithoutWriter() throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/AuthKey.p8"
        #expect(mkfifo(path, 0o600) == 0)
        // Should the open wait for a writer, one comes after 10 s (opening for read and write
        // never waits), so a regression fails here rather than hanging the run.
        let flags = FIFOFlags()
        let rescuer = Thread {
            defer { flags.rescuerDone.signal() }
            if flags.finished.wait(timeout: .now() + 10) == .success { return }
            flags.rescued.withLock { $0 = true }
            let fd = open(path, O_RDWR)
            usleep(100_000)
            close(fd)
        }
        rescuer.start()
        let bytes = try LocalFile.bytes(atPath: path)
        flags.finished.signal()
        flags.rescuerDone.wait()
        #expect(bytes == [])
        #expect(!flags.rescued.withLock { $0 }, "the open waited for a writer")
    }

    @Test("the environment is what ProcessInfo reads, a value holding = included")
    func environment() {
        setenv("LOCAL_FILE_TESTS_VALUE", "a=b=c", 1)
        defer { unsetenv("LOCAL_FILE_TESTS_VALUE") }
        let variables = ProcessEnvironment.variables
        #expect(variables["LOCAL_FILE_TESTS_VALUE"] == "a=b=c")
        #expect(variables == ProcessInfo.processInfo.environment)
    }
}
