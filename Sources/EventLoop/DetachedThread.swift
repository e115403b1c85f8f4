#if canImport(Glibc)
import Glibc
#endif
internal import CLinux

/// A closure a new thread runs, passed through `pthread_create`'s one pointer.
final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

/// A thread of its own for one blocking call that must not stall a loop (a host name lookup,
/// giving memory back to the kernel); it ends when the call returns.
///
/// Not `DispatchQueue.global()`: the first use of Dispatch's pool starts its worker threads,
/// which stay for seconds after the work, and each keeps a stack and an allocator arena
/// resident in a relay that otherwise runs only its loops.
package enum DetachedThread {
    /// Runs `body` on a new detached thread named `name` (15 bytes at most are kept); false
    /// when no thread could be started (the process is at its thread limit), and then `body`
    /// does not run.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        let box = Unmanaged.passRetained(ThreadBody {
            clinux_set_thread_name(name)
            body()
        })
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            return false
        }
        pthread_detach(tid)
        return true
    }
}
