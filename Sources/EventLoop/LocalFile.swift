#if canImport(Glibc)
import Glibc
#endif

/// Reading small local files (env files, `.p8` keys, CA bundles, a `send` payload) with
/// open/read/close, without Foundation. The whole file is read, up to `maxBytes`; a read
/// interrupted by a signal is retried. A path that is no regular file never holds the caller
/// for ever: a FIFO no one writes to reads as empty, and a device that never ends (`/dev/zero`)
/// is refused once past the limit.
package enum LocalFile {
    /// Why a file could not be read: the path and errno's text (`No such file or directory`).
    package struct Failure: Error, CustomStringConvertible {
        package let path: String
        package let errno: Int32

        package var description: String { "cannot read \(path): \(reason)" }
        /// errno's text alone: `Permission denied`.
        package var reason: String { String(cString: strerror(errno)) }
    }

    /// The most a file is read to, 64 MiB: far above any key, env file, CA bundle or token list,
    /// and what stops a path naming an endless device from taking all memory.
    package static let maxBytes = 64 << 20

    /// The file's bytes, read until end of file; EFBIG when it holds more than `maxBytes`.
    package static func bytes(atPath path: String, maxBytes: Int = LocalFile.maxBytes) throws(Failure) -> [UInt8] {
        var fd: Int32
        // Without O_NONBLOCK, opening a FIFO waits until something opens it for writing.
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw Failure(path: path, errno: errno) }
        defer { close(fd) }
        // Reads wait again (a pipe's writer is waited for; one with no writer reads as empty).
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        var contents: [UInt8] = []
        // Read into a scratch block and copied on: one read call per 64 KiB, every byte copied
        // once (a key or env file is one read).
        let block = 65_536
        let scratch = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: block)
        defer { scratch.deallocate() }
        while true {
            // One byte past the limit is asked for, to tell a file of exactly `maxBytes` from a longer one.
            let n = read(fd, scratch.baseAddress!, min(block, maxBytes + 1 - contents.count))
            if n < 0 {
                if errno == EINTR { continue }
                throw Failure(path: path, errno: errno)
            }
            if n == 0 { return contents }
            contents.append(contentsOf: UnsafeBufferPointer(rebasing: scratch[..<n]))
            if contents.count > maxBytes { throw Failure(path: path, errno: EFBIG) }
        }
    }

    /// The file's text without a leading UTF-8 byte order mark (an editor's, before an env file's
    /// first variable); nil when it cannot be read or is not valid UTF-8. As
    /// `String(contentsOfFile:encoding: .utf8)` read it.
    package static func text(atPath path: String) -> String? {
        (try? readText(atPath: path)) ?? nil
    }

    /// The same, for a caller that says why a file could not be read: throws the failure (its
    /// errno), nil only for text that is not UTF-8.
    package static func readText(atPath path: String) throws(Failure) -> String? {
        let bytes = try bytes(atPath: path)
        let hasBOM = bytes.count >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF
        return String(validating: bytes[(hasBOM ? 3 : 0)...], as: UTF8.self)
    }

    /// True when this process may open the file for reading (access(2) with R_OK).
    package static func isReadable(atPath path: String) -> Bool {
        access(path, R_OK) == 0
    }
}

/// The process's environment variables, read from `environ`.
package enum ProcessEnvironment {
    /// Every `NAME=value` pair; a name given twice keeps its first value, as getenv(3) reads it.
    package static var variables: [String: String] {
        var variables: [String: String] = [:]
        let first: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard var entry = first else { return variables }
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.utf8.firstIndex(of: UInt8(ascii: "=")) {
                let name = String(text[..<equals])
                if variables[name] == nil { variables[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return variables
    }
}
