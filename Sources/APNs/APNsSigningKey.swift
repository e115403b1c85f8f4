import OpenSSLSupport
import EventLoop

/// Lets the OpenSSL key sign provider tokens directly; the model only knows the protocol.
extension ES256PrivateKey: ProviderTokenSigner {}

/// The `.p8` key Apple issues (ES256, P-256) that signs provider tokens.
///
/// A value of this module so callers never see the OpenSSL owner underneath.
public struct APNsSigningKey: ProviderTokenSigner {
    package let key: ES256PrivateKey

    package init(_ key: ES256PrivateKey) { self.key = key }

    /// Loads the text of Apple's `.p8` file. Environment variables often carry it with literal
    /// `\n` sequences, surrounding quotes or on one line; all are accepted.
    /// - Throws: `APNsError.badKey` saying what the text is instead.
    public init(pem: String) throws(APNsError) { try self.init(pem: pem, named: "the key") }

    /// - Parameter named: what the error calls the text (`APNS_KEY`), so it reads once.
    package init(pem: String, named: String) throws(APNsError) {
        do { key = try ES256PrivateKey(pem: pem) } catch {
            throw APNsError(code: .badKey, message: "\(named) is not a usable .p8 key: \(error)")
        }
    }

    /// Reads and loads a `.p8` file.
    public init(file path: String) throws(APNsError) { try self.init(file: path, named: "the key file \(path)") }

    package init(file path: String, named: String) throws(APNsError) {
        guard let text = LocalFile.text(atPath: path) else {
            throw APNsError(code: .badKey, message: "\(named) cannot be read; check the path and permissions")
        }
        try self.init(pem: text, named: named)
    }

    /// A fresh random key, for tests against the emulator (Apple issues real ones).
    public static func generate() throws(APNsError) -> APNsSigningKey {
        do { return APNsSigningKey(try ES256PrivateKey.generate()) } catch {
            throw APNsError(code: .badKey, message: "could not generate a P-256 key: \(error)")
        }
    }

    /// The key as PKCS#8 PEM, the same format as Apple's `.p8`. Secret: never log it.
    public var pem: String { key.pemPKCS8 }

    public func sign(_ message: [UInt8]) throws -> [UInt8] { try key.sign(message) }
}
