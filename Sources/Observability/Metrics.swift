// Metrics shaped like swift-metrics: metric objects are created once, cached by the registry and
// kept by their owner, so the hot path is one atomic add with no lookup and no lock.
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
internal import Basics

/// A value that only goes up (requests, errors); Prometheus derives rates from it.
package final class Counter: Sendable {
    package let name: String
    package let labels: [String: String]
    private let storage = Atomic<Int>(0)

    init(name: String, labels: [String: String]) {
        self.name = name
        self.labels = labels
    }

    /// Negative amounts are ignored: a counter that goes down reads as a process restart.
    package func increment(by amount: Int = 1) {
        guard amount > 0 else { return }
        storage.wrappingAdd(amount, ordering: .relaxed)
    }

    package var value: Int { storage.load(ordering: .relaxed) }
}

/// A value that goes up and down (connections open, queue depth).
package final class Gauge: Sendable {
    package let name: String
    package let labels: [String: String]
    /// The Double's bit pattern, so updates stay lock-free.
    private let bits = Atomic<UInt64>(0.0.bitPattern)

    init(name: String, labels: [String: String]) {
        self.name = name
        self.labels = labels
    }

    package func set(_ value: Double) { bits.store(value.bitPattern, ordering: .relaxed) }
    package func set(_ value: Int) { set(Double(value)) }

    package func increment(by amount: Double = 1) {
        var current = bits.load(ordering: .relaxed)
        while true {
            let next = (Double(bitPattern: current) + amount).bitPattern
            let (exchanged, original) = bits.compareExchange(
                expected: current, desired: next, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    package func decrement(by amount: Double = 1) { increment(by: -amount) }

    package var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
}

/// A distribution (push latency, body size) as cumulative buckets. Guarded by a lock rather than
/// per-bucket atomics so a scrape sees a consistent snapshot: `_count` always equals the `+Inf` bucket.
package final class Histogram: Sendable {
    package let name: String
    package let labels: [String: String]
    /// Upper bounds, ascending, without `+Inf` (always added on export).
    package let buckets: [Double]
    private let state: Mutex<Snapshot>

    /// Prometheus client defaults, in seconds: they suit request latencies.
    package static let defaultBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// What a scrape reads; `counts[i]` is non-cumulative (observations in bucket i only).
    package struct Snapshot: Sendable, Equatable {
        package var counts: [Int]
        package var sum: Double
        package var count: Int
    }

    init(name: String, labels: [String: String], buckets: [Double]) {
        self.name = name
        self.labels = labels
        self.buckets = buckets
        state = Mutex(Snapshot(counts: Array(repeating: 0, count: buckets.count + 1), sum: 0, count: 0))
    }

    package func observe(_ value: Double) {
        guard !value.isNaN else { return }
        // Buckets are few (about a dozen): a linear scan beats a binary search here.
        var index = buckets.count
        for (i, bound) in buckets.enumerated() where value <= bound {
            index = i
            break
        }
        state.withLock { s in
            s.counts[index] += 1
            s.sum += value
            s.count += 1
        }
    }

    /// Durations are observed in seconds, the Prometheus base unit.
    package func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) / 1e18)
    }

    package var snapshot: Snapshot { state.withLock { $0 } }
}

