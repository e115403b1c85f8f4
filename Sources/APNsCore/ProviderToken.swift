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

/// When the provider token must change. Pure, time as a parameter (Unix seconds).
package struct ProviderTokenPolicy: Sendable, Hashable {
    /// Apple refuses tokens over 60 minutes old; renewing at 50 leaves margin for clock skew.
    package var renewAfterSeconds: Int64
    /// Apple answers 429 TooManyProviderTokenUpdates to a new token under 20 minutes after the
    /// last one; a signing forced by Apple's ExpiredProviderToken waits this long after the last
    /// forced one.
    package var minimumIntervalSeconds: Int64

    package init(renewAfterSeconds: Int64 = 50 * 60, minimumIntervalSeconds: Int64 = 20 * 60) {
        self.renewAfterSeconds = renewAfterSeconds
        self.minimumIntervalSeconds = minimumIntervalSeconds
    }

    /// True once the token is old enough to replace before Apple calls it expired.
    package func needsRenewal(now: Int64, issuedAt: Int64) -> Bool {
        now - issuedAt >= renewAfterSeconds
    }

    /// True when a signing `minimumIntervalSeconds` apart from `lastIssuedAt` may happen now;
    /// `lastIssuedAt` nil means there was none.
    package func mayRenew(now: Int64, lastIssuedAt: Int64?) -> Bool {
        guard let lastIssuedAt else { return true }
        return now - lastIssuedAt >= minimumIntervalSeconds
    }
}
