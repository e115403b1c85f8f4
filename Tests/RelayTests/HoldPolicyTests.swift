import Testing
import APNs
@testable import Relay

/// Which results the relay holds: the rule as a table (README "When Apple is out of reach").
@Suite("Hold policy")
struct HoldPolicyTests {
    static func answer(_ status: Int, _ reason: APNsReason? = nil) -> Result<APNsResponse, APNsError> {
        .success(APNsResponse(ok: status == 200, status: status, apnsID: "id", device: "device", reason: reason))
    }

    static let table: [(String, Result<APNsResponse, APNsError>, held: Bool, settled: Bool)] = [
        ("200", answer(200), false, true),
        ("410 Unregistered", answer(410, .unregistered), false, true),
        ("400 BadDeviceToken", answer(400, .badDeviceToken), false, true),
        ("429 TooManyRequests", answer(429, .tooManyRequests), false, true),
        ("429 TooManyProviderTokenUpdates", answer(429, .tooManyProviderTokenUpdates), false, true),
        ("500 InternalServerError", answer(500, .internalServerError), true, false),
        ("503 ServiceUnavailable", answer(503, .serviceUnavailable), true, false),
        ("503 Shutdown", answer(503, .shutdown), true, false),
        ("unavailable", .failure(.unavailable("connection refused")), true, false),
        ("timeout", .failure(.timeout("no answer before the push's deadline")), true, false),
        ("overloaded", .failure(.overloaded("queue full")), false, false),
        ("shuttingDown", .failure(.shuttingDown("stopping")), false, false),
        ("invalidNotification", .failure(.invalid("bad topic")), false, false),
        ("badKey", .failure(.badKey("no key")), false, false),
    ]

    @Test("held: no answer from Apple and Apple's 5xx; never a 4xx or what the relay refuses itself; settled only by Apple's answer below 500")
    func rule() {
        for (name, result, held, settled) in Self.table {
            #expect((HoldPolicy.reason(for: result) != nil) == held, "\(name)")
            #expect(HoldPolicy.isSettled(result) == settled, "\(name)")
        }
    }
}
