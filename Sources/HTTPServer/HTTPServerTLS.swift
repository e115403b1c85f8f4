// HTTPS without a proxy in front: the certificate and key files the server presents, loaded
// into a TLS context, and reloaded (on SIGHUP, after a renewal) without a restart.

#if canImport(Glibc)
import Glibc
#endif
internal import Basics
import EventLoop
import OpenSSLSupport
import Synchronization

/// The certificate and key an HTTPS listener presents (`HTTPServerConfiguration.tls`).
///
/// Both are PEM files: the certificate file holds the leaf first, then any intermediates (a
/// Let's Encrypt `fullchain.pem`); the key file holds the leaf's unencrypted private key
/// (`privkey.pem`). The context speaks TLS 1.2 or newer and offers ALPN `http/1.1`.
///
/// `reload()` reads the same paths again and swaps the context for connections accepted
/// afterwards; connections already open keep the context they were accepted with.
package final class HTTPServerTLS: Sendable {
    package let certificatePath: String
    package let keyPath: String
    /// The context new connections take, and its certificate's notAfter; replaced whole by `reload()`.
    private let current: Mutex<Loaded>

    private struct Loaded: Sendable {
        let context: TLSContext
        let notAfter: Int64?
    }

    /// The most a certificate or key file is read to: a chain of a few certificates is a few KiB.
    static let maxFileBytes = 1 << 20

    /// Loads both files now.
    ///
    /// - Throws: `HTTPServerTLSError`, one line naming the file and what is wrong with it.
    package init(certificatePath: String, keyPath: String) throws(HTTPServerTLSError) {
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        current = Mutex(try Self.load(certificatePath: certificatePath, keyPath: keyPath))
    }

    /// Reads both files again and, when they load, serves them to every connection accepted
    /// from now on. When they do not, the context in use stays and the error is thrown.
    package func reload() throws(HTTPServerTLSError) {
        let loaded = try Self.load(certificatePath: certificatePath, keyPath: keyPath)
        current.withLock { $0 = loaded }
    }

    /// The context a connection accepted now takes.
    var context: TLSContext { current.withLock { $0.context } }

    /// When the certificate served to new connections expires, in Unix seconds (for an expiry
    /// metric or a warning); nil if its validity could not be read.
    package var certificateNotAfter: Int64? { current.withLock { $0.notAfter } }

    private static func load(certificatePath: String, keyPath: String) throws(HTTPServerTLSError) -> Loaded {
        let certificate = try read(certificatePath, what: "certificate")
        let key = try read(keyPath, what: "key")
        try checkCertificatePEM(certificate, path: certificatePath)
        try checkKeyPEM(key, path: keyPath)
        do {
            let context = try TLSContext.server(certificateChainPEM: certificate, privateKeyPEM: key, alpn: ["http/1.1"])
            return Loaded(context: context, notAfter: context.certificateNotAfter)
        } catch let error as TLSError where error.code == .keyMismatch {
            throw HTTPServerTLSError(.keyMismatch, "the TLS key file \(keyPath) does not match the certificate in \(certificatePath) (the file's first certificate must be the one the key was made for)")
        } catch {
            let reason = (error as? TLSError)?.message ?? "\(error)"
            throw HTTPServerTLSError(.invalid, "the TLS certificate file \(certificatePath) with the key file \(keyPath) could not be loaded: \(reason)")
        }
    }

    private static func read(_ path: String, what: String) throws(HTTPServerTLSError) -> String {
        let bytes: [UInt8]
        do {
            bytes = try LocalFile.bytes(atPath: path, maxBytes: maxFileBytes)
        } catch {
            throw HTTPServerTLSError(.unreadable, "cannot read the TLS \(what) file \(path): \(error.reason)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func checkCertificatePEM(_ text: String, path: String) throws(HTTPServerTLSError) {
        guard StringBytes.contains(text, "-----BEGIN CERTIFICATE-----") else {
            let hint = StringBytes.contains(text, "PRIVATE KEY-----") ? "it holds a private key; are the certificate and key files swapped?"
                : "it holds no -----BEGIN CERTIFICATE----- block"
            throw HTTPServerTLSError(.notPEM, "the TLS certificate file \(path) is not a PEM certificate: \(hint)")
        }
    }

    private static func checkKeyPEM(_ text: String, path: String) throws(HTTPServerTLSError) {
        if StringBytes.contains(text, "-----BEGIN ENCRYPTED PRIVATE KEY-----") || StringBytes.contains(text, "Proc-Type: 4,ENCRYPTED") {
            throw HTTPServerTLSError(.notPEM, "the TLS key file \(path) is encrypted; the server needs it unencrypted (openssl pkey -in it -out a new file)")
        }
        guard StringBytes.contains(text, "-----BEGIN "), StringBytes.contains(text, "PRIVATE KEY-----") else {
            let hint = StringBytes.contains(text, "-----BEGIN CERTIFICATE-----") ? "it holds a certificate; are the certificate and key files swapped?"
                : "it holds no -----BEGIN PRIVATE KEY----- block"
            throw HTTPServerTLSError(.notPEM, "the TLS key file \(path) is not a PEM private key: \(hint)")
        }
    }
}

extension LocalFile.Failure {
    /// errno's text, or what the size limit means.
    fileprivate var reason: String {
        errno == EFBIG ? "it is larger than \(HTTPServerTLS.maxFileBytes) bytes; is it a certificate?" : String(cString: strerror(errno))
    }
}

/// Why a certificate or key could not be loaded; the message is one line naming the file.
package struct HTTPServerTLSError: CodedError {
    package enum Code: String, NamedCode {
        /// The file could not be read (missing, no permission, a directory, too large).
        case unreadable
        /// The file holds no PEM certificate, or no unencrypted PEM private key.
        case notPEM
        /// The key is not the certificate's.
        case keyMismatch
        /// OpenSSL refused the certificate or key for another reason; the message says which.
        case invalid
    }

    package let code: Code
    package let message: String

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
