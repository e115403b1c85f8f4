import EventLoop
import Synchronization

/// Where a connection's answers come back to it: one per connection, made once.
///
/// The responder's completion and the hop back to the connection's loop each capture only this
/// object, so neither closure needs a context of its own (a closure that captures one class
/// reference uses it as its context; one that captures more was an allocation per request, two
/// per push). The connection is held here only while its request is answered, so the two do not
/// keep each other alive.
final class AnswerSlot: Sendable {
    private struct Pending: Sendable {
        var connection: LoopBound<HTTPConnection>?
        var answer: HTTPResponse?
    }

    private let pending = Mutex(Pending())

    /// On the connection's loop, before the responder runs: its answer goes to `connection`.
    func expect(_ connection: LoopBound<HTTPConnection>) {
        pending.withLock { $0 = Pending(connection: connection) }
    }

    /// The responder's completion, from any thread: the answer waits here for the loop.
    func deliver(_ answer: HTTPResponse) {
        let loop = pending.withLock { pending -> EventLoop? in
            pending.answer = answer
            return pending.connection?.loop
        }
        // Always through the loop's queue, even on that loop: the connection then reads its next
        // request, which must not happen inside this one's `processInput`.
        loop?.execute { self.hand() }
    }

    /// On the loop: the answer to the connection, which may then expect its next one.
    private func hand() {
        let (connection, answer) = pending.withLock { pending in
            defer { pending = Pending() }
            return (pending.connection, pending.answer)
        }
        guard let connection, let answer else { return }
        connection.value.finish(answer)
    }
}
