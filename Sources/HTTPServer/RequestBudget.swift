// The budget for bytes held by half-received requests across the whole server, as pure logic:
// connections report what they hold, this says who stops reading and who is cut. No I/O, no
// clock reads.

/// A global cap on the memory of requests still arriving, so thousands of slow senders can't
/// hold more than `limit` between them (each one alone is bounded by the request deadline and
/// the body limit, but not their sum).
///
/// Over the limit, a connection that holds at least its fair share (`limit / open`) stops
/// being read: its bytes wait in the kernel and TCP slows its sender. Then the slowest
/// senders (fewest bytes per second since their request began) among those holding a fair
/// share are answered 408 (which Mastodon retries) until the total is back under
/// `resumeBelow`, where paused connections read again. Small holders are never cut: they are
/// not what fills the budget.
struct RequestBudget {
    let limit: Int

    /// Where paused connections resume and cutting stops: an eighth under the limit, so a
    /// connection does not flap between paused and read at every byte.
    var resumeBelow: Int { limit - limit / 8 }

    /// A half-received request as the budget sees it.
    struct Candidate: Equatable {
        /// Bytes of memory it holds.
        var held: Int
        /// Bytes of the request received so far.
        var received: Int
        /// When its first byte arrived, in `LoopClock` nanoseconds.
        var since: Int64
    }

    /// `nanoseconds` in milliseconds, for a sender's pace: divided as the `Duration`s it is
    /// made of, so paces compare, and tie, as they always have.
    static func milliseconds(_ nanoseconds: Int64) -> Double {
        Duration.nanoseconds(nanoseconds) / .milliseconds(1)
    }

    /// The share of the limit one connection may hold when `open` are open.
    func fairShare(open: Int) -> Int { max(1, limit / max(1, open)) }

    /// Whether a connection holding `held` bytes should stop being read now.
    func shouldPause(held: Int, total: Int, open: Int) -> Bool {
        total > limit && held > 0 && held >= fairShare(open: open)
    }

    /// Whether connections paused for the budget may read again.
    func mayResume(total: Int) -> Bool { total < resumeBelow }

    /// The indices of `candidates` to cut, slowest first, until what they hold brings `total`
    /// under `resumeBelow`; empty while `total` is within the limit.
    func victims(total: Int, open: Int, candidates: [Candidate], now: Int64) -> [Int] {
        guard total > limit else { return [] }
        let share = fairShare(open: open)
        func rate(_ c: Candidate) -> Double {
            let elapsed = max(Self.milliseconds(now - c.since), 1)
            return Double(c.received) / elapsed
        }
        let ranked = candidates.indices.filter { candidates[$0].held >= share }.sorted {
            let (a, b) = (rate(candidates[$0]), rate(candidates[$1]))
            return a != b ? a < b : candidates[$0].since < candidates[$1].since
        }
        var remaining = total
        var cut: [Int] = []
        for index in ranked where remaining >= resumeBelow {
            cut.append(index)
            remaining -= candidates[index].held
        }
        return cut
    }
}
