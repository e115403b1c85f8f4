import Foundation
import HTTPServer
import Testing

/// Seeded random inputs: replayable, so a failure names its seed and iteration.
/// `HTTP_FUZZ_SECONDS=n` turns the bounded run into one that keeps drawing inputs for
/// n seconds (what `make fuzz` uses where libFuzzer is unavailable).
@Suite("HTTP/1.1 parser: seeded random inputs")
struct HTTPParserFuzzTests {
    @Test("20,000 random inputs and mutations never break the parser's contract")
    func seededRandom() {
        let seconds = ProcessInfo.processInfo.environment["HTTP_FUZZ_SECONDS"].flatMap(Int.init)
        let seed: UInt64 = ProcessInfo.processInfo.environment["HTTP_FUZZ_SEED"].flatMap(UInt64.init) ?? 0x5EED_1234
        var rng = SplitMix64(seed: seed)
        let deadline = seconds.map { ContinuousClock.now + .seconds($0) }
        var iteration = 0
        var outcomes = [0, 0, 0]  // request seen, error, needs more
        while deadline.map({ ContinuousClock.now < $0 }) ?? (iteration < 20_000) {
            let input = randomInput(using: &rng)
            let limits = iteration % 2 == 0 ? HTTPParserLimits() : tinyLimits
            let cuts = randomCuts(input.count, using: &rng)
            if let breach = checkParserContract(input, limits: limits, cuts: cuts) {
                Issue.record("seed \(seed) iteration \(iteration): \(breach)\ninput: \(input)")
                return
            }
            let outcome = parse(input, limits: limits).outcome
            if outcome.failed { outcomes[1] += 1 } else if outcome.events.isEmpty { outcomes[2] += 1 } else { outcomes[0] += 1 }
            iteration += 1
        }
        // The generator must reach all three endings, or the run tests less than it claims.
        #expect(outcomes.allSatisfy { $0 > 0 }, "requests/errors/needs-more: \(outcomes)")
    }

    @Test("mutations of valid requests, fed one byte at a time, match the whole-input result")
    func bytewiseMutations() {
        var rng = SplitMix64(seed: 42)
        for iteration in 0..<2_000 {
            let input = mutate(Array(fuzzSeeds[iteration % fuzzSeeds.count].utf8), using: &rng)
            let cuts = Array(0..<input.count)
            if let breach = checkParserContract(input, limits: HTTPParserLimits(), cuts: cuts) {
                Issue.record("iteration \(iteration): \(breach)")
                return
            }
        }
    }
}
