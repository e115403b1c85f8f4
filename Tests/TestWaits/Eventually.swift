/// Polls `condition` until it holds or `limit` has passed on the continuous clock, and says
/// whether it held. Between checks the caller's task suspends (it never blocks a thread of
/// Swift's task pool, which other tests share), a few milliseconds at first and at most 20 ms.
/// The condition is checked once more when the limit has passed, so a poller the machine starved
/// of CPU still sees a condition that came true meanwhile: a slow machine makes the wait longer,
/// never the answer false.
public func eventually(within limit: Duration = .seconds(10),
                       _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + limit
    var pause = Duration.milliseconds(1)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: pause)
        pause = min(pause * 2, .milliseconds(20))
    }
    return try await condition()
}
