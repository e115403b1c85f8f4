// WebPush — RFC 8030 / 8188 / 8291 request parsing (and the legacy aesgcm draft). No I/O.
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// The content coding of an encrypted WebPush body. The relay never decrypts, but the
/// device must know which scheme to run, so the coding travels to Apple as `"e"`.
public enum WebPushEncoding: String, Sendable, Equatable {
    /// draft-ietf-webpush-encryption-04: salt and key in the `Encryption` and `Crypto-Key` headers; Mastodon's default.
    case aesgcm
    /// RFC 8291: salt and key inside the body's own header; Mastodon 4.4+ "standard", GoToSocial, Akkoma, Misskey.
    case aes128gcm
}

/// One validated WebPush request, reduced to what the APNs payload and headers need.
public struct WebPushMessage: Sendable, Equatable {
    /// RFC 8030 `Urgency`; Apple only knows two priorities, so the relay folds these into 5 or 10.
    public enum Urgency: String, Sendable, Equatable {
        case veryLow = "very-low", low, normal, high
    }

    public var encoding: WebPushEncoding
    /// The encrypted bytes, untouched: the device decrypts them.
    public var body: [UInt8]
    /// aesgcm only: the `salt` parameter as sent (quotes removed, alphabet and padding kept),
    /// because the device decodes it itself and must see what the sender meant.
    public var salt: String?
    /// aesgcm only: the `dh` parameter as sent (quotes removed, alphabet and padding kept).
    public var dh: String?
    /// `TTL` in seconds; nil when absent or unreadable (see `WebPushParser`).
    public var ttl: Int?
    /// `Urgency`; nil when absent. An unknown value arrives here as `.normal`.
    public var urgency: Urgency?
    /// `Topic`, usable as `apns-collapse-id`; nil when absent or unusable (see `WebPushParser`).
    public var topic: String?
    /// aes128gcm only: the record size from the body header.
    public var recordSize: UInt32?

    /// aesgcm only: the 16 bytes of `salt`, for payloads that carry them re-encoded.
    public var saltBytes: [UInt8]? { salt.flatMap { WebPushParser.base64Decode($0[...]) } }
    /// aesgcm only: the 65 bytes of `dh`, for payloads that carry them re-encoded.
    public var dhBytes: [UInt8]? { dh.flatMap { WebPushParser.base64Decode($0[...]) } }

    public init(encoding: WebPushEncoding, body: [UInt8], salt: String? = nil, dh: String? = nil,
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

/// Why a WebPush request was refused. `status` is the HTTP status the relay answers with:
/// a 4xx makes Mastodon delete the subscription, so only requests that can never work end here.
public struct WebPushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// 400 malformed, 413 body too large, 415 unsupported `Content-Encoding`.
    public let status: Int
    /// One line naming the header (or body) and what is wrong with it, sent back to the sender.
    public let reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status) \(reason)" }

    static func bad(_ reason: String) -> WebPushError { WebPushError(status: 400, reason: reason) }
}
