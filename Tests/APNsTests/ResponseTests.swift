import Foundation
import Testing
@testable import APNsCore
@testable import APNs

@Suite("Reasons and responses")
struct ResponseTests {
    @Test("every reason in Apple's table is known, with a meaning")
    func table() {
        let names = ["BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
                     "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
                     "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
                     "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken",
                     "UnrelatedKeyIdInToken", "BadEnvironmentKeyIdInToken", "BadPath", "MethodNotAllowed", "ExpiredToken",
                     "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests",
                     "InternalServerError", "ServiceUnavailable", "Shutdown"]
        #expect(APNsReason.allKnown.count == names.count)
        for name in names {
            let reason = APNsReason(name)
            #expect(!reason.isUnknown, "\(name)")
            #expect(reason.rawValue == name)
            #expect(!reason.meaning.isEmpty && !reason.meaning.contains("\n"))
        }
    }

    @Test("Apple's apns-id is read lower-cased, the sent id stands when it sends none, and both parse forms agree")
    func apnsIDEcho() throws {
        let device = try DeviceToken(String(repeating: "ab", count: 32))
        let sent = "2b4e5b8a-0c1d-4e2f-9a3b-4c5d6e7f8091"
        let echoed = APNsResponse.parse(status: 200, apnsID: sent, uniqueID: nil, body: [], device: device, sentID: sent)
        #expect(echoed.apnsID == sent)
        let upper = APNsResponse.parse(status: 200, apnsID: sent.uppercased(), uniqueID: "u", body: [], device: device, sentID: sent)
        #expect(upper.apnsID == sent)
        #expect(upper.uniqueID == "u")
        let absent = APNsResponse.parse(status: 410, apnsID: nil, uniqueID: nil, body: Array(#"{"reason":"Unregistered"}"#.utf8),
                                        device: device, sentID: sent)
        #expect(absent.apnsID == sent)
        #expect(absent.reason == APNsReason("Unregistered"))
        let listed = APNsResponse.parse(status: 200, headers: [("APNS-ID", sent.uppercased()), ("apns-unique-id", "u")], body: [],
                                        device: device, sentID: sent)
        #expect(listed == upper)
        #expect(listed.uniqueID == "u")
    }

    @Test("only BadDeviceToken, Unregistered and ExpiredToken mean a dead token")
    func deadTokens() {
        let dead = APNsReason.allKnown.filter { $0.category == .tokenDead }.map(\.rawValue).sorted()
        #expect(dead == ["BadDeviceToken", "ExpiredToken", "Unregistered"])
    }

    @Test("a reason and a 400 answer with it agree on removing the token; DeviceTokenNotForTopic removes it")
    func removeTokenHasOneRule() {
        for reason in APNsReason.allKnown {
            let response = APNsResponse(ok: false, status: 400, apnsID: "", device: "d", reason: reason)
            #expect(reason.removeToken == response.removeToken, "\(reason.rawValue)")
        }
        let removed = APNsReason.allKnown.filter(\.removeToken).map(\.rawValue).sorted()
        #expect(removed == ["BadDeviceToken", "DeviceTokenNotForTopic", "ExpiredToken", "Unregistered"])
    }

    @Test("topic, certificate and provider-token reasons are our configuration's fault", arguments: [
        "BadTopic", "DeviceTokenNotForTopic", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken", "UnrelatedKeyIdInToken",
        "BadEnvironmentKeyIdInToken", "TooManyProviderTokenUpdates",
    ])
    func configuration(name: String) {
        #expect(APNsReason(name).category == .configurationError)
    }

    @Test("busy and server-side reasons mean retry later", arguments: [
        "TooManyRequests", "InternalServerError", "ServiceUnavailable", "Shutdown", "IdleTimeout",
    ])
    func retryLater(name: String) {
        #expect(APNsReason(name).category == .retryLater)
    }

    @Test("header and path mistakes are malformed requests", arguments: [
        "BadCollapseId", "BadExpirationDate", "BadMessageId", "BadPriority", "DuplicateHeaders", "InvalidPushType",
        "MissingDeviceToken", "MissingTopic", "PayloadEmpty", "BadPath", "MethodNotAllowed", "PayloadTooLarge",
    ])
    func malformed(name: String) {
        #expect(APNsReason(name).category == .malformedRequest)
    }

    @Test("an unknown reason is kept, counted as our fault and never removes a token")
    func unknown() {
        let reason = APNsReason("SomethingNew")
        #expect(reason.isUnknown)
        #expect(reason.rawValue == "SomethingNew")
        #expect(reason.category == .configurationError)
        #expect(!reason.removeToken)
    }

    @Test("a 200 parses to ok with Apple's apns-id and unique id, and the device token")
    func parseOK() throws {
        let token = try DeviceToken(token64)
        let r = APNsResponse.parse(status: 200, headers: [("APNs-ID", "ABC-1"), ("apns-unique-id", "u-1")], body: [], device: token)
        #expect(r.ok && r.status == 200 && r.apnsID == "abc-1" && r.uniqueID == "u-1")
        #expect(r.device == token.hex)
        #expect(r.category == .delivered && !r.removeToken)
        #expect(r.json == #"{"ok":true,"status":200,"apns_id":"abc-1","unique_id":"u-1","device":"\#(token.hex)"}"#)
    }

    @Test("a 410 Unregistered parses its timestamp and asks to remove the token")
    func parseGone() throws {
        let token = try DeviceToken(token64)
        let r = APNsResponse.parse(status: 410, headers: [("apns-id", "x")],
                                   body: Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8), device: token)
        #expect(!r.ok && r.reason == .unregistered && r.goneSinceMs == 1_700_000_000_123 && r.removeToken)
        #expect(r.json == #"{"ok":false,"status":410,"apns_id":"x","reason":"Unregistered","meaning":"The device token is no longer active for the topic.","remove_token":true,"gone_since_ms":1700000000123,"device":"\#(token.hex)"}"#)
    }

