import EventLoop
import Synchronization

/// Where a connection's answers come back to it: one per connection, made once.
///
/// The responder's completion and the hop back to the connection's loop each capture only this
/// object, so neither closure needs a context of its own (a closure that captures one class
/// reference uses it as its context; one that captures more is an allocation per request, two
/// per push). The connection is held here only while its request is answered, so the two do not
/// keep each other alive.
final class AnswerSlot: Sendable {
    /// The connection while its request is answered, touched on its loop only.
    private final class Held {
        var connection: HTTPConnection?
    }

    /// Made once with the slot: a `LoopBound` made per request would look up its generic
    /// type's metadata each time (its initializer is not specialised outside its module).
    private let held: LoopBound<Held>
    /// The answer, from whichever thread the responder finished on, until the loop takes it.
    private let answer = Mutex<HTTPResponse?>(nil)

    /// - Parameter loop: the connection's loop, where answers are handed to it.
    init(loop: EventLoop) {
        held = LoopBound(Held(), on: loop)
    }

    /// On the connection's loop, before the responder runs: its answer goes to `connection`.
    func expect(_ connection: HTTPConnection) {
        held.value.connection = connection
    }

    /// The responder's completion, from any thread: the answer waits here for the loop.
    func deliver(_ answer: HTTPResponse) {
        self.answer.withLock { $0 = answer }
        // Always through the loop's queue, even on that loop: the connection then reads its next
        // request, which must not happen inside this one's `processInput`.
        held.loop.execute { self.hand() }
    }

    /// On the loop: the answer to the connection, which may then expect its next one.
    private func hand() {
        let held = self.held.value
        let answer = self.answer.withLock { answer in
            defer { answer = nil }
            return answer
        }
        guard let connection = held.connection, let answer else { return }
        held.connection = nil
        connection.finish(answer)
    }
}
