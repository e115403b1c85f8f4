import Glibc
@testable import EventLoop

/// A mutable cell for loop-confined closures.
final class Box<T> {
    var value: T
    init(_ value: T) { self.value = value }
}

/// Forwards to `inner` and reports the first drain.
final class DrainNotifier: TCPStreamHandler {
    let inner: TCPStreamHandler
    let onDrain: () -> Void
    init(inner: TCPStreamHandler, onDrain: @escaping () -> Void) { self.inner = inner; self.onDrain = onDrain }
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) { inner.streamDidRead(stream, bytes) }
    func streamDidDrainWrites(_ stream: TCPStream) { onDrain() }
    func streamDidClose(_ stream: TCPStream, error: SocketError?) { inner.streamDidClose(stream, error: error) }
}

/// Reads one buffer, pauses, and resumes 1 ms later: a reader slower than the writer.
final class SlowReader: TCPStreamHandler {
    let expected: [UInt8]
    var offset = 0
    var intact = true
    let done: (Bool) -> Void
    init(expected: [UInt8], done: @escaping (Bool) -> Void) { self.expected = expected; self.done = done }
    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        if offset + bytes.count > expected.count {
            intact = false
        } else if expected.withUnsafeBytes({ memcmp($0.baseAddress! + offset, bytes.baseAddress!, bytes.count) }) != 0 {
            intact = false
        }
        offset += bytes.count
        if offset >= expected.count { done(intact && offset == expected.count); return }
        stream.pauseReading()
        stream.loop.schedule(after: .milliseconds(1)) { stream.resumeReading() }
    }
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        if offset < expected.count { done(false) }
    }
}

/// Collects what the peer sends; on its EOF answers after `delay` ("answer to …"), and
/// with `repeats` > 1 keeps writing every `delay` until the stream closes.
final class LateAnswerer: TCPStreamHandler {
    let delay: Duration
    var repeats: Int
    let onEOF: () -> Void
    let onAnswer: () -> Void
    let onClose: (SocketError?) -> Void
    var received: [UInt8] = []

    init(delay: Duration, repeats: Int = 1, onEOF: @escaping () -> Void = {}, onAnswer: @escaping () -> Void = {},
         onClose: @escaping (SocketError?) -> Void) {
        self.delay = delay
        self.repeats = repeats
        self.onEOF = onEOF
        self.onAnswer = onAnswer
        self.onClose = onClose
    }

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        received.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
    }
    func streamDidReadEOF(_ stream: TCPStream) {
        onEOF()
        answer(stream)
    }
    private func answer(_ stream: TCPStream) {
        stream.loop.schedule(after: delay) { [self] in
            guard stream.isOpen else { return }
            repeats -= 1
            if repeats == 0 {
                onAnswer()
                stream.write(Array("answer to ".utf8) + received)
                stream.closeAfterFlush()
            } else {
                stream.write(received)
                answer(stream)
            }
        }
    }
    func streamDidDrainWrites(_ stream: TCPStream) {}
    func streamDidClose(_ stream: TCPStream, error: SocketError?) { onClose(error) }
}
