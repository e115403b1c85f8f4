// Small pieces the benchmark phases share: settings, the JWT, statistics.
import Foundation
import OpenSSLSupport
import BenchSupport
import Basics

/// The benchmark's knobs, from the environment; every value is bounded so a run always ends.
struct BenchSettings {
    /// Seconds of measured load per phase.
    var seconds: Double
    /// Keep-alive HTTP/1.1 clients (and closed-loop streams in the ceiling phase).
    var connections: Int
    /// The relay's CONNECTION_POOL_SIZE, and the ceiling phase's HTTP/2 connections.
    var pool: Int
    /// BENCH_EVENT_LOOPS: the relay's EVENT_LOOPS; nil leaves it one per CPU the relay may use.
    /// With more loops than APNs connections, pushes cross loops (a thread hop each way).
    var eventLoops: Int?
    /// BENCH_SKIP_CEILING=1 runs the relay phases only (profiling runs don't need the ceiling).
    var skipCeiling = false
    /// One relay phase per LOG_LEVEL (BENCH_LOG_LEVELS, default `info,warning`): the default
    /// level writes a line per push, `warning` none, so the two show what logging costs.
    var logLevels = ["info", "warning"]
    /// BENCH_SKIP_HOLD=1 leaves out the hold scenario (Apple away; HoldScenario.swift).
    var skipHold = false
    /// BENCH_HOLD_MILLION=1 adds its last part: RSS before and after a million pushes are held.
    var holdMillion = false
    /// BENCH_STORE=redis holds in a redis-server of the bench's own (STORE_URL) instead of the
    /// SQLite file.
    var redisStore = false
    /// Seconds of load before measuring starts, so connection set-up and the first
    /// authenticated request don't count.
    var warmup: Double { min(2, max(0.5, seconds / 10)) }

    static func fromEnvironment() throws -> BenchSettings {
        let env = ProcessInfo.processInfo.environment
        let number = environmentNumber
        let eventLoops = env["BENCH_EVENT_LOOPS"] == nil ? nil : Int(try number("BENCH_EVENT_LOOPS", 1, 1...256))
        return BenchSettings(
            seconds: try number("BENCH_SECONDS", 20, 1...600),
            connections: Int(try number("BENCH_CONNECTIONS", 64, 1...4096)),
            // As the relay's own default: at least one connection per loop.
            pool: Int(try number("BENCH_POOL", Double(max(2, eventLoops ?? 2)), 1...64)),
            eventLoops: eventLoops,
            skipCeiling: env["BENCH_SKIP_CEILING"] == "1",
            logLevels: try levels(env["BENCH_LOG_LEVELS"]),
            skipHold: env["BENCH_SKIP_HOLD"] == "1",
            holdMillion: env["BENCH_HOLD_MILLION"] == "1",
            redisStore: env["BENCH_STORE"] == "redis")
    }
}

/// `info,warning` → the relay's LOG_LEVEL for each relay phase; unset: both.
private func levels(_ text: String?) throws -> [String] {
    guard let text, !text.isEmpty else { return ["info", "warning"] }
    let known = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
    let levels = text.split(separator: ",").map { String($0) }
    for level in levels where !known.contains(level) {
        throw BenchError("BENCH_LOG_LEVELS holds \"\(level)\"; use LOG_LEVEL values (\(known.joined(separator: ", "))), comma-separated")
    }
    return levels
}

/// CPU seconds the calling thread has used.
func threadCPUSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// An APNs provider token, written here rather than borrowed from the relay so the ceiling
/// phase depends on nothing but OpenSSL: ES256 over `{"alg","kid"}.{"iss","iat"}`.
func makeProviderToken(key: ES256PrivateKey, keyID: String, teamID: String, issuedAt: Int64) throws -> String {
    let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
    let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
    let signingInput = header + "." + claims
    let signature = try key.sign(Array(signingInput.utf8))
    return signingInput + "." + Base64URL.encode(signature)
}

/// Latencies of one phase, in nanoseconds; percentiles by sorting once at the end.
struct LatencySummary {
    let count: Int
    let p50: Double
    let p99: Double
    let p999: Double
    let max: Double

    /// - Parameter nanos: every measured latency (sorted here).
    init(_ nanos: [UInt64]) {
        let sorted = nanos.sorted()
        count = sorted.count
        func at(_ q: Double) -> Double {
            guard !sorted.isEmpty else { return .nan }
            let index = Swift.min(sorted.count - 1, Int((q * Double(sorted.count)).rounded(.up)) - 1)
            return Double(sorted[Swift.max(0, index)]) / 1e6
        }
        p50 = at(0.50)
        p99 = at(0.99)
        p999 = at(0.999)
        max = sorted.last.map { Double($0) / 1e6 } ?? .nan
    }
}

/// A JSON number, or null when there is nothing to show.
func jsonNumber(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "null" }
    return String(format: "%.\(decimals)f", value)
}
