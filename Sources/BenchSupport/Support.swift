// Pieces the benchmark and the soak share: errors, the clock, random bytes, apns-ids as numbers.
import Foundation
import Basics

/// Why the benchmark stopped; the message says what to fix.
package struct BenchError: Error, CustomStringConvertible {
    package let message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}

/// A number from the environment variable `name`, `fallback` when unset or empty; one line of
/// error naming the variable when it is not a number in `range`.
package func environmentNumber(_ name: String, _ fallback: Double, _ range: ClosedRange<Double>) throws -> Double {
    guard let text = ProcessInfo.processInfo.environment[name], !text.isEmpty else { return fallback }
    guard let value = Double(text), range.contains(value) else {
        throw BenchError("\(name) must be a number in \(range.lowerBound)...\(range.upperBound), not \"\(text)\"")
    }
    return value
}

/// Monotonic nanoseconds: cheap enough to stamp every request.
@inline(__always)
package func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

package func randomBytes(_ count: Int) -> [UInt8] {
    var generator = SystemRandomNumberGenerator()
    return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
}

/// Parses a UUID's 32 hex digits (dashes skipped, either case) into one number, so a
/// million ids fit in a compact set; nil for anything else.
package func uuidKey<S: Sequence>(_ text: S) -> UInt128? where S.Element == UInt8 {
    var value: UInt128 = 0
    var digits = 0
    for c in text {
        if c == UInt8(ascii: "-") { continue }
        guard let v = Hex.value(c) else { return nil }
        value = value << 4 | UInt128(v)
        digits += 1
    }
    return digits == 32 ? value : nil
}

/// `value` with `decimals` digits, or "n/a" when there is nothing to show.
package func fixed(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "n/a" }
    return String(format: "%.\(decimals)f", value)
}

