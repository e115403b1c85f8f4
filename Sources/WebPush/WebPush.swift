// WebPush — RFC 8030 / 8188 / 8291 request parsing (and the legacy aesgcm draft). No I/O.
#if canImport(Glibc)
import Glibc
#endif
internal import Basics

/// The content coding of an encrypted WebPush body. The relay never decrypts, but the
/// device must know which scheme to run, so the coding travels to Apple as `"e"`.
package enum WebPushEncoding: String, Sendable, Equatable {
    /// draft-ietf-webpush-encryption-04: salt and key in the `Encryption` and `Crypto-Key` headers; Mastodon's default.
    case aesgcm
    /// RFC 8291: salt and key inside the body's own header; Mastodon 4.4+ "standard", GoToSocial, Akkoma, Misskey.
    case aes128gcm
}

/// One validated WebPush request, reduced to what the APNs payload and headers need.
package struct WebPushMessage: Sendable, Equatable {
    /// RFC 8030 `Urgency`; Apple only knows two priorities, so the relay folds these into 5 or 10.
    package enum Urgency: String, Sendable, Equatable {
        case veryLow = "very-low", low, normal, high
    }

    package var encoding: WebPushEncoding
    /// The encrypted bytes, untouched: the device decrypts them.
    package var body: [UInt8]
    /// aesgcm only: the `salt` parameter as sent (quotes removed, alphabet and padding kept),
    /// because the device decodes it itself and must see what the sender meant.
    package var salt: String?
    /// aesgcm only: the `dh` parameter as sent (quotes removed, alphabet and padding kept).
    package var dh: String?
    /// `TTL` in seconds; nil when absent or unreadable (see `WebPushParser`).
    package var ttl: Int?
    /// `Urgency`; nil when absent. An unknown value arrives here as `.normal`.
    package var urgency: Urgency?
    /// `Topic`, usable as `apns-collapse-id`; nil when absent or unusable (see `WebPushParser`).
    package var topic: String?
    /// aes128gcm only: the record size from the body header.
    package var recordSize: UInt32?

    /// aesgcm only: the 16 bytes of `salt`, for payloads that carry them re-encoded.
    package var saltBytes: [UInt8]? { salt.flatMap { WebPushParser.base64Decode($0[...]) } }
    /// aesgcm only: the 65 bytes of `dh`, for payloads that carry them re-encoded.
    package var dhBytes: [UInt8]? { dh.flatMap { WebPushParser.base64Decode($0[...]) } }

    package init(encoding: WebPushEncoding, body: [UInt8], salt: String? = nil, dh: String? = nil,
                ttl: Int? = nil, urgency: Urgency? = nil, topic: String? = nil,
                recordSize: UInt32? = nil) {
        self.encoding = encoding
        self.body = body
        self.salt = salt
        self.dh = dh
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
        self.recordSize = recordSize
    }
}

/// Why a WebPush request was refused. `status` (its `code`) is the HTTP status the relay answers
/// with: a 4xx makes Mastodon delete the subscription, so only requests that can never work end
/// here. Equal when status and reason agree: the reason is the answer's body.
package struct WebPushError: CodedError {
    /// 400 malformed, 413 body too large, 415 unsupported `Content-Encoding`.
    package let status: Int
    /// One line naming the header (or body) and what is wrong with it, sent back to the sender.
    package let reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    package var code: Int { status }
    package var message: String { reason }
    package var description: String { "\(status) \(reason)" }
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.status == rhs.status && lhs.reason == rhs.reason }

    static func bad(_ reason: String) -> WebPushError { WebPushError(status: 400, reason: reason) }
}
