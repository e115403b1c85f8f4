import Testing
@testable import APNsCore
@testable import APNs

// What the pool machine's suites share: a push is its id, fixed randomness, times from t0,
// and a pool whose connections are up and answered.

typealias Pool = PoolStateMachine<PushID>
typealias Instant = MonotonicInstant

// The machine's tests need no notification: a push is its id.
extension PushID: PoolRequest { public var id: PushID { self } }

/// A deterministic generator, so every run drives the same events.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Always the same number: 0 makes the jitter its smallest (half the delay).
struct ConstantRandom: RandomNumberGenerator {
    var value: UInt64
    mutating func next() -> UInt64 { value }
}

let t0 = Instant.now
func at(_ seconds: Double) -> Instant { t0 + .milliseconds(Int64(seconds * 1000)) }
func p(_ n: UInt64) -> PushID { PushID(n) }
func c(_ n: UInt64) -> ConnectionID { ConnectionID(n) }

func response(_ status: Int, _ reason: APNsReason? = nil) -> APNsResponse {
    APNsResponse(ok: status == 200, status: status, apnsID: "id", device: "fp", reason: reason)
}
let success = StreamOutcome.success(response(200))
let refused = StreamOutcome.retryable(.unavailable("stream refused"))

func sends(_ actions: [Pool.Action]) -> [PushID: ConnectionID] {
    var out: [PushID: ConnectionID] = [:]
    for case .send(let id, let conn, _) in actions { out[id] = conn }
    return out
}

func created(_ actions: [Pool.Action]) -> [ConnectionID] {
    actions.compactMap { if case .createConnection(let id) = $0 { id } else { nil } }
}

/// A pool whose connections are established, answered once (they carried work) and allow
/// `streams` each. They opened a minute before `at(0)`, so no slot waits to connect again.
func warmPool(size: Int = 2, streams: Int = 10, capacity: Int = 100,
              configure: (inout Pool.Configuration) -> Void = { _ in }) -> Pool {
    var configuration = Pool.Configuration(poolSize: size, queueCapacity: capacity)
    configure(&configuration)
    var pool = Pool(configuration: configuration, random: ConstantRandom(value: 0))
    let conns = created(pool.handle(.start, now: at(-60)))
    for conn in conns {
        _ = pool.handle(.connectionEstablished(conn), now: at(-60))
        _ = pool.handle(.maxConcurrentStreamsChanged(conn, streams), now: at(-60))
    }
    // Each new connection takes exactly one stream until answered, so these spread one per connection.
    var warm: [PushID: ConnectionID] = [:]
    for n in 0..<conns.count {
        warm.merge(sends(pool.handle(.enqueue(PushID(10_000 + UInt64(n)), deadline: at(100)), now: at(-60)))) { a, _ in a }
    }
    precondition(Set(warm.values) == Set(conns), "warm-up pushes did not spread")
    for (id, conn) in warm { _ = pool.handle(.streamCompleted(conn, id, success), now: at(-60)) }
    return pool
}
