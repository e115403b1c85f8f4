import APNs
import Basics
import HTTPServer

/// The responder's small pieces: the request id, the error bodies, printable paths.
extension RelayResponder {
    /// The caller's `X-Request-ID` when it is a plain token (at most `maxRequestIDLength` characters
    /// of `[A-Za-z0-9._:/+=-]`), else a fresh one: the value is echoed in the answer and written in
    /// every log line of the push, so it must be short and unable to forge log syntax.
    static func requestID(_ request: HTTPRequest) -> RequestID {
        guard let given = request.requestID, isPlainRequestID(given) else { return .generated(UUIDText.random()) }
        return .given(given)
    }

    /// A push's request id: the caller's, or a fresh UUID kept as its 16 bytes and written as text
    /// straight where it goes (the answer's field, the log line), so it is never made a String:
    /// that was an allocation per push without `X-Request-ID`, as Mastodon sends them.
    enum RequestID {
        case given(String)
        case generated(UUIDText.Bytes)

        /// Runs `body` over the id's text (UTF-8), valid during the call.
        func withText(_ body: (UnsafeBufferPointer<UInt8>) -> Void) {
            switch self {
            case .given(let text):
                StringBytes.with(text, body)
            case .generated(let uuid):
                withUnsafeTemporaryAllocation(of: UInt8.self, capacity: UUIDText.textCount) { text in
                    UUIDText.write(uuid, into: UnsafeMutableRawBufferPointer(text))
                    body(UnsafeBufferPointer(text))
                }
            }
        }

        /// The id's text as a String.
        var text: String {
            var text = ""
            withText { text = String(decoding: $0, as: UTF8.self) }
            return text
        }
    }

    static let maxRequestIDLength = 128

    static func isPlainRequestID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= maxRequestIDLength else { return false }
        return bytes.allSatisfy { b in
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            case UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "/"), UInt8(ascii: "+"),
                 UInt8(ascii: "="), UInt8(ascii: "-"):
                return true
            default:
                return false
            }
        }
    }

    /// `{"reason": …}` — every non-2xx answer of the relay carries one, so a human reading the
    /// sender's log learns what to fix.
    static func error(_ status: Int, _ reason: String, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        HTTPResponse(status: status, json: RelayAnswer(status: status, reason: reason).jsonBody, headers: headers)
    }

    static func methodNotAllowed(_ method: String, allow: String) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Allow", allow)
        return error(405, "method \(printable(method)) is not allowed here; use \(allow)", headers: headers)
    }

    /// A path cut to a sane length for a reason line (the request line may be 8 KiB).
    static func printable(_ s: String) -> String {
        s.utf8.count <= 120 ? s : String(s.prefix(120)) + "…"
    }
}
