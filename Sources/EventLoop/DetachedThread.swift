#if canImport(Glibc)
import Glibc
#endif
internal import CLinux

/// Carries a new thread's closure through `pthread_create`'s one pointer argument.
final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }

    /// Starts a thread that runs `run`: its id, or `pthread_create`'s error number (and then
    /// `run` never runs).
    static func start(_ run: @escaping () -> Void) -> Result<pthread_t, ThreadStartError> {
        let body = Unmanaged.passRetained(ThreadBody(run))
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue().run()
            return nil
        }, body.toOpaque())
        guard rc == 0 else {
            body.release()
            return .failure(ThreadStartError(number: rc))
        }
        return .success(tid)
    }
}

/// `pthread_create`'s error number.
struct ThreadStartError: Error {
    let number: Int32
}

/// A thread of its own for one blocking call that must not stall a loop (a host name lookup);
/// it ends when the call returns.
///
/// Not `DispatchQueue.global()`: the first use of Dispatch's pool starts its worker threads,
/// which stay for seconds after the work, and each keeps a stack and an allocator arena
/// resident in a relay that otherwise runs only its loops.
package enum DetachedThread {
    /// Runs `body` on a new detached thread named `name` (15 bytes at most are kept); false
    /// when no thread could be started (the process is at its thread limit), and then `body`
    /// does not run.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
        switch ThreadBody.start({ clinux_set_thread_name(name); body() }) {
        case .success(let tid):
            pthread_detach(tid)
            return true
        case .failure:
            return false
        }
    }
}
