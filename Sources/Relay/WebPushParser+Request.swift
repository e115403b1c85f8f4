import HTTPServer
import WebPush

extension WebPushParser {
    /// `parse` over a request as the server holds it: the fields are read as the bytes they
    /// arrived in (the headers' one buffer, held still for the call), so no String is made for a
    /// field the push does not keep.
    static func parse(_ request: HTTPRequest, maxBodyBytes: Int) throws(WebPushError) -> WebPushMessage {
        let parsed = request.headers.withFieldBytes { fields in
            Result { () throws(WebPushError) in
                try parse(fields: { visit in fields.forEach(visit) }, body: request.body, maxBodyBytes: maxBodyBytes)
            }
        }
        return try parsed.get()
    }
}
