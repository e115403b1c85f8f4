#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import PushStore

/// The relay's one store of held pushes: opened at start-up when its file already exists (what a
/// previous run held is delivered), otherwise on the first push that needs it, so a relay that
/// never loses Apple never maps SQLite's pages (about 2 MiB resident).
package final class HeldStoreOwner: Sendable {
    package let path: String
    private let limits: HoldLimits
    private let state: Mutex<State>

    private enum State {
        case notOpened
        case open(any HeldPushStore)
        /// The last open failed: the next try waits until `retryAt` (a failing disk is not asked
        /// again for every push), with what was wrong.
        case failed(PushStoreError, retryAt: ContinuousClock.Instant)
        case closed
    }

    /// How long a failed open is believed before the next push tries again.
    static let reopenPause: Duration = .seconds(5)

    /// - Throws: when the file exists and cannot be opened, or its directory cannot take it.
    package init(path: String, limits: HoldLimits) throws(PushStoreError) {
        self.path = path
        self.limits = limits
        if access(path, F_OK) == 0 {
            state = Mutex(.open(try SQLitePushStore(path: path, limits: limits)))
        } else {
            let directory = Self.directory(of: path)
            guard access(directory, W_OK | X_OK) == 0 else {
                let why = String(cString: strerror(errno))
                throw PushStoreError(.cannotOpen, "cannot create the store at \(path): its directory \(directory) is not writable (\(why))")
            }
            state = Mutex(.notOpened)
        }
    }

    /// The store, opened now if it was not; nil (and why) when it cannot be.
    package func store() -> Result<any HeldPushStore, PushStoreError> {
        state.withLock { state in
            switch state {
            case .open(let store): return .success(store)
            case .closed: return .failure(PushStoreError(.closed, "the store is closed"))
            case .failed(let error, let retryAt) where ContinuousClock.now < retryAt: return .failure(error)
            case .notOpened, .failed:
                do throws(PushStoreError) {
                    let store = try SQLitePushStore(path: path, limits: limits)
                    state = .open(store)
                    return .success(store)
                } catch {
                    state = .failed(error, retryAt: ContinuousClock.now + Self.reopenPause)
                    return .failure(error)
                }
            }
        }
    }

    /// The store if it is open: what delivery reads (it never creates the file).
    package var openStore: (any HeldPushStore)? {
        state.withLock { state in
            if case .open(let store) = state { return store }
            return nil
        }
    }

    /// Answers what was asked, then lets go of the file; later calls answer `closed`.
    package func close() {
        let open: (any HeldPushStore)? = state.withLock { state in
            defer { state = .closed }
            if case .open(let store) = state { return store }
            return nil
        }
        open?.close()
    }

    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
