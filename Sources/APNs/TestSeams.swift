import EventLoop
import HTTP2
import Transport

// What the client's tests reach into, kept apart from the types they test: the pool's
// connections as seen per loop, a network failure on demand, and stream ids near HTTP/2's end.

extension APNsClient {
    /// Moves the next stream id of every open production connection (see
    /// `HTTP2ClientSession.setNextStreamID`); returns how many took it.
    func setNextStreamID(_ streamID: Int32) async -> Int { await production.setNextStreamID(streamID) }

    /// The production connections owned by `loop` that are ready.
    func readyConnections(on loop: EventLoop) -> Int { production.readyConnections(on: loop) }

    /// Breaks the production connections owned by `loop` as a network failure would.
    func breakConnections(on loop: EventLoop) async -> Int { await production.breakConnections(on: loop) }
}

extension APNsPool {
    /// Moves the next stream id of every open connection, so a test can bring them to the end
    /// of HTTP/2's 2^31 ids. Returns how many connections took it.
    func setNextStreamID(_ streamID: Int32) async -> Int {
        var moved = 0
        for shard in shards {
            moved += await onLoop(of: shard) {
                shard.connections.values.count { connection in (try? connection.setNextStreamID(streamID)) != nil }
            }
        }
        return moved
    }

    /// Ready connections of the shard on `loop` (0 for a loop without a shard), as last published.
    func readyConnections(on loop: EventLoop) -> Int {
        shards.first { $0.loop === loop }?.published.open ?? 0
    }

    /// Breaks the open connections of the shard on `loop` as a network failure would (their
    /// slots back off); returns how many there were.
    func breakConnections(on loop: EventLoop) async -> Int {
        guard let shard = shards.first(where: { $0.loop === loop }) else { return 0 }
        return await onLoop(of: shard) {
            let open = Array(shard.connections.values)
            for connection in open { connection.breakLikeTheNetwork() }
            return open.count
        }
    }

    private func onLoop(of shard: APNsPoolShard, _ body: @escaping @Sendable () -> Int) async -> Int {
        await withCheckedContinuation { (done: CheckedContinuation<Int, Never>) in
            shard.loop.execute { done.resume(returning: body()) }
        }
    }
}

extension APNsConnection {
    /// Ends the connection as a network failure would (the pool sees it fail).
    func breakLikeTheNetwork() {
        h2?.close(TransportError(.protocolError, "broken by a test"))
    }

    /// Moves the id of this connection's next stream (see `HTTP2ClientSession.setNextStreamID`).
    func setNextStreamID(_ streamID: Int32) throws {
        guard let h2 else { throw HTTP2Error(code: .sessionClosed, message: "connection \(id.value) is not open") }
        try h2.setNextStreamID(streamID)
    }
}
