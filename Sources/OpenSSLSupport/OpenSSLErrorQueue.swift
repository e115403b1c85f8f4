internal import COpenSSL

/// Reads OpenSSL's per-thread error queue into text, because its numeric codes mean
/// nothing in a log line and a stale entry would be blamed on the next failure.
package enum OpenSSLErrorQueue {
    /// Empties the calling thread's error queue and returns its entries, oldest first,
    /// joined with "; " (empty when there were none).
    package static func drainQueue() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            parts.append(text(for: code))
        }
        return parts.joined(separator: "; ")
    }

    /// Forgets every queued error: call before an operation whose failure you will report.
    ///
    /// Looks first and clears only a queue that holds something: the queue is nearly always
    /// empty, and `ERR_clear_error` resets all 16 slots (two frees each, about 800 instructions)
    /// where the look costs a third of that. TLS sessions do this before every read and write.
    package static func clearQueue() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// The reason code of the oldest queued error, without removing it (0 when empty).
    static func peekReason() -> Int32 {
        ERR_GET_REASON(ERR_peek_error())
    }

    static func text(for code: UInt) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `what` followed by whatever OpenSSL queued, so the message carries both our
    /// context and the library's reason.
    package static func message(_ what: String) -> String {
        let queued = drainQueue()
        return queued.isEmpty ? what : "\(what) (\(queued))"
    }
}
