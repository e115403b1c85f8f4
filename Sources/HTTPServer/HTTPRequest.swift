// HTTP/1.1 message values shared by the parser, the serializer and the socket server.
// Pure Swift, no Foundation: the fuzz build compiles this file with the parser, with the Basics
// files it needs beside it (so it imports that module only in the package build).
#if canImport(Glibc)
import Glibc
#endif
#if !HTTPPARSER_FUZZ
internal import Basics
#endif

/// The protocol version of a request; the two differ in their keep-alive default.
package enum HTTPVersion: Sendable, Hashable {
    case http10
    case http11
}

/// Header fields in the order they arrived, repeated fields kept.
///
/// Order and repeats matter: a duplicated `Content-Length` or `Host` is a smuggling
/// attempt the parser must see, and `X-Forwarded-For` is read from its first field.
/// Lookups ignore ASCII case because field names are case-insensitive (RFC 9110 §5.1).
///
/// Every field lives in one byte buffer (name and value lengths, then their bytes), so a parsed
/// head is one allocation instead of a String per long name or value; Strings are made only when

package struct HTTPRequest: Sendable, Equatable {
    package var method: String
    /// The raw request-target, as sent (percent-encoding untouched).
    package var target: String
    /// `target` before the first `?`: what routing matches on. An absolute-form target
    /// (`http://host/push/…`, which RFC 9112 says a server must accept) is reduced to its path.
    package var path: String
    /// `target` after the first `?`, or nil when there is no `?`.
    package var query: String?
    package var version: HTTPVersion
    package var headers: HTTPHeaders
    package var body: [UInt8]
    /// Whether the connection may carry another request after this one's response.
    package var keepAlive: Bool
    /// Set by the server from the socket; the parser leaves it as given at its init.
    package var peerAddress: String?
    /// The first `X-Forwarded-For` entry: the client as the reverse proxy saw it, for logs.
    package var forwardedFor: String?
    /// `X-Request-ID`, so a log line can be matched with the proxy's.
    package var requestID: String?

    package init(
        method: String, target: String, version: HTTPVersion = .http11,
        headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], keepAlive: Bool = true,
        peerAddress: String? = nil
    ) {
        self.method = method
        self.target = target
        let origin = Self.originForm(target)
        if let q = firstByteIndex(of: UInt8(ascii: "?"), in: origin) {
            self.path = String(origin[..<q])
            self.query = String(origin[origin.index(after: q)...])
        } else {
            self.path = String(origin)
            self.query = nil
        }
        self.version = version
        self.headers = headers
        self.body = body
        self.keepAlive = keepAlive
        self.peerAddress = peerAddress
        // Both in one walk over the fields (each is the first value of its name, as a lookup by
        // name reads it): two lookups walked every field twice per request.
        var forwardedFor: String?, requestID: String?
        var sawForwardedFor = false, sawRequestID = false
        headers.withFieldBytes { fields in
            fields.forEach { name, value in
                switch name.count {
                case 15 where !sawForwardedFor && asciiCaseInsensitiveEquals(name, literal: "X-Forwarded-For"):
                    sawForwardedFor = true
                    forwardedFor = firstListElement(String(decoding: value, as: UTF8.self))
                case 12 where !sawRequestID && asciiCaseInsensitiveEquals(name, literal: "X-Request-ID"):
                    sawRequestID = true
                    requestID = String(decoding: value, as: UTF8.self)
                default:
                    break
                }
            }
        }
        self.forwardedFor = forwardedFor
        self.requestID = requestID
    }

    /// `http://host:port/p?q` → `/p?q` (`/` when the path is empty); anything else as is.
    static func originForm(_ target: String) -> Substring {
        let t = target[...]
        // Origin form, what every client but a proxy sends: nothing to reduce.
        if target.utf8.first == UInt8(ascii: "/") { return t }
        for scheme in ["http://", "https://"] where t.utf8.count > scheme.utf8.count {
            let head = t.prefix(scheme.count)
            guard head.lowercased() == scheme else { continue }
            let rest = t.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
            return rest[slash] == "/" ? rest[slash...] : "/" + rest[slash...]
        }
        return t
    }
}

/// A response the server frames itself: `serialize` adds Content-Length, Date and
/// Connection, so handlers cannot get the framing wrong.
