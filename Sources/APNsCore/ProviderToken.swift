internal import Basics

/// Signs provider tokens. The OpenSSL ES256 key conforms in the transport layer; tests use a fake,
/// so this module needs no crypto of its own.
package protocol ProviderTokenSigner: Sendable {
    /// ES256 over `message`; returns the raw signature r‖s, 64 bytes (not DER: JWT wants raw).
    func sign(_ message: [UInt8]) throws -> [UInt8]
}

/// A JWT for the `authorization: bearer` header.
package struct ProviderToken: Sendable, Hashable {
    /// The compact JWT text.
    package let jwt: String
    /// `bearer <jwt>`, the `authorization` header's value, made once per token rather than per push.
    package let authorization: String
    /// Unix seconds written as `iat`, which starts Apple's one-hour clock.
    package let issuedAt: Int64

    /// Builds `{"alg":"ES256","kid":KEY}.{"iss":TEAM,"iat":<integer>}.sig`, all base64url without padding.
    /// `iat` is an integer because Apple rejects a string (a bug APNSwift shipped).
    package init(keyID: String, teamID: String, issuedAt: Int64, signer: some ProviderTokenSigner) throws(APNsError) {
        guard !keyID.isEmpty else { throw .badKey("the key id is empty; set it to the 10-character Key ID from Apple") }
        guard !teamID.isEmpty else { throw .badKey("the team id is empty; set it to the 10-character Team ID from Apple") }
        var header = JSONWriter(capacity: 40)
        header.raw("{\"alg\":\"ES256\",\"kid\":"); header.string(keyID); header.raw("}")
        var claims = JSONWriter(capacity: 40)
        claims.raw("{\"iss\":"); claims.string(teamID); claims.raw(",\"iat\":"); claims.int(issuedAt); claims.raw("}")

        var signingInput: [UInt8] = []
        signingInput.reserveCapacity(256)
        Base64URL.append(header.bytes, padded: false, to: &signingInput)
        signingInput.append(UInt8(ascii: "."))
        Base64URL.append(claims.bytes, padded: false, to: &signingInput)
        let signature: [UInt8]
        do {
            signature = try signer.sign(signingInput)
        } catch {
            throw .badKey("the signing key could not sign a provider token (\(error)); check the .p8 key file")
        }
        guard signature.count == 64 else {
            throw .badKey("the signer returned \(signature.count) bytes, not a 64-byte raw r‖s ES256 signature")
        }
        signingInput.append(UInt8(ascii: "."))
        Base64URL.append(signature, padded: false, to: &signingInput)
        self.jwt = String(decoding: signingInput, as: UTF8.self)
        self.authorization = "bearer " + jwt
        self.issuedAt = issuedAt
    }
}

/// Which provider token to present when: its `iat`, and when it is replaced. Pure, time as a
/// parameter (Unix seconds).
///
/// Apple counts new provider tokens per team, across every process that signs them, refuses a
/// new one sooner than 20 minutes after the last (429 `TooManyProviderTokenUpdates`) and refuses
/// a token over 60 minutes old (403 `ExpiredProviderToken`). So that every replica of a fleet,
/// every restart and every reconnect presents the byte-identical token without talking to each
/// other, `iat` is the start of the current wall-clock window (`issuedAt(now:)`) and the
/// signature is deterministic (RFC 6979): the same key, team and window give the same bytes.
///
/// The window is 30 minutes:
/// - The fleet's token changes only at a window's start, so its new tokens come 30 minutes
///   apart, 10 more than Apple's 20: replicas whose clocks disagree by seconds (or by up to 10
///   minutes in all) still never make two new tokens within 20 minutes. Near a boundary the
///   replica whose clock runs ahead moves to the next window's token a few seconds early and
///   the others follow with the same token; the one it replaces stays valid on Apple's side.
/// - A process that takes a token into use late in its window (its first push after an idle
///   spell) keeps it `minimumIntervalSeconds` (20 minutes) before moving on, so it never itself
///   presents two new tokens within 20 minutes. A token is therefore replaced at 30 minutes of
///   age, or at most at 30 + 20 = 50, the relay's renewal age before windows: 10 minutes short
///   of Apple's hour for a clock behind Apple's. A window over 40 minutes would leave no room for
///   that hold under the hour; 30 also divides the hour, so windows start at :00 and :30.
/// - What no rule without coordination can prevent: in a fleet idle for the first 10 minutes
///   of a window, a replica that takes the window's token late and another that starts fresh
///   after the next boundary (so takes the next one) present two new tokens within 20 minutes;
///   Apple refuses the second until 20 minutes after the first.
package struct ProviderTokenPolicy: Sendable, Hashable {
    /// The length of the wall-clock windows whose starts are the tokens' `iat`.
    package var windowSeconds: Int64
    /// Apple answers 429 TooManyProviderTokenUpdates to a new token under 20 minutes after the
    /// last one: a token a process took into use is kept at least this long, and a signing
    /// forced by Apple's ExpiredProviderToken waits this long after the last forced one.
    package var minimumIntervalSeconds: Int64

    package init(windowSeconds: Int64 = 30 * 60, minimumIntervalSeconds: Int64 = 20 * 60) {
        self.windowSeconds = windowSeconds
        self.minimumIntervalSeconds = minimumIntervalSeconds
    }

    /// The `iat` of the token to sign at `now`: the start of the window `now` is in (floored, so
    /// a time before 1970 falls in the window that starts before it, as for every other time).
    package func issuedAt(now: Int64) -> Int64 {
        let offset = now % windowSeconds
        return now - (offset < 0 ? offset + windowSeconds : offset)
    }

    /// When a token issued at `issuedAt` and first sent at `inUseSince` is replaced: when the
    /// next window starts, and not sooner than `minimumIntervalSeconds` after it was first sent.
    package func renewalTime(issuedAt: Int64, inUseSince: Int64) -> Int64 {
        max(self.issuedAt(now: issuedAt) + windowSeconds, inUseSince + minimumIntervalSeconds)
    }

    /// True when a signing `minimumIntervalSeconds` apart from `lastIssuedAt` may happen now;
    /// `lastIssuedAt` nil means there was none.
    package func mayRenew(now: Int64, lastIssuedAt: Int64?) -> Bool {
        guard let lastIssuedAt else { return true }
        return now - lastIssuedAt >= minimumIntervalSeconds
    }
}
