/// A string's UTF-8 bytes lent where they are, for the writers that copy a value into a buffer:
/// the HTTP answer's fields, the APNs payload's pieces, the JSON escape count.
package enum StringBytes {
    /// Runs `body` over `text`'s UTF-8 bytes, valid during the call. A native or literal string
    /// lends them where they are, with no copy of the value to retain and release (which
    /// `var text = text; text.withUTF8` costs); any other is made contiguous first. Inlinable, so
    /// a caller in another module gets it specialised for its `body`.
    @inlinable
    package static func with<R>(_ text: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try text.utf8.withContiguousStorageIfAvailable(body) { return result }
        var text = text
        return try text.withUTF8(body)
    }
}
