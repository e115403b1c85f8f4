#if canImport(Glibc)
import Glibc
#endif

/// Reading small local files (env files, `.p8` keys, CA bundles, a `send` payload) with
/// open/read/close, without Foundation. The whole file is read; a read interrupted by a
/// signal is retried.
package enum LocalFile {
    /// Why a file could not be read: the path and errno's text (`No such file or directory`).
    package struct Failure: Error, CustomStringConvertible {
        package let path: String
        package let errno: Int32

        package var description: String { "cannot read \(path): \(String(cString: strerror(errno)))" }
    }

    /// The file's bytes, however large, read until end of file.
    package static func bytes(atPath path: String) throws(Failure) -> [UInt8] {
        var fd: Int32
        repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
        guard fd >= 0 else { throw Failure(path: path, errno: errno) }
        defer { close(fd) }
        var contents: [UInt8] = []
        var chunk = 16_384
        while true {
            let start = contents.count
            contents.append(contentsOf: repeatElement(0, count: chunk))
            let n = contents.withUnsafeMutableBytes { read(fd, $0.baseAddress! + start, chunk) }
            if n < 0 {
                contents.removeSubrange(start...)
                if errno == EINTR { continue }
                throw Failure(path: path, errno: errno)
            }
            contents.removeSubrange((start + n)...)
            if n == 0 { return contents }
            // Fewer system calls for large files: each read asks for up to what was read so far.
            chunk = min(max(chunk, contents.count), 1 << 24)
        }
    }

    /// The file's text without a leading UTF-8 byte order mark (an editor's, before an env file's
    /// first variable); nil when it cannot be read or is not valid UTF-8. As
    /// `String(contentsOfFile:encoding: .utf8)` read it.
    package static func text(atPath path: String) -> String? {
        guard let bytes = try? bytes(atPath: path) else { return nil }
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
