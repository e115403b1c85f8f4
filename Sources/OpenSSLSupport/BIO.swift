internal import COpenSSL

/// A read-only memory BIO over a Swift string, for the PEM readers; freed by `body`'s end.
func withReadBIO<R>(_ text: String, _ body: (OpaquePointer) throws -> R) throws -> R {
    var bytes = Array(text.utf8)
    return try bytes.withUnsafeMutableBytes { raw -> R in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
            throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("out of memory creating a BIO"))
        }
        defer { BIO_free(bio) }
        return try body(bio)
    }
}

/// Runs `body` with an empty writable memory BIO and returns what it wrote as text.
package func stringFromBIO(_ body: (OpaquePointer) -> Bool) throws -> String {
    guard let bio = BIO_new(BIO_s_mem()) else {
        throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("out of memory creating a BIO"))
    }
    defer { BIO_free(bio) }
    guard body(bio) else {
        throw TLSError(.badConfiguration, OpenSSLErrorQueue.message("could not write PEM"))
    }
    var data: UnsafeMutablePointer<CChar>?
    let length = copenssl_BIO_get_mem_data(bio, &data)
    guard length > 0, let data else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: data, count: Int(length)), as: UTF8.self)
}

/// Every certificate in a PEM text, in order; the caller frees them with `X509_free`.
func readCertificates(pem: String, what: String) throws -> [OpaquePointer] {
    try withReadBIO(pem) { bio in
        var certificates: [OpaquePointer] = []
        OpenSSLErrorQueue.clearQueue()
        while let certificate = copenssl_PEM_read_bio_X509(bio) {
            certificates.append(certificate)
        }
        // The loop always ends with a "no start line" error at the end of the text.
        OpenSSLErrorQueue.clearQueue()
        guard !certificates.isEmpty else {
            throw TLSError(.badConfiguration, "\(what) holds no certificate: expected PEM text starting with -----BEGIN CERTIFICATE-----")
        }
        return certificates
    }
}
