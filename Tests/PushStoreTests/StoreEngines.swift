import Foundation
import PushStore
import TestWaits

/// The engines the conformance suite runs against: each opens its store afresh for a test and
/// can open the same store again (a restart).
enum StoreEngine: CaseIterable, CustomStringConvertible, Sendable {
    case sqlite
    case redis

    var description: String {
        switch self {
        case .sqlite: "SQLite"
        case .redis: "Redis"
        }
    }

    func place() throws -> StorePlace {
        switch self {
        case .sqlite: try SQLitePlace()
        case .redis: try RedisPlace()
        }
    }
}

/// Where one test's store lives: `open` again opens the same store; `remove` deletes it.
protocol StorePlace: Sendable {
    func open(_ limits: HoldLimits) throws -> any HeldPushStore
    func remove()
}

/// A SQLite file in a directory of its own under the temporary directory.
struct SQLitePlace: StorePlace {
    let directory: URL
    var path: String { directory.appendingPathComponent("held.sqlite").path }

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-store-\(getpid())-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    func open(_ limits: HoldLimits) throws -> any HeldPushStore {
        try SQLitePushStore(path: path, limits: limits)
    }

    func openSQLite(_ limits: HoldLimits) throws(PushStoreError) -> SQLitePushStore {
        try SQLitePushStore(path: path, limits: limits)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// A redis-server of the test's own (append-only, fsync always), stopped by its PID at `remove`.
struct RedisPlace: StorePlace {
    let server: RedisServer

    init() throws { server = try RedisServer() }

    var address: RedisAddress {
        get throws { try RedisAddress.parse(server.url()).get() }
    }

    func open(_ limits: HoldLimits) throws -> any HeldPushStore { try openRedis(limits) }

    func openRedis(_ limits: HoldLimits, timeout: Duration = .seconds(2)) throws -> RedisPushStore {
        try RedisPushStore(address: try address, limits: limits, timeout: timeout)
    }

    func remove() { server.remove() }
}

extension HoldLimits {
    static let generous = HoldLimits(maxEntries: 1_000_000, maxBytes: 1 << 31, maxPerDevice: 1_000)
}

/// Push `n` of device `device`, arrived at `arrivalMs`, for `ttl` seconds: every field differs
/// from one push to the next, so a store that mixed two up is caught.
func samplePush(_ n: Int, device: Int = 0, arrivalMs: Int64 = 1_700_000_000_000, ttl: Int64 = 3_600,
                payloadBytes: Int = 64) -> HeldPush {
    HeldPush(route: n % 2 == 0 ? "push" : "relay-to", environment: n % 5 == 0 ? "sandbox" : "production", app: "app\(n % 3)", deviceToken: String(format: "%064x", device),
             topic: "org.example.app\(n % 3)", apnsID: "00000000-0000-4000-8000-\(String(format: "%012d", n))",
             priority: n % 2 == 0 ? 10 : 5, collapseID: n % 4 == 0 ? nil : "collapse-\(n)", pushType: "alert",
             urgency: n % 2 == 0 ? "normal" : "low", arrivalMs: arrivalMs + Int64(n), ttlSeconds: ttl,
             payload: (0..<payloadBytes).map { UInt8(truncatingIfNeeded: $0 &+ n) })
}

/// What a test expects of a result it does not branch on: the value, or the test fails with the error.
extension Result where Failure == PushStoreError {
    func value(_ what: String = "") throws -> Success {
        switch self {
        case .success(let value): return value
        case .failure(let error): throw StoreTestFailure(description: "\(what): \(error)")
        }
    }
}

struct StoreTestFailure: Error, CustomStringConvertible {
    let description: String
}
