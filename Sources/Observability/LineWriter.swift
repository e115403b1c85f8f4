#if canImport(Glibc)
import Glibc
#endif
import Synchronization


/// Writes whole lines to a file descriptor, never interleaving two.
///
/// On a thread that called `LogBatching.begin()` (every event loop does) a line is only appended
/// to that thread's buffer, which the loop writes in one write(2) when its turn ends (every
/// `LogBatching.maxDelay` on a busy loop): no write and no lock per line. Elsewhere each line is written at once. A write
/// takes a lock so that a batch longer than PIPE_BUF, or one cut short by a signal, is never
/// split by another thread's.
final class LineWriter: Sendable {
    let fileDescriptor: Int32
    private let lock = Mutex(())

    init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// `build` appends one line without its newline.
    func writeLine(_ build: (inout [UInt8]) -> Void) {
        if let batch = LogBatching.current() {
            if batch.writer !== self {
                batch.flush()
                batch.writer = self
            }
            // The held bytes are reached once for the whole line: each access to a class's
            // stored array is checked for exclusivity at run time.
            if Self.appendLine(to: &batch.bytes, build) { batch.flush() }
            return
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(512)
        build(&bytes)
        bytes.append(0x0A)
        write(bytes)
    }

    /// Appends a line and its newline to a batch's bytes: whether they now hold enough to be
    /// written at once.
    private static func appendLine(to bytes: inout [UInt8], _ build: (inout [UInt8]) -> Void) -> Bool {
        build(&bytes)
        bytes.append(0x0A)
        return bytes.count >= LogBatching.flushBytes
    }

    func write(_ bytes: [UInt8]) {
        lock.withLock { _ in
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let n = Glibc.write(fileDescriptor, raw.baseAddress! + offset, raw.count - offset)
                    if n > 0 {
                        offset += n
                    } else if n < 0 && errno == EINTR {
                        continue
                    } else {
                        return  // A broken log stream must never take the relay down with it.
                    }
                }
            }
        }
    }
}
