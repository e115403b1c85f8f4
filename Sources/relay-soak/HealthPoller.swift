import Foundation
import Synchronization
import BenchSupport

/// Polls `GET /health` every 250 ms while the soak runs: a liveness probe must never fail.
final class HealthPoller: Sendable {
    struct Counts: Sendable {
        var polls = 0
        var failures = 0
        var firstFailure: String?
    }
    let counts = Mutex(Counts())
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    init(port: Int, runStart: UInt64) {
        Thread { [self] in
            while !stopped.load(ordering: .relaxed) {
                let result = httpGetStatus(port: port, path: "/health")
                let at = Double(monotonicNanos() - runStart) / 1e9
                counts.withLock { c in
                    c.polls += 1
                    switch result {
                    case .success(200): break
                    case .success(let status):
                        c.failures += 1
                        if c.firstFailure == nil { c.firstFailure = "t=\(fixed(at, 1)) s: status \(status)" }
                    case .failure(let error):
                        c.failures += 1
                        if c.firstFailure == nil { c.firstFailure = "t=\(fixed(at, 1)) s: \(error.message)" }
                    }
                }
                usleep(250_000)
            }
            finished.store(true, ordering: .relaxed)
        }.start()
    }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        while !finished.load(ordering: .relaxed) { usleep(10_000) }
    }
}
