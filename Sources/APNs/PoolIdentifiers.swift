internal import Basics

/// Identifies one push inside the pool. Each shard hands out ids of its own residue
/// (`index + 1 + k × shards`, `APNsPoolShard.enqueue`), so a push handed to another shard keeps
/// its id there.
struct PushID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let value: UInt64
    init(_ value: UInt64) { self.value = value }
    static func < (a: PushID, b: PushID) -> Bool { a.value < b.value }
    var description: String { "push#\(value)" }
}

extension PushID: SequentialKey {
    var sequence: UInt64 { value }
}

/// Identifies one APNs connection; the state machine hands out a new one for every connect.
struct ConnectionID: Hashable, Sendable, Comparable, CustomStringConvertible {
    let value: UInt64
    init(_ value: UInt64) { self.value = value }
    static func < (a: ConnectionID, b: ConnectionID) -> Bool { a.value < b.value }
    var description: String { "conn#\(value)" }
}

/// What the pool's state machine holds for each push on behalf of its owner, in the push's one
/// record (`PoolStateMachine.Push`) and hands back in the actions that send or end it: for the
/// client, the notification and the caller's completion (`PushRequest`).
protocol PoolRequest: Sendable {
    var id: PushID { get }
}
