import Testing
import APNs
@testable import Relay

private let device = "00000000"

private func apple(_ status: Int, _ reason: String? = nil, gone: Int64? = nil) -> Result<APNsResponse, APNsError> {
    .success(APNsResponse(ok: status == 200, status: status, apnsID: "id", device: device,
                          reason: reason.map(APNsReason.init), goneSinceMs: gone))
}

private func failure(_ code: APNsError.Code) -> Result<APNsResponse, APNsError> {
    .failure(APNsError(code: code, message: "test"))
}

/// One row of the status table (docs/ARCHITECTURE.md §6): what Apple (or the client) said, and what the sender must hear.
struct MappingRow: Sendable, CustomTestStringConvertible {
    var name: String
    var result: Result<APNsResponse, APNsError>
    var status: Int
    var retryAfter: Int?
    var misconfiguration = false
    var testDescription: String { name }
}

@Suite("Status mapping (docs/ARCHITECTURE.md §6)")
struct StatusMappingTests {
    static let rows: [MappingRow] = [
        MappingRow(name: "200 → 201", result: apple(200), status: 201),
        MappingRow(name: "410 Unregistered → 410", result: apple(410, "Unregistered", gone: 1_700_000_000_000), status: 410),
        MappingRow(name: "410 ExpiredToken → 410", result: apple(410, "ExpiredToken", gone: 1), status: 410),
        MappingRow(name: "410 without a reason → 410", result: apple(410), status: 410),
        MappingRow(name: "400 BadDeviceToken → 410", result: apple(400, "BadDeviceToken"), status: 410),
        MappingRow(name: "429 TooManyRequests → 429", result: apple(429, "TooManyRequests"), status: 429, retryAfter: 60),
        MappingRow(name: "429 TooManyProviderTokenUpdates → 502", result: apple(429, "TooManyProviderTokenUpdates"), status: 502, misconfiguration: true),
        MappingRow(name: "403 ExpiredProviderToken (after the retry) → 502", result: apple(403, "ExpiredProviderToken"), status: 502, misconfiguration: true),
        MappingRow(name: "403 InvalidProviderToken → 502", result: apple(403, "InvalidProviderToken"), status: 502, misconfiguration: true),
        MappingRow(name: "403 without a reason → 502", result: apple(403), status: 502, misconfiguration: true),
        MappingRow(name: "400 BadTopic → 502", result: apple(400, "BadTopic"), status: 502, misconfiguration: true),
        MappingRow(name: "400 DeviceTokenNotForTopic → 502", result: apple(400, "DeviceTokenNotForTopic"), status: 502, misconfiguration: true),
        MappingRow(name: "400 TopicDisallowed → 502", result: apple(400, "TopicDisallowed"), status: 502, misconfiguration: true),
        MappingRow(name: "400 BadCollapseId (our header) → 502", result: apple(400, "BadCollapseId"), status: 502, misconfiguration: true),
        MappingRow(name: "400 BadExpirationDate (our header) → 502", result: apple(400, "BadExpirationDate"), status: 502, misconfiguration: true),
        MappingRow(name: "400 a reason we do not know → 502", result: apple(400, "SomethingNew"), status: 502, misconfiguration: true),
        MappingRow(name: "413 PayloadTooLarge → 502", result: apple(413, "PayloadTooLarge"), status: 502, misconfiguration: true),
        MappingRow(name: "500 InternalServerError → 503", result: apple(500, "InternalServerError"), status: 503, retryAfter: 30),
        MappingRow(name: "503 ServiceUnavailable → 503", result: apple(503, "ServiceUnavailable"), status: 503, retryAfter: 30),
        MappingRow(name: "503 Shutdown → 503", result: apple(503, "Shutdown"), status: 503, retryAfter: 30),
        MappingRow(name: "500 without a reason → 503", result: apple(500), status: 503, retryAfter: 30),
        MappingRow(name: "unavailable → 503", result: failure(.unavailable), status: 503, retryAfter: 30),
        MappingRow(name: "timeout → 504", result: failure(.timeout), status: 504),
        MappingRow(name: "overloaded → 503", result: failure(.overloaded), status: 503, retryAfter: 5),
        MappingRow(name: "shuttingDown → 503", result: failure(.shuttingDown), status: 503, retryAfter: 5),
        MappingRow(name: "badKey → 502", result: failure(.badKey), status: 502, misconfiguration: true),
        MappingRow(name: "invalidNotification → 502", result: failure(.invalidNotification), status: 502, misconfiguration: true),
    ]

    @Test("each APNs outcome maps to the status of docs/ARCHITECTURE.md §6", arguments: rows)
    func row(_ row: MappingRow) {
        let answer = StatusMapping.answer(for: row.result, nowMilliseconds: 42)
        #expect(answer.status == row.status)
        #expect(answer.retryAfter == row.retryAfter)
        #expect(answer.misconfiguration == row.misconfiguration)
        if answer.status != 201 { #expect(answer.reason?.isEmpty == false) }
    }

    @Test("a connect failure's kind never changes the status: unavailable is 503 (Retry-After 30), timeout 504, and the answer says why",
          arguments: [APNsConnectFailure.Code.refused, .hostNotFound, .untrustedCertificate, .noHTTP2, .tlsHandshakeTimeout,
                      .connectTimeout, .other])
    func connectFailureKeepsTheStatus(_ kind: APNsConnectFailure.Code) {
        let why = APNsConnectFailure(code: kind, message: "the operator's sentence for \(kind)")
        let unavailable = StatusMapping.answer(for: APNsError(code: .unavailable, message: "\(why); retried", connectFailure: why))
        #expect(unavailable.status == 503 && unavailable.retryAfter == 30 && !unavailable.misconfiguration)
        #expect(unavailable.reason?.contains("the operator's sentence for \(kind)") == true)
        let late = StatusMapping.answer(for: APNsError(code: .timeout, message: "\(why); the deadline passed", connectFailure: why))
        #expect(late.status == 504 && late.retryAfter == nil)
        #expect(late.reason?.contains("the operator's sentence for \(kind)") == true)
    }

    @Test("no APNs outcome ever becomes a 4xx Mastodon would delete the subscription for, except a dead token")
    func onlyDeadTokensAre4xx() {
        for row in Self.rows {
            let status = StatusMapping.answer(for: row.result, nowMilliseconds: 0).status
            #expect(!(400..<500).contains(status) || status == 410 || status == 429, "\(row.name)")
            #expect(!(300..<400).contains(status))
        }
    }

    @Test("a 410 carries Apple's reason and its timestamp, or now when Apple gave none")
    func goneBody() {
        let dead = StatusMapping.answer(for: apple(410, "Unregistered", gone: 1_700_000_000_123), nowMilliseconds: 5)
        #expect(dead.jsonBody == #"{"reason":"Unregistered","timestamp":1700000000123}"#)
        let bad = StatusMapping.answer(for: apple(400, "BadDeviceToken"), nowMilliseconds: 5)
        #expect(bad.jsonBody == #"{"reason":"BadDeviceToken","timestamp":5}"#)
    }

    @Test("reasons are escaped into valid one-line JSON")
    func escaping() {
        let answer = RelayAnswer(status: 400, reason: "a \"quoted\"\nline\\")
        #expect(answer.jsonBody == #"{"reason":"a \"quoted\"\nline\\"}"#)
    }
}