/// Owns every metric of a process and renders them for `/metrics`. Asking twice for the same
/// name and labels returns the same object, so callers may look metrics up lazily without
/// creating duplicates.
package final class MetricsRegistry: Sendable {
    /// The `Content-Type` the exposition format 0.0.4 is served with.
    package static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private enum Kind: String, Sendable {
        case counter, gauge, histogram
    }

    private enum Metric: Sendable {
        case counter(Counter)
        case gauge(Gauge)
        case histogram(Histogram)
    }

    private struct Family: Sendable {
        var kind: Kind
        var help: String
        var buckets: [Double]?
        var series: [String: Metric] = [:]
    }

    private let families = Mutex<[String: Family]>([:])

    package init() {}

    /// Names and labels are fixed in code, so a bad one is a programming error and traps at
    /// the first call (in tests) rather than producing a scrape Prometheus rejects.
    package func counter(_ name: String, help: String, labels: [String: String] = [:]) -> Counter {
        let metric = register(name, help: help, kind: .counter, labels: labels, buckets: nil) {
            .counter(Counter(name: name, labels: labels))
        }
        guard case .counter(let counter) = metric else { preconditionFailure("\(name) is not a counter") }
        return counter
    }

    package func gauge(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        let metric = register(name, help: help, kind: .gauge, labels: labels, buckets: nil) {
            .gauge(Gauge(name: name, labels: labels))
        }
        guard case .gauge(let gauge) = metric else { preconditionFailure("\(name) is not a gauge") }
        return gauge
    }

    /// Every series of one histogram shares the buckets of its first registration, as
    /// Prometheus queries across series expect.
    package func histogram(
        _ name: String, help: String, labels: [String: String] = [:], buckets: [Double] = Histogram.defaultBuckets
    ) -> Histogram {
        precondition(labels["le"] == nil, "\(name): the label le is reserved for histogram buckets")
        let bounds = Array(Set(buckets.filter { $0.isFinite })).sorted()
        let metric = register(name, help: help, kind: .histogram, labels: labels, buckets: bounds) {
            .histogram(Histogram(name: name, labels: labels, buckets: bounds))
        }
        guard case .histogram(let histogram) = metric else { preconditionFailure("\(name) is not a histogram") }
        return histogram
    }

    /// Stops rendering one series (a gauge of something that is gone, which would otherwise
    /// show its last value for ever); asking for it again makes it anew.
    package func remove(_ name: String, labels: [String: String]) {
        let key = Self.seriesKey(labels)
        families.withLock { families in
            _ = families[name]?.series.removeValue(forKey: key)
        }
    }

    private func register(
        _ name: String, help: String, kind: Kind, labels: [String: String], buckets: [Double]?,
        make: () -> Metric
    ) -> Metric {
        precondition(Self.isValidMetricName(name), "invalid metric name \(name)")
        for key in labels.keys {
            precondition(Self.isValidLabelName(key), "\(name): invalid label name \(key)")
        }
        let key = Self.seriesKey(labels)
        return families.withLock { families in
            if var family = families[name] {
                precondition(family.kind == kind, "\(name) is already registered as a \(family.kind.rawValue)")
                if let existing = family.series[key] { return existing }
                var metric = make()
                if case .histogram = metric, let shared = family.buckets, shared != buckets {
                    metric = .histogram(Histogram(name: name, labels: labels, buckets: shared))
                }
                family.series[key] = metric
                families[name] = family
                return metric
            }
            let metric = make()
            var family = Family(kind: kind, help: help, buckets: buckets)
            family.series[key] = metric
            families[name] = family
            return metric
        }
    }

    /// The Prometheus text exposition format 0.0.4: families sorted by name, series by labels,
    /// so successive scrapes diff cleanly.
    package func prometheusText() -> String {
        let snapshot = families.withLock { $0 }
        var out = ""
        for name in snapshot.keys.sorted() {
            let family = snapshot[name]!
            out += "# HELP \(name) \(Self.escapeHelp(family.help))\n"
            out += "# TYPE \(name) \(family.kind.rawValue)\n"
            for key in family.series.keys.sorted() {
                switch family.series[key]! {
                case .counter(let c):
                    out += "\(name)\(Self.labelText(c.labels)) \(c.value)\n"
                case .gauge(let g):
                    out += "\(name)\(Self.labelText(g.labels)) \(Self.formatValue(g.value))\n"
                case .histogram(let h):
                    let s = h.snapshot
                    var cumulative = 0
                    for (i, bound) in h.buckets.enumerated() {
                        cumulative += s.counts[i]
                        out += "\(name)_bucket\(Self.labelText(h.labels, le: Self.formatValue(bound))) \(cumulative)\n"
                    }
                    out += "\(name)_bucket\(Self.labelText(h.labels, le: "+Inf")) \(s.count)\n"
                    out += "\(name)_sum\(Self.labelText(h.labels)) \(Self.formatValue(s.sum))\n"
                    out += "\(name)_count\(Self.labelText(h.labels)) \(s.count)\n"
                }
            }
        }
        return out
    }

    // MARK: Format helpers

    static func isValidMetricName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first else { return false }
        func letter(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || c == ":" }
        return letter(first) && name.unicodeScalars.allSatisfy { letter($0) || ($0 >= "0" && $0 <= "9") }
    }

    static func isValidLabelName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, !name.hasPrefix("__") else { return false }
        func letter(_ c: Unicode.Scalar) -> Bool { (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" }
        return letter(first) && name.unicodeScalars.allSatisfy { letter($0) || ($0 >= "0" && $0 <= "9") }
    }

    /// A canonical key so the same labels in any order find the same series.
    static func seriesKey(_ labels: [String: String]) -> String {
        labels.keys.sorted().map { "\($0)=\(escapeLabelValue(labels[$0]!))" }.joined(separator: ",")
    }

    static func labelText(_ labels: [String: String], le: String? = nil) -> String {
        if labels.isEmpty && le == nil { return "" }
        var parts = labels.keys.sorted().map { "\($0)=\"\(escapeLabelValue(labels[$0]!))\"" }
        if let le { parts.append("le=\"\(le)\"") }
        return "{" + parts.joined(separator: ",") + "}"
    }

    /// Label values escape backslash, double quote and line feed (exposition format 0.0.4).
    static func escapeLabelValue(_ s: String) -> String {
        guard s.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return s }
        var out = ""
        for c in s {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// HELP text escapes only backslash and line feed.
    static func escapeHelp(_ s: String) -> String {
        // Scalar by scalar: replacing(_:with:) with a string would link _StringProcessing.
        var out = ""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// Whole numbers print without `.0` (`le="1"`, as Prometheus' own clients write them),
    /// infinities and NaN in the spellings the format defines.
    static func formatValue(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "+Inf" }
        if value == -.infinity { return "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
