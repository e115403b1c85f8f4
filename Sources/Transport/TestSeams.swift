import HTTP2

// What tests reach into, kept apart from the connection: stream ids near HTTP/2's end.

extension HTTP2ClientConnection {
    /// See `HTTP2ClientSession.setNextStreamID`.
    package func setNextStreamID(_ id: Int32) throws {
        guard !isClosed else {
            throw HTTP2Error(code: .sessionClosed, message: "the connection to \(authority) is closed")
        }
        try h2.setNextStreamID(id)
    }
}
