/// What a loop tells whoever watches it as it runs: the tests, which ask whether an idle loop
/// sleeps, which submissions needed a wake-up and how many timers some work arms. Loops made
/// without one (every loop of the product) pay one nil check per wake-up, wake-up write and
/// timer.
package protocol EventLoopProbe: Sendable {
    /// `epoll_wait` returned. On the loop's thread.
    func loopWokeUp()
    /// A job from another thread wrote the loop's eventfd to wake it. On that thread.
    func wakeUpSignalled()
    /// `schedule` made a timer. On the loop's thread.
    func timerScheduled()
}
