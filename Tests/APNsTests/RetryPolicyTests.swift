import Testing
@testable import APNsCore
@testable import APNs

/// The library's retry policy (`APNsRetryPolicy.library`) as the state machine applies it.
@Suite("Retry policy")
struct RetryPolicyTests {
    static func libraryPool() -> Pool {
        warmPool(size: 2) {
            $0.retriesTooManyRequests = APNsRetryPolicy.library.retriesTooManyRequests
            $0.retryDelay = APNsRetryPolicy.library.delayPerAttempt
        }
    }

    @Test("a 503 is retried after 0.5 s, then after 1 s, then Apple's answer ends the push")
    func delayedRetries() {
        var pool = Self.libraryPool()
        let answer = response(503, .serviceUnavailable)
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        #expect(pool.handle(.streamCompleted(first, p(1), .classify(answer)), now: at(1)) == [.wakeUp(after: .milliseconds(500))])
        #expect(sends(pool.handle(.timerFired, now: at(1.4))).isEmpty)
        let second = sends(pool.handle(.timerFired, now: at(1.5)))[p(1)]
        #expect(second != nil)
        #expect(pool.handle(.streamCompleted(second!, p(1), .classify(answer)), now: at(2)) == [.wakeUp(after: .seconds(1))])
        #expect(sends(pool.handle(.timerFired, now: at(2.9))).isEmpty)
        let third = sends(pool.handle(.timerFired, now: at(3)))[p(1)]
        #expect(third != nil)
        let last = pool.handle(.streamCompleted(third!, p(1), .classify(answer)), now: at(3.1))
        // Out of retries, Apple's last answer is the push's answer.
        #expect(last == [.completePush(p(1), answer)])
        #expect(pool.livePushCount == 0)
    }

    @Test("Apple's last answer stands when the retry ends otherwise: its deadline, a shutdown, or in the machine that adopted it")
    func lastAnswerStands() {
        let answer = response(503, .serviceUnavailable)
        // The deadline passes while the retry waits out its delay.
        var pool = Self.libraryPool()
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(2)), now: at(0)))[p(1)]!
        #expect(pool.handle(.streamCompleted(first, p(1), .classify(answer)), now: at(1)) == [.wakeUp(after: .milliseconds(500))])
        #expect(pool.handle(.timerFired, now: at(2)) == [.completePush(p(1), answer)])
        // A shutdown fails the waiting retry.
        var stopping = Self.libraryPool()
        let conn = sends(stopping.handle(.enqueue(p(2), deadline: at(8)), now: at(0)))[p(2)]!
        _ = stopping.handle(.streamCompleted(conn, p(2), .classify(answer)), now: at(1))
        #expect(stopping.handle(.shutdown, now: at(1)).contains(.completePush(p(2), answer)))
        // A retry handed to another machine takes the answer with it.
        var handing = warmPool(size: 1) { $0.handsOffRetries = true; $0.retryDelay = .zero }
        _ = handing.handle(.enqueue(p(3), deadline: at(8)), now: at(0))
        guard case .handOff(let moved)? = handing.handle(.streamCompleted(c(1), p(3), .classify(answer)), now: at(1)).first else {
            Issue.record("the retry was not handed off")
            return
        }
        var other = Pool(configuration: .init(poolSize: 1, shard: 1, shards: 2), random: ConstantRandom(value: 0))
        #expect(other.handle(.adopt(moved), now: at(1)) == [])
        #expect(other.handle(.shutdown, now: at(1)) == [.completePush(p(3), answer), .shutdownComplete])
    }

    @Test("429 TooManyRequests is retried under the library's policy")
    func tooManyRequestsRetried() {
        var pool = Self.libraryPool()
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        #expect(pool.handle(.streamCompleted(first, p(1), .classify(response(429, .tooManyRequests))), now: at(0))
                == [.wakeUp(after: .milliseconds(500))])
        #expect(sends(pool.handle(.timerFired, now: at(0.5)))[p(1)] != nil)
    }

    @Test("a delayed retry asks to be woken at its due time, so it never waits for a late tick")
    func delayedRetryWakesOnTime() {
        var pool = Self.libraryPool()
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(0.8)), now: at(0)))[p(1)]!
        // Due at 0.6 s, deadline 0.8 s: a tick may come only after the deadline; the wake-up comes at 0.6 s.
        let actions = pool.handle(.streamCompleted(first, p(1), .classify(response(503, .serviceUnavailable))), now: at(0.1))
        #expect(actions == [.wakeUp(after: .milliseconds(500))])
        #expect(sends(pool.handle(.timerFired, now: at(0.6)))[p(1)] != nil)
    }

    @Test("a retry whose delay would pass the deadline is not made")
    func neverPastTheDeadline() {
        var pool = Self.libraryPool()
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(1)), now: at(0)))[p(1)]!
        let actions = pool.handle(.streamCompleted(first, p(1), .classify(response(500, .internalServerError))), now: at(0.6))
        // No retry: Apple's answer stands.
        #expect(actions == [.completePush(p(1), response(500, .internalServerError))])
    }

    @Test("the relay's policy retries at once and leaves 429 to the sender")
    func relayPolicy() {
        var pool = warmPool(size: 2) {
            $0.retriesTooManyRequests = APNsRetryPolicy.relay.retriesTooManyRequests
            $0.retryDelay = APNsRetryPolicy.relay.delayPerAttempt
        }
        let first = sends(pool.handle(.enqueue(p(1), deadline: at(8)), now: at(0)))[p(1)]!
        #expect(sends(pool.handle(.streamCompleted(first, p(1), .classify(response(503, .shutdown))), now: at(0)))[p(1)] != nil)
        let conn = sends(pool.handle(.enqueue(p(2), deadline: at(8)), now: at(0)))[p(2)]!
        let tooMany = response(429, .tooManyRequests)
        #expect(pool.handle(.streamCompleted(conn, p(2), .classify(tooMany)), now: at(0)) == [.completePush(p(2), tooMany)])
    }
}
