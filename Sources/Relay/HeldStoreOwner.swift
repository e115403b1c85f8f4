#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import PushStore

/// The relay's one store of held pushes. A SQLite file is opened at start-up when it already
/// exists (what a previous run held is delivered), otherwise on the first push that needs it, so
/// a relay that never loses Apple never maps SQLite's pages (about 2 MiB resident). Redis is
/// opened at start-up, reachable or not: the store connects on its own thread and reconnects by
/// itself, so a Redis that is down never stops the relay (`/health` says `store_ok: false`).
package final class HeldStoreOwner: Sendable {
    /// The SQLite file's path, or "" for Redis.
    package let path: String
    /// What logs and `/health` name the store by: `sqlite:/path` or `redis://host:port/db`.
    package let label: String
    private let limits: HoldLimits
    private let metrics: StoreMetrics?
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
    package init(path: String, limits: HoldLimits, metrics: StoreMetrics? = nil) throws(PushStoreError) {
        self.path = path
        label = "sqlite:" + path
        self.limits = limits
        self.metrics = metrics
        if access(path, F_OK) == 0 {
            state = Mutex(.open(Self.measured(try SQLitePushStore(path: path, limits: limits), metrics)))
        } else {
            let directory = Self.directory(of: path)
            guard access(directory, W_OK | X_OK) == 0 else {
                let why = String(cString: strerror(errno))
                throw PushStoreError(.cannotOpen, "cannot create the store at \(path): its directory \(directory) is not writable (\(why))")
            }
            state = Mutex(.notOpened)
        }
    }

    /// Redis at `address`, opened now (its thread connects when Redis answers).
    package init(redis address: RedisAddress, limits: HoldLimits, metrics: StoreMetrics? = nil) throws(PushStoreError) {
        path = ""
        label = address.description
        self.limits = limits
        self.metrics = metrics
        state = Mutex(.open(Self.measured(try RedisPushStore(address: address, limits: limits), metrics)))
    }

    private static func measured(_ store: any HeldPushStore, _ metrics: StoreMetrics?) -> any HeldPushStore {
        metrics.map { MeasuredStore(store, metrics: $0) } ?? store
    }

    /// Whether the store can be used now: open and answering, or a file not yet needed whose
    /// directory was writable at start-up. False after a failed open and once closed.
    package var isAvailable: Bool {
        state.withLock { state in
            switch state {
            case .open(let store): store.isAvailable
            case .notOpened: true
            case .failed, .closed: false
            }
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
                    let store = Self.measured(try SQLitePushStore(path: path, limits: limits), metrics)
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
