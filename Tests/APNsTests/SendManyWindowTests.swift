import Testing
import MockAPNs
@testable import APNsCore
@testable import APNs

@Suite("APNsClient.sendMany with more devices than it keeps in flight", .serialized)
struct SendManyWindowTests {
    @Test("a queue of 4 keeps 2 pushes in flight: 9 devices all answered in the caller's order, none overloaded")
    func refillsTheWindow() async throws {
        // One stream per connection: whatever sendMany has in flight beyond that waits in the
        // queue of 4, so starting more than half of it at once would come back `overloaded`.
        let harness = try ClientHarness(poolSize: 1, maxStreams: 1, loops: 1) { $0.queueCapacity = 4 }
        #expect(try await harness.waitUntilReady())
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        let devices = [Fixture.token("", 1).hex, Fixture.token("", 2).hex, Fixture.token(MockFaults.Prefix.unregistered, 3).hex,
                       "not-a-token", Fixture.token("", 5).hex, Fixture.token(MockFaults.Prefix.badDeviceToken, 6).hex,
                       Fixture.token("", 7).hex, Fixture.token("", 8).hex, Fixture.token("", 9).hex]
        let result = await harness.client.sendMany(payload, to: devices, options: APNsPushOptions(topic: Fixture.topic))
        #expect(result.results.map(\.device) == devices)
        #expect(result.results.map(\.status) == [200, 200, 410, 0, 200, 400, 200, 200, 200])
        #expect(!result.results.contains { $0.cause?.code == .overloaded }, "\(result.results.compactMap(\.cause))")
        #expect(result.sent == 6 && result.failed == 3)
        #expect(harness.server.records.count == 8)
        await harness.close()
    }
}
