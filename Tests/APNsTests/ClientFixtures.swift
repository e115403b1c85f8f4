import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import MockAPNs
import TestWaits
@testable import APNsCore
@testable import APNs

enum Fixture {
    static let team = "TEAM123456"
    static let kid = "KEYID12345"
    static let topic = "com.example.app"
    static let key = try! ES256PrivateKey.generate()
    static let realNow = Int64(Date().timeIntervalSince1970)

    /// A 64-digit token starting with `prefix` (a fault from the emulator's table) and unique by `n`.
    static func token(_ prefix: String = "", _ n: Int = 0) -> DeviceToken {
        let number = String(n, radix: 16)
        let fill = String(repeating: "a", count: 64 - prefix.count - number.count)
        return try! DeviceToken(prefix + fill + number)
    }

    static func notification(_ prefix: String = "", _ n: Int = 0, expiration: Int? = nil,
                             collapseID: String? = nil) -> APNsNotification {
        let payload = try! APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        return try! APNsNotification(token: token(prefix, n), topic: topic, payload: payload,
                                     expiration: expiration, collapseID: collapseID)
    }
}

/// Offsets added to the real Unix time, so a test can age tokens without sleeping.
final class Clocks: Sendable {
    let client = Atomic<Int64>(0)
    let server = Atomic<Int64>(0)
}

/// Counts how many times each push ended: every push must end exactly once.
final class Ledger: Sendable {
    private let state = Mutex<(ends: [Int: Int], results: [Int: Result<APNsResponse, APNsError>], order: [Int])>(([:], [:], []))

    func completion(_ index: Int) -> @Sendable (Result<APNsResponse, APNsError>) -> Void {
        { result in self.state.withLock { $0.ends[index, default: 0] += 1; $0.results[index] = result; $0.order.append(index) } }
    }

    /// The pushes in the order they ended.
    var endOrder: [Int] { state.withLock { $0.order } }

    var endedCount: Int { state.withLock { $0.ends.count } }
    var results: [Int: Result<APNsResponse, APNsError>] { state.withLock { $0.results } }
    /// True when every push in 0..<count ended exactly once.
    func eachEndedOnce(_ count: Int) -> Bool {
        state.withLock { s in (0..<count).allSatisfy { s.ends[$0] == 1 } && s.ends.count == count }
    }

    /// Waits (bounded) until `count` pushes ended; false on timeout.
    func wait(for count: Int, timeout: Duration = .seconds(20)) async throws -> Bool {
        try await eventually(within: timeout) { endedCount >= count }
    }
}

/// One emulator and one client talking to it over TLS + HTTP/2.
final class ClientHarness: Sendable {
    let server: MockAPNsServer
    let group: EventLoopGroup
    let client: APNsClient
    let clocks = Clocks()

    init(poolSize: Int = 2, maxStreams: UInt32 = 1000, faults: MockFaults = .standard, loops: Int = 2,
         recordCapacity: Int = 10_000, probe: (any EventLoopProbe)? = nil,
         configure: (inout APNsClientConfiguration) -> Void = { _ in }) throws {
        let clocks = self.clocks
        server = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [Fixture.topic], teamID: Fixture.team,
                                                 keys: [Fixture.kid: .es256(Fixture.key.publicKey)],
                                                 maxConcurrentStreams: maxStreams, faults: faults,
                                                 // The client always sends both: hold it to that.
                                                 requirePushType: true, strictPayload: true),
            recordCapacity: recordCapacity,
            unixTime: { Int64(Date().timeIntervalSince1970) + clocks.server.load(ordering: .relaxed) })
        group = try EventLoopGroup(loopCount: loops, probe: probe)
        var configuration = try APNsClientConfiguration(keyID: Fixture.kid, teamID: Fixture.team, signingKey: Fixture.key,
                                                        extraCAPEM: server.caPEM)
        configuration.production = APNsEndpoint(host: "localhost", port: server.port)
        configuration.sandbox = APNsEndpoint(host: "localhost", port: server.port)
        configuration.poolSize = poolSize
        configuration.backoffBase = .milliseconds(50)
        configuration.backoffMax = .milliseconds(400)
        configuration.tickInterval = .milliseconds(100)
        configuration.connectTimeout = .seconds(3)
        configure(&configuration)
        client = try APNsClient(configuration: configuration, group: group,
                                unixTime: { Int64(Date().timeIntervalSince1970) + clocks.client.load(ordering: .relaxed) })
    }

    /// Records answered 200 for this apns-id.
    func delivered(_ apnsID: String) -> Int {
        server.records.count { $0.status == 200 && $0.header("apns-id") == apnsID }
    }

    func records(for token: DeviceToken) -> [MockRecord] {
        server.records.filter { $0.path == "/3/device/" + token.hex }
    }

    /// - Parameter connections: how many production connections must be ready (a test of
    ///   retries on another connection needs the whole pool up, not just the first one).
    func waitUntilReady(connections: Int = 1, timeout: Duration = .seconds(5)) async throws -> Bool {
        try await eventually(within: timeout) { client.isReady && client.connectionStats().open >= connections }
    }

    /// Waits (bounded) until the emulator recorded `count` requests; false on timeout.
    func waitForRecords(count: Int, timeout: Duration = .seconds(5)) async throws -> Bool {
        try await eventually(within: timeout) { server.records.count >= count }
    }

    func close() async {
        await client.shutdown()
        group.shutdown()
        server.stop()
    }
}
