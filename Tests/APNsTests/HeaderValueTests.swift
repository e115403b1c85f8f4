import Testing
import Foundation
import MockAPNs
@testable import APNsCore
@testable import APNs

/// Header values HTTP/2 forbids (CR, LF, NUL) must be refused as the caller's mistake before
/// anything goes out, not tried on connection after connection as if APNs were unreachable.
@Suite("header values HTTP/2 forbids", .serialized)
struct HeaderValueTests {
    @Test("a collapse id with a line break or NUL is refused when the notification is made", arguments: ["a\nb", "a\rb", "a\u{0}b"])
    func collapseIDRefused(_ collapseID: String) throws {
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        #expect(throws: APNsError.self) {
            try APNsNotification(token: Fixture.token("", 1), topic: Fixture.topic, payload: payload, collapseID: collapseID)
        }
    }

    @Test("a push with a forbidden collapse id fails as invalid, once, and reaches no connection")
    func collapseIDThroughTheClient() async throws {
        let harness = try ClientHarness(poolSize: 1, loops: 1)
        #expect(try await harness.waitUntilReady())
        let payload = try APNsPayload(json: Array(#"{"aps":{"alert":"hi"}}"#.utf8))
        do {
            _ = try await harness.client.send(payload, to: Fixture.token("", 2).hex,
                                              options: APNsPushOptions(topic: Fixture.topic, collapseID: "x\r\ny"))
            Issue.record("a collapse id with CRLF was sent")
        } catch {
            #expect(error.code == .invalidNotification, "\(error)")
        }
        await harness.close()
    }
}
