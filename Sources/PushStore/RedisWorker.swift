#if canImport(Glibc)
import Glibc
#endif

/// The Redis store's worker: everything that talks to Redis, on the store's thread only. One
/// `serve` call is one turn: every request waiting goes out in one pipelined write (every put in
/// one script call: one AOF write and, with `appendfsync always`, one fsync before Redis
/// answers), then the replies are read in order and each caller answered.
///
/// Connection: made on the first turn and again after any failure, no sooner than the back-off
/// allows (100 ms doubling to 5 s); until then a call is answered `unreachable` at once, never
/// queued behind a dead server. While idle the worker pings every few seconds, so `isUp` (what
/// `/health` shows) follows Redis without a push.
final class RedisWorker {
    private let address: RedisAddress
    private let limits: HoldLimits
    private let timeout: Duration
    private let stats: RedisStatistics
    let consumer: String

    private var connection: RedisConnection?
    private var shas: [String] = []
    private var lastError = PushStoreError(.unreachable, "not connected yet")
    private var nextConnect = ContinuousClock.now
    private var backOff = RedisWorker.firstBackOff
    private var lastUse = ContinuousClock.now

    static let firstBackOff: Duration = .milliseconds(100)
    static let longestBackOff: Duration = .seconds(5)
    static let pingEvery: Duration = .seconds(2)

    init(address: RedisAddress, limits: HoldLimits, timeout: Duration, stats: RedisStatistics, consumer: String) {
        self.address = address
        self.limits = limits
        self.timeout = timeout
        self.stats = stats
        self.consumer = consumer
    }

    /// One pipelined command and what to do with its reply (or the turn's failure).
    private struct Pending {
        let command: RedisCommand
        let answer: (Result<RedisValue, PushStoreError>) -> Void
    }

    func serve(_ batch: [StoreRequest]) {
        guard connected() else {
            for request in batch { request.fail(lastError) }
            return
        }
        var pending: [Pending] = []
        var puts: [([HeldPush], @Sendable (Result<PutReceipt, PushStoreError>) -> Void)] = []
        for request in batch {
            switch request {
            case .release(let ids, let completion):
                if ids.isEmpty { completion(.success(())); continue }
                let command: RedisCommand = .command("XCLAIM", RedisScripts.stream, RedisScripts.group, RedisScripts.released, "0")
                    + ids.map { Array(RedisCodec.idText($0).utf8) } + .command("TIME", "0", "JUSTID")
                pending.append(Pending(command: command) { completion($0.map { _ in () }) })
            case .finish(let ids, let completion):
                if ids.isEmpty { completion(.success(())); continue }
                pending.append(Pending(command: script(2, ids.map { Array(RedisCodec.idText($0).utf8) })) { completion($0.map { _ in () }) })
            case .dropExpired(let nowMs, let completion):
                pending.append(Pending(command: script(3, [Array(String(nowMs).utf8)])) { result in
                    completion(result.flatMap { $0.integer.map { .success(Int($0)) } ?? .failure(RedisCodec.malformed("dropExpired")) })
                })
            case .put(let pushes, let completion):
                puts.append((pushes, completion))
            case .take, .counts, .onTable:
                break
            }
        }
        if !puts.isEmpty {
            let command = script(0, RedisCodec.putArguments(puts.map(\.0), limits: limits))
            pending.append(Pending(command: command) { result in
                switch result {
                case .failure(let error): for (_, completion) in puts { completion(.failure(error)) }
                case .success(let value):
                    let answers = value.array ?? []
                    for (index, (pushes, completion)) in puts.enumerated() {
                        completion(index < answers.count ? RedisCodec.receipt(answers[index], expecting: pushes.count)
                                                         : .failure(RedisCodec.malformed("put")))
                    }
                }
            })
            stats.putTurns.add(1, ordering: .relaxed)
        }
        for request in batch {
            switch request {
            case .take(let max, let nowMs, let leaseMs, let completion):
                if max <= 0 { completion(.success([])); continue }
                let arguments = [String(max), String(nowMs), String(leaseMs), consumer].map { Array($0.utf8) }
                pending.append(Pending(command: script(1, arguments)) { completion($0.flatMap(RedisCodec.pushes)) })
            case .counts(let completion):
                pending.append(Pending(command: script(4, [])) { completion($0.flatMap(RedisCodec.counts)) })
            case .onTable:
                break
            case .put, .finish, .release, .dropExpired:
                break
            }
        }
        run(pending)
    }