    @Test("a 400 BadTopic keeps the token and leaves gone_since_ms out")
    func parseBadTopic() throws {
        let r = APNsResponse.parse(status: 400, headers: [], body: Array(#"{"reason":"BadTopic"}"#.utf8),
                                   device: try DeviceToken(token64), sentID: "sent")
        #expect(r.apnsID == "sent")
        #expect(r.category == .configurationError && !r.removeToken)
        #expect(r.json.hasSuffix(#""remove_token":false,"device":"\#(token64)"}"#))
    }

    @Test("a garbled error body still yields a response decided by its status")
    func garbled() throws {
        let r = APNsResponse.parse(status: 410, headers: [], body: Array("not json".utf8), device: try DeviceToken(token64))
        #expect(r.reason == nil && r.removeToken)
        let s = APNsResponse.parse(status: 503, headers: [], body: [], device: try DeviceToken(token64))
        #expect(!s.removeToken && s.meaning.contains("503"))
    }

    @Test("send-many results count sent and failed and list BadDeviceToken, Unregistered and DeviceTokenNotForTopic to remove")
    func sendMany() throws {
        let results = [
            APNsResponse(ok: true, status: 200, apnsID: "1", device: "a"),
            APNsResponse(ok: false, status: 400, apnsID: "2", device: "b", reason: .badDeviceToken),
            APNsResponse(ok: false, status: 429, apnsID: "3", device: "c", reason: .tooManyRequests),
            APNsResponse(ok: false, status: 410, apnsID: "4", device: "d", reason: .unregistered),
            APNsResponse(ok: false, status: 400, apnsID: "5", device: "e", reason: .deviceTokenNotForTopic),
            APNsResponse.notSent(device: "f", cause: .timeout("no answer")),
        ]
        let summary = SendManyResult(results: results)
        #expect(summary.sent == 1 && summary.failed == 5 && summary.remove == ["b", "d", "e"])
        #expect(results[5].json == #"{"ok":false,"status":0,"reason":"NotSent","meaning":"timeout: no answer","remove_token":false,"device":"f"}"#)
        #expect(results[1].json.contains(#""device":"b""#) && results[2].json.contains(#""device":"c""#))
    }

    @Test("a NotSent result carries its cause as a value, and noneReachedApple decides on the cause's code, not its words")
    func notSentCause() {
        let timedOut = APNsResponse.notSent(device: "a", cause: .timeout("no answer"))
        #expect(timedOut.cause?.code == .timeout && timedOut.meaning == "timeout: no answer")
        // A message worded like another code's description changes nothing: the code decides.
        let unreachable = APNsResponse.notSent(device: "b", cause: .unavailable("invalidNotification: connection refused"))
        let refused = APNsResponse.notSent(device: "c", cause: .invalid("the payload is over 4096 bytes"))
        #expect(SendManyResult(results: [timedOut, unreachable]).noneReachedApple)
        #expect(!SendManyResult(results: [timedOut, refused]).noneReachedApple)
        #expect(!SendManyResult(results: [timedOut, APNsResponse(ok: true, status: 200, apnsID: "1", device: "d")]).noneReachedApple)
        #expect(!SendManyResult(results: []).noneReachedApple)
    }

    @Test("errors compare by code and carry a message")
    func errors() {
        #expect(APNsError.timeout("a") == APNsError.timeout("b"))
        #expect(APNsError.timeout("a") != APNsError.overloaded("a"))
        #expect("\(APNsError.badKey("fix the key"))" == "badKey: fix the key")
    }
}

/// Records what it was asked to sign and returns 64 fixed bytes.
final class FakeSigner: ProviderTokenSigner, @unchecked Sendable {
    // Tests use one signer from one task at a time; the lock only keeps the checker honest.
    private let lock = NSLock()
    private var _messages: [[UInt8]] = []
    var messages: [[UInt8]] { lock.withLock { _messages } }
    let signature: [UInt8]
    init(signature: [UInt8] = Array(0..<64)) { self.signature = signature }
    func sign(_ message: [UInt8]) throws -> [UInt8] {
        lock.withLock { _messages.append(message) }
        return signature
    }
}

struct FailingSigner: ProviderTokenSigner {
    struct Broken: Error {}
    func sign(_ message: [UInt8]) throws -> [UInt8] { throw Broken() }
}

@Suite("Provider tokens")
struct ProviderTokenTests {
    func decode(_ part: Substring) -> String {
        var s = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return String(decoding: Data(base64Encoded: s) ?? Data(), as: UTF8.self)
    }

