internal import CNghttp2

// What tests reach into, kept apart from the session: stream ids near HTTP/2's end.

extension HTTP2ClientSession {
    /// Moves the id the next request will get (odd, above every id used so far), so a test can
    /// bring a connection to the end of its 2^31 stream ids without sending a billion requests.
    package func setNextStreamID(_ id: Int32) throws {
        let session = try core.requireSession()
        let rv = nghttp2_session_set_next_stream_id(session, id)
        guard rv == 0 else {
            throw HTTP2Error(code: .internalError, message: "nghttp2 refused next stream id \(id): \(libraryText(rv))")
        }
    }
}
