import HTTPServer
import Testing
import WebPush
@testable import Relay

/// The relay reads a push's fields as the bytes the server holds; these check that this reads
/// every request exactly as the Strings of its fields did (message or status and reason).
@Suite("WebPush parsing of a server request")
struct WebPushRequestTests {
    static let salt = "XaGvK-1McJRNX-agVfElbQ"
    static let dh = "BD6OZqyAr2BSPb2AOUTrtHAnv5p1tCSqns1oYahLko20paTQ551ZbQCQpe0r7DUcJzU9Ge4gbAcidC9ianySTXA"
    static let body: [UInt8] = Array(0 ..< 40)

    static let cases: [[(String, String)]] = [
        [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(salt)"), ("Crypto-Key", "dh=\(dh);p256ecdsa=x"),
         ("TTL", " 60 "), ("Urgency", "LOW"), ("Topic", "t-1")],
        [("content-encoding", "AESGCM"), ("encryption", "keyid=p256dh"), ("ENCRYPTION", #"salt="\#(salt)""#),
         ("crypto-key", "keyid=p256dh, "), ("Crypto-Key", "dh=\(dh)")],
        [("Encryption", "salt=\(salt)"), ("Crypto-Key", "dh=\(dh)"), ("Topic", String(repeating: "t", count: 65))],
        [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(salt)")],
        [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(salt.dropLast())"), ("Crypto-Key", "dh=\(dh)")],
        [("Content-Encoding", "aesgcm"), ("Encryption", #"salt="a\"b""#), ("Crypto-Key", "dh=\(dh)")],
        [("Content-Encoding", " br ")],
        [("Content-Encoding", "aes128gcm")],
        [("Urgency", "high")],
    ]

    @Test("a request's fields read as bytes give what their Strings give", arguments: cases)
    func sameAsStrings(_ fields: [(String, String)]) {
        let request = HTTPRequest(method: "POST", target: "/push/t/1", headers: HTTPHeaders(fields), body: Self.body)
        #expect(viaBytes(request) == viaStrings(request))
    }

    @Test("a Content-Encoding that is not UTF-8 is quoted as its String reads (bytes replaced)")
    func notUTF8() throws {
        var parser = HTTPParser()
        var head = Array("POST /push/t/1 HTTP/1.1\r\nContent-Encoding: x".utf8)
        head += [0xFF, 0xFE, 0x41]
        head += Array("\r\nContent-Length: 40\r\n\r\n".utf8)
        let events = parser.feed(head + Self.body)
        guard case .request(let request) = try #require(events.first) else { return }
        let bytes = viaBytes(request)
        #expect(bytes == viaStrings(request))
        #expect(bytes == .failure(WebPushError(status: 415, reason: #"Content-Encoding "x??????A" is not supported; send aes128gcm or aesgcm"#)))
    }

    /// What the relay reads: the fields as bytes.
    private func viaBytes(_ request: HTTPRequest) -> Result<WebPushMessage, WebPushError> {
        do { return .success(try WebPushParser.parse(request, maxBodyBytes: 4096)) } catch { return .failure(error) }
    }

    /// What the relay read before: every field made a String.
    private func viaStrings(_ request: HTTPRequest) -> Result<WebPushMessage, WebPushError> {
        do {
            return .success(try WebPushParser.parse(headers: request.headers.list, body: request.body, maxBodyBytes: 4096))
        } catch {
            return .failure(error)
        }
    }
}
