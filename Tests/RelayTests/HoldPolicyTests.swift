import Testing
import APNs
@testable import Relay

/// Which results the relay holds: the rule as a table (README "When Apple is out of reach").
@Suite("Hold policy")
struct HoldPolicyTests {
    static func answer(_ status: Int, _ reason: APNsReason? = nil) -> Result<APNsResponse, APNsError> {
        .success(APNsResponse(ok: status == 200, status: status, apnsID: "id", device: "device", reason: reason))
    }

    static let table: [(String, Result<APNsResponse, APNsError>, held: Bool, retry: HoldPolicy.Retry)] = [
        ("200", answer(200), false, .delivered),
        ("410 Unregistered", answer(410, .unregistered), false, .refused),
        ("400 BadDeviceToken", answer(400, .badDeviceToken), false, .refused),
        ("413 PayloadTooLarge", answer(413, .payloadTooLarge), false, .refused),
        // Apple cannot take it now, or not from this relay until its operator fixes the key:
        // the sender was answered 201, so only expiry may drop it.
        ("429 TooManyRequests", answer(429, .tooManyRequests), false, .later),
        ("429 TooManyProviderTokenUpdates", answer(429, .tooManyProviderTokenUpdates), false, .later),
        ("403 ExpiredProviderToken", answer(403, .expiredProviderToken), false, .later),
        ("400 DeviceTokenNotForTopic", answer(400, .deviceTokenNotForTopic), false, .later),
        ("403 with a reason nobody knows", answer(403, APNsReason("SomethingNew")), false, .later),
        ("500 InternalServerError", answer(500, .internalServerError), true, .back),
        ("503 ServiceUnavailable", answer(503, .serviceUnavailable), true, .back),
        ("503 Shutdown", answer(503, .shutdown), true, .back),
        ("unavailable", .failure(.unavailable("connection refused")), true, .back),
        ("timeout, never written", .failure(.timeout("deadline before a stream was free")), true, .back),
        ("timeout, written and not answered", .failure(.unanswered("no answer")), true, .unanswered),
        ("overloaded", .failure(.overloaded("queue full")), false, .back),
        ("shuttingDown", .failure(.shuttingDown("stopping")), false, .back),
        ("invalidNotification", .failure(.invalid("bad topic")), false, .refused),
        ("badKey", .failure(.badKey("no key")), false, .back),
    ]

    @Test("held: no answer from Apple and Apple's 5xx, never a 4xx or what the relay refuses itself; a held push leaves the store only when Apple accepts it or refuses it for good")
    func rule() {
        for (name, result, held, retry) in Self.table {
            #expect((HoldPolicy.reason(for: result) != nil) == held, "\(name)")
            #expect(HoldPolicy.retry(after: result) == retry, "\(name)")
        }
    }
}