    /// Idle: reconnects when the back-off allows, pings a connection unused for a while.
    func idle() {
        if connection == nil {
            _ = connected()
        } else if ContinuousClock.now - lastUse >= Self.pingEvery {
            run([Pending(command: .command("PING")) { _ in }])
        }
    }

    /// Gives back what this consumer holds (due at once for any relay) and disconnects.
    func letGo() {
        if connection != nil { run([Pending(command: script(5, [Array(consumer.utf8)])) { _ in }]) }
        connection = nil
        stats.up.store(false, ordering: .relaxed)
    }

    private func script(_ index: Int, _ arguments: [[UInt8]]) -> RedisCommand {
        RedisCodec.evalsha(shas[index], arguments)
    }

    private func run(_ pending: [Pending]) {
        guard !pending.isEmpty, let connection else {
            for item in pending { item.answer(.failure(lastError)) }
            return
        }
        lastUse = ContinuousClock.now
        switch connection.pipeline(pending.map(\.command)) {
        case .failure(let error):
            lost(error)
            for item in pending { item.answer(.failure(error)) }
        case .success(let replies):
            var reset = false
            for (item, reply) in zip(pending, replies) {
                if case .error(let code, let line) = reply {
                    // A script cache flushed or the stream deleted under us: set up again on the
                    // next turn.
                    if code == "NOSCRIPT" || code == "NOGROUP" { reset = true }
                    item.answer(.failure(RedisCodec.error(code: code, line: line, doing: "a call")))
                } else {
                    item.answer(.success(reply))
                }
            }
            if reset { lost(PushStoreError(.storeFailed, "Redis lost the store's scripts or group")) }
        }
    }

    private func lost(_ error: PushStoreError) {
        connection = nil
        lastError = error.code == .unreachable ? error : PushStoreError(.unreachable, error.message)
        stats.up.store(false, ordering: .relaxed)
        // The first reconnect is tried at once (a restarted Redis, a connection an idle timeout
        // closed); the back-off grows only while connects fail.
        nextConnect = ContinuousClock.now
    }

    /// True when a connection is ready; otherwise tries one if the back-off allows.
    private func connected() -> Bool {
        if connection != nil { return true }
        let now = ContinuousClock.now
        guard now >= nextConnect else { return false }
        switch RedisConnection.connect(address, timeout: timeout).flatMap(setUp) {
        case .success(let (made, loaded)):
            connection = made
            shas = loaded
            backOff = Self.firstBackOff
            lastUse = ContinuousClock.now
            stats.up.store(true, ordering: .relaxed)
            return true
        case .failure(let error):
            lastError = error
            nextConnect = ContinuousClock.now + backOff
            backOff = min(backOff * 2, Self.longestBackOff)
            stats.up.store(false, ordering: .relaxed)
            return false
        }
    }

    /// The group (made with the stream when neither exists) and the scripts, on a new connection.
    private func setUp(_ made: RedisConnection) -> Result<(RedisConnection, [String]), PushStoreError> {
        let commands: [RedisCommand] = [.command("XGROUP", "CREATE", RedisScripts.stream, RedisScripts.group, "0", "MKSTREAM")]
            + RedisScripts.all.map { .command("SCRIPT", "LOAD", $0) }
        switch made.pipeline(commands) {
        case .failure(let error): return .failure(error)
        case .success(let replies):
            if case .error(let code, let line) = replies[0], code != "BUSYGROUP" {
                return .failure(RedisCodec.error(code: code, line: line, doing: "creating the store's stream"))
            }
            var loaded: [String] = []
            for reply in replies.dropFirst() {
                guard let sha = reply.text, case .bulk = reply else {
                    if case .error(let code, let line) = reply {
                        return .failure(RedisCodec.error(code: code, line: line, doing: "loading the store's scripts"))
                    }
                    return .failure(RedisCodec.malformed("SCRIPT LOAD"))
                }
                loaded.append(sha)
            }
            return .success((made, loaded))
        }
    }
}

extension StoreRequest {
    /// Answers the request with `error`.
    func fail(_ error: PushStoreError) {
        switch self {
        case .put(_, let completion): completion(.failure(error))
        case .take(_, _, _, let completion): completion(.failure(error))
        case .finish(_, let completion): completion(.failure(error))
        case .release(_, let completion): completion(.failure(error))
        case .dropExpired(_, let completion): completion(.failure(error))
        case .counts(let completion): completion(.failure(error))
        case .onTable: break
        }
    }
}
