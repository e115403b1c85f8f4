#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import EventLoop
import Transport

/// One environment's connections: drives `PoolStateMachine` under a lock and performs its
/// actions after unlocking, so no I/O and no caller's completion ever runs under the lock.
final class APNsPool: Sendable {
    typealias Completion = @Sendable (Result<APNsResponse, APNsError>) -> Void
    typealias Instant = ContinuousClock.Instant

    let environment: APNsEnvironment
    let endpoint: APNsEndpoint
    let configuration: APNsClientConfiguration
    let loops: [EventLoop]
    let observer: (any APNsClientObserver)?
    let unixTime: @Sendable () -> Int64
    private let state: Mutex<State>

    private struct Entry {
        let notification: APNsNotification
        let deadline: Instant
        let completion: Completion
        var attempts = 0
    }

    private struct State {
        var machine: PoolStateMachine
        var entries: [PushID: Entry] = [:]
        var connections: [ConnectionID: APNsConnection] = [:]
        var nextPush: UInt64 = 1
        var shutdownDone = false
        var shutdownWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private enum Work {
        case create(APNsConnection, reconnect: Bool)
        case send(APNsConnection, PushID, APNsNotification, Instant)
        case finish(Completion, Result<APNsResponse, APNsError>)
        case close(APNsConnection)
        case reconnect(Duration)
        case retried
        case shutdownComplete([CheckedContinuation<Void, Never>])
    }

    init(environment: APNsEnvironment, endpoint: APNsEndpoint, configuration: APNsClientConfiguration,
         loops: [EventLoop], observer: (any APNsClientObserver)?, unixTime: @escaping @Sendable () -> Int64) {
        self.environment = environment
        self.endpoint = endpoint
        self.configuration = configuration
        self.loops = loops
        self.observer = observer
        self.unixTime = unixTime
        let machineConfiguration = PoolStateMachine.Configuration(
            poolSize: configuration.poolSize, queueCapacity: configuration.queueCapacity,
            maxRetries: configuration.maxRetries, backoffBase: configuration.backoffBase,
            backoffMax: configuration.backoffMax, stallGrace: configuration.stallGrace,
            maxStreamsPerConnection: configuration.maxStreamsPerConnection,
            youngConnectionAge: configuration.youngConnectionAge)
        self.state = Mutex(State(machine: PoolStateMachine(configuration: machineConfiguration)))
    }

    /// Opens the connections and starts the ticker that expires queued pushes and runs reconnects.
    func start() {
        handle(.start)
        let loop = loops[0]
        loop.execute { [weak self] in self?.tick(on: loop) }
    }

    private func tick(on loop: EventLoop) {
        loop.schedule(after: configuration.tickInterval) { [weak self] in
            guard let self else { return }
            if self.state.withLock({ $0.shutdownDone }) { return }
            self.handle(.timerFired)
            self.tick(on: loop)
        }
    }

    // MARK: Callers

    func send(_ notification: APNsNotification, completion: @escaping Completion) {
        let now = ContinuousClock.now
        let deadline = now + configuration.pushTimeout
        let work = state.withLock { s -> [Work] in
            let id = PushID(s.nextPush)
            s.nextPush += 1
            s.entries[id] = Entry(notification: notification, deadline: deadline, completion: completion)
            let actions = s.machine.handle(.enqueue(id, deadline: deadline), now: now)
            return Self.resolve(actions, &s, pool: self)
        }
        perform(work)
    }

    /// True when a push sent now could go out at once (a ready connection with a free stream limit).
    var isReady: Bool { state.withLock { $0.machine.canSendNow } }

    var stats: (open: Int, inFlight: Int, queued: Int) {
        state.withLock { ($0.machine.readyConnectionCount, $0.machine.inFlightCount, $0.machine.queuedCount) }
    }

    /// Fails queued pushes, lets in-flight ones end (their deadlines bound the wait), closes.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.shutdownDone { return true }
                s.shutdownWaiters.append(continuation)
                return false
            }
            if done { continuation.resume() } else { handle(.shutdown) }
        }
    }

    /// Test seam: moves the next stream id of every open connection, so a test can bring them to
    /// the end of HTTP/2's 2^31 ids. Returns how many connections took it.
    func setNextStreamID(_ streamID: Int32) async -> Int {
        let connections = state.withLock { Array($0.connections.values) }
        var moved = 0
        for connection in connections {
            let ok = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                connection.loop.execute { done.resume(returning: (try? connection.setNextStreamID(streamID)) != nil) }
            }
            if ok { moved += 1 }
        }
        return moved
    }

    // MARK: Events from connections and timers

    func handle(_ event: PoolStateMachine.Event) {
        let now = ContinuousClock.now
        let work = state.withLock { s -> [Work] in
            switch event {
            case .connectionFailed(let c), .connectionClosed(let c): s.connections[c] = nil
            default: break
            }
            let actions = s.machine.handle(event, now: now)
            return Self.resolve(actions, &s, pool: self)
        }
        perform(work)
    }

    /// Turns the machine's actions into work carrying what it needs, while the lock is held.
    private static func resolve(_ actions: [PoolStateMachine.Action], _ s: inout State, pool: APNsPool) -> [Work] {
        var work: [Work] = []
        work.reserveCapacity(actions.count)
        for action in actions {
            switch action {
            case .createConnection(let c):
                let loop = pool.loops[Int(c.value % UInt64(pool.loops.count))]
                let connection = APNsConnection(id: c, loop: loop, pool: pool)
                s.connections[c] = connection
                work.append(.create(connection, reconnect: s.machine.isReconnect(c)))
            case .send(let id, let c):
                guard var entry = s.entries[id] else { continue }
                entry.attempts += 1
                s.entries[id] = entry
                if entry.attempts > 1 { work.append(.retried) }
                if let connection = s.connections[c] {
                    work.append(.send(connection, id, entry.notification, entry.deadline))
                }
            case .failPush(let id, let error):
                if let entry = s.entries.removeValue(forKey: id) { work.append(.finish(entry.completion, .failure(error))) }
            case .completePush(let id, let response):
                if let entry = s.entries.removeValue(forKey: id) { work.append(.finish(entry.completion, .success(response))) }
            case .closeConnection(let c):
                if let connection = s.connections.removeValue(forKey: c) { work.append(.close(connection)) }
            case .scheduleReconnect(_, let delay):
                work.append(.reconnect(delay))
            case .shutdownComplete:
                s.shutdownDone = true
                work.append(.shutdownComplete(s.shutdownWaiters))
                s.shutdownWaiters = []
            }
        }
        return work
    }

    private func perform(_ work: [Work]) {
        for item in work {
            switch item {
            case .create(let connection, let reconnect):
                if reconnect { observer?.reconnecting(environment: environment, connection: Int(truncatingIfNeeded: connection.id.value)) }
                connection.loop.execute { connection.connect() }
            case .send(let connection, let id, let notification, let deadline):
                // Always hop, even on the right loop: we may be inside an nghttp2 callback.
                connection.loop.execute { connection.send(id, notification, deadline: deadline) }
            case .finish(let completion, let result):
                completion(result)
            case .close(let connection):
                connection.loop.execute { connection.close() }
            case .reconnect(let delay):
                observer?.reconnectScheduled(environment: environment, after: delay)
                let loop = loops[0]
                loop.execute { [weak self] in
                    loop.schedule(after: delay) { self?.handle(.timerFired) }
                }
            case .retried:
                observer?.pushRetried(environment: environment)
            case .shutdownComplete(let waiters):
                for waiter in waiters { waiter.resume() }
            }
        }
    }
}
