// The kinds of push the soak sends, and every answer judged by the relay's status table.
import Synchronization
import BenchSupport

/// What a push was meant to meet at the emulator (its device token's prefix picks the fault).
enum PushKind: String, CaseIterable, Sendable {
    case normal
    /// `dead…`: Apple answers 410 Unregistered; the relay must answer 410.
    case dead
    /// `de1a…`: Apple answers 200 after 2 s.
    case slow
    /// `0ff0…`: Apple never answers; at its push deadline the relay holds the push (a written,
    /// unanswered push), answering 201 held, or 504 when it cannot.
    case neverAnswered

    var tokenPrefix: String {
        switch self {
        case .normal: "a1b2"
        case .dead: "dead"
        case .slow: "de1a"
        case .neverAnswered: "0ff0"
        }
    }
}

/// One answer from the relay, as much of it as the criteria need.
struct Answer {
    var status: Int
    var retryAfter: Bool
    var apnsID: UInt128?
    var close: Bool
    /// `X-Relay-Held: true`: the relay kept the push to deliver once Apple takes it.
    var held: Bool
}

/// Every answer of the run, tallied by kind; shared by the client threads.
final class Tally: Sendable {
    struct Counts: Sendable {
        var byKindAndStatus: [PushKind: [Int: Int]] = [:]
        /// apns-ids of every 201 but the never-answered kind's (Apple never answers those: held,
        /// they stay in the store until their TTL).
        var accepted: [UInt128] = []
        /// 201s of the never-answered kind: held after the push deadline.
        var neverAnsweredHeld = 0
        var createdWithoutID = 0
        /// A 4xx for a token that was not dead: Mastodon would delete a live subscription.
        var wrong4xx = 0
        /// A non-2xx the status table does not allow (a 502, a 503 without Retry-After, a 500…).
        var wrongStatus = 0
        /// Sent (or tried) and never answered: connection refused, closed or timed out.
        var unanswered = 0
        var examples: [String] = []
        /// Normal pushes sent once the run was calm again, and how many of them got 201: a relay
        /// that answers 503 for ever (out of stream ids, stuck in back-off) keeps every other
        /// criterion, but not this one.
        var calmNormal = 0
        var calmNormalCreated = 0
        /// Every normal push's send time and status (0: no answer): a few hundred thousand at most.
        var normalLog: [(sentAt: UInt64, status: Int)] = []
        /// Every push's send time, kind and answer (status 0: none), and whether it was held.
        var heldLog: [(sentAt: UInt64, kind: PushKind, status: Int, held: Bool)] = []
    }

    private let counts = Mutex(Counts())
    /// Pushes sent from this monotonic instant on count as calm (`UInt64.max`: not yet).
    private let calmFrom = Atomic<UInt64>(.max)

    func startCalm(at instant: UInt64) { calmFrom.store(instant, ordering: .relaxed) }

    /// - Parameter sentAt: when the request went out (monotonic nanoseconds).
    func record(_ kind: PushKind, _ answer: Answer, sentAt: UInt64) {
        let calm = kind == .normal && sentAt >= calmFrom.load(ordering: .relaxed)
        counts.withLock { c in
            if calm {
                c.calmNormal += 1
                if answer.status == 201 { c.calmNormalCreated += 1 }
            }
            c.byKindAndStatus[kind, default: [:]][answer.status, default: 0] += 1
            if kind == .normal { c.normalLog.append((sentAt, answer.status)) }
            c.heldLog.append((sentAt, kind, answer.status, answer.status == 201 && answer.held))
            var wrong: String?
            switch answer.status {
            case 201 where kind == .neverAnswered:
                c.neverAnsweredHeld += 1
            case 201:
                if let id = answer.apnsID { c.accepted.append(id) } else { c.createdWithoutID += 1 }
            case 410 where kind == .dead:
                break
            case 400..<500:
                c.wrong4xx += 1
                wrong = "\(answer.status) for a \(kind.rawValue) token"
            case 503 where answer.retryAfter, 504:
                // The status table: 503 always carries Retry-After; 504 (no answer before the
                // push deadline) carries none.
                break
            default:
                c.wrongStatus += 1
                wrong = "\(answer.status)\(answer.retryAfter ? "" : " without Retry-After") for a \(kind.rawValue) token"
            }
            if let wrong, c.examples.count < 5 { c.examples.append(wrong) }
        }
    }

    func unanswered(_ kind: PushKind, _ why: String, sentAt: UInt64) {
        let calm = kind == .normal && sentAt >= calmFrom.load(ordering: .relaxed)
        counts.withLock { c in
            if calm { c.calmNormal += 1 }
            c.unanswered += 1
            if kind == .normal { c.normalLog.append((sentAt, 0)) }
            c.heldLog.append((sentAt, kind, 0, false))
            c.byKindAndStatus[kind, default: [:]][0, default: 0] += 1
            if c.examples.count < 5 { c.examples.append("no answer for a \(kind.rawValue) token: \(why)") }
        }
    }

    var snapshot: Counts { counts.withLock { $0 } }

    /// Pushes of any kind sent from `from` until `to` (monotonic nanoseconds), how many of them
    /// were answered 201 held, and the first few that were not (kind, answer, when).
    func pushes(sentFrom from: UInt64, to: UInt64) -> (sent: Int, held: Int, others: [String]) {
        counts.withLock { c in
            var sent = 0, held = 0
            var others: [String] = []
            for push in c.heldLog where push.sentAt >= from && push.sentAt < to {
                sent += 1
                if push.held {
                    held += 1
                } else if others.count < 5 {
                    others.append("\(push.kind.rawValue) \(push.status) sent \(fixed(Double(push.sentAt - from) / 1e9, 2)) s in")
                }
            }
            return (sent, held, others)
        }
    }

    /// Normal pushes sent inside `windows` (monotonic nanoseconds), and how many of them got 201.
    func normalPushes(sentIn windows: [(from: UInt64, to: UInt64)]) -> (sent: Int, created: Int) {
        counts.withLock { c in
            var sent = 0, created = 0
            for push in c.normalLog where windows.contains(where: { push.sentAt >= $0.from && push.sentAt < $0.to }) {
                sent += 1
                if push.status == 201 { created += 1 }
            }
            return (sent, created)
        }
    }
}