    @Test("the JWT is header.claims.signature in base64url without padding, iat an integer")
    func jwtText() throws {
        let signer = FakeSigner()
        let token = try ProviderToken(keyID: "KEYID", teamID: "TEAM", issuedAt: 1_700_000_000, signer: signer)
        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(decode(parts[0]) == #"{"alg":"ES256","kid":"KEYID"}"#)
        #expect(decode(parts[1]) == #"{"iss":"TEAM","iat":1700000000}"#)
        #expect(parts[0] == "eyJhbGciOiJFUzI1NiIsImtpZCI6IktFWUlEIn0")
        #expect(parts[1] == "eyJpc3MiOiJURUFNIiwiaWF0IjoxNzAwMDAwMDAwfQ")
        #expect(parts[2] == "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw")
        #expect(!token.jwt.contains("=") && !token.jwt.contains("+") && !token.jwt.contains("/"))
        #expect(token.issuedAt == 1_700_000_000)
    }

    @Test("the signer is given exactly the header and claims joined by a dot")
    func signingInput() throws {
        let signer = FakeSigner()
        let token = try ProviderToken(keyID: "KEYID", teamID: "TEAM", issuedAt: 5, signer: signer)
        let message = try #require(signer.messages.first)
        #expect(signer.messages.count == 1)
        #expect(token.jwt.hasPrefix(String(decoding: message, as: UTF8.self) + "."))
    }

    @Test("a signer that fails or returns the wrong size is a bad key")
    func badSigner() {
        #expect(throws: APNsError(code: .badKey, message: "")) {
            try ProviderToken(keyID: "K", teamID: "T", issuedAt: 0, signer: FailingSigner())
        }
        #expect(throws: APNsError(code: .badKey, message: "")) {
            try ProviderToken(keyID: "K", teamID: "T", issuedAt: 0, signer: FakeSigner(signature: Array(repeating: 1, count: 70)))
        }
    }

    @Test("iat is the start of the 30-minute window: every second of a window gives the same, the next window the next")
    func windows() {
        let policy = ProviderTokenPolicy()
        let start: Int64 = 1_800_000_000  // a multiple of 1800
        for now in [start, start + 1, start + 30 * 60 - 1] { #expect(policy.issuedAt(now: now) == start, "\(now)") }
        #expect(policy.issuedAt(now: start + 30 * 60) == start + 30 * 60)
        #expect(policy.issuedAt(now: start - 1) == start - 30 * 60)
        #expect(policy.issuedAt(now: -1) == -30 * 60, "floored before 1970 too")
    }

    @Test("a token is replaced when its window ends, or 20 minutes after its first use if that is later; at most 50 minutes old")
    func renewal() {
        let policy = ProviderTokenPolicy()
        let start: Int64 = 1_800_000_000
        #expect(policy.renewalTime(issuedAt: start, inUseSince: start) == start + 30 * 60)
        #expect(policy.renewalTime(issuedAt: start, inUseSince: start + 10 * 60) == start + 30 * 60)
        #expect(policy.renewalTime(issuedAt: start, inUseSince: start + 15 * 60) == start + 35 * 60)
        #expect(policy.renewalTime(issuedAt: start, inUseSince: start + 30 * 60 - 1) == start + 50 * 60 - 1)
        // A token signed for Apple's refusal (iat not at a window's start) ends with its window too.
        #expect(policy.renewalTime(issuedAt: start + 100, inUseSince: start + 100) == start + 30 * 60)
    }

    @Test("no two rate-limited signings less than 20 minutes apart")
    func rateLimit() {
        let policy = ProviderTokenPolicy()
        #expect(policy.mayRenew(now: 0, lastIssuedAt: nil))
        #expect(!policy.mayRenew(now: 1000 + 19 * 60 + 59, lastIssuedAt: 1000))
        #expect(policy.mayRenew(now: 1000 + 20 * 60, lastIssuedAt: 1000))
    }
}
