#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import OpenSSLSupport
import Basics

/// How one app's pushes prove themselves to Apple: a `.p8` key's provider tokens, or Apple's push
/// certificate presented in the TLS handshake (toot-relay's and webpush-apn-relay's way).
package enum AppCredentials: Sendable {
    case token(TokenKey)
    case certificate(PushCertificate)

    /// Apps whose credentials have the same `sharingKey` share one APNs client: its connections
    /// and its one provider token. Apple counts new tokens per team and key, so two clients
    /// signing with one key would trip its rate limit; a certificate is its connections' identity.
    package var sharingKey: String {
        switch self {
        case .token(let key): "token \(key.teamID) \(key.keyID)"
        case .certificate(let certificate): "certificate \(certificate.identity.fingerprint)"
        }
    }

    /// The setting the credentials came from, for messages.
    package var variable: String {
        switch self {
        case .token(let key): key.variable
        case .certificate(let certificate): certificate.variable
        }
    }
}

/// Apple's `.p8` signing key with the ids its tokens carry.
package struct TokenKey: Sendable {
    /// Text of the key (PEM). Kept as text: the APNs module parses it; never printed.
    package var authKey: String
    /// Where it came from (`APNS_AUTH_KEY`, `APNS_AUTH_KEY_FILE`, an apps file's `key_file`).
    package var variable: String
    /// The 10-character key ID Apple shows next to the key; the JWT's `kid`.
    package var keyID: String
    /// The 10-character team ID; the JWT's `iss`.
    package var teamID: String

    package init(authKey: String, variable: String, keyID: String, teamID: String) {
        self.authKey = authKey
        self.variable = variable
        self.keyID = keyID
        self.teamID = teamID
    }
}

/// Apple's push certificate and its key, read and checked.
package struct PushCertificate: Sendable {
    package var identity: TLSClientIdentity
    /// Where it came from (`APNS_P12_FILE`, `P12_BASE64`, an apps file's `p12_file`…).
    package var variable: String

    /// Certificates this close to expiry are a warning at start and on the expiry gauge.
    package static let warningSeconds: Int64 = 30 * 86_400

    /// Where a certificate is read from.
    package enum Source: Sendable, Equatable {
        /// A `.p12` file and its password.
        case p12File(path: String, password: String)
        /// A `.p12`'s bytes in base64, and its password.
        case p12Base64(String, password: String)
        /// A PEM certificate file (leaf first) and a PEM key file.
        case pem(certificateFile: String, keyFile: String)
    }

    /// Reads the certificate and refuses one that has expired (`now`, Unix seconds): Apple would
    /// refuse every connection, and the relay would answer every push with an error.
    /// - Throws: `ConfigurationError` naming `variable` (and the file) with what is wrong.
    package static func load(_ source: Source, variable: String, now: Int64) throws(ConfigurationError) -> PushCertificate {
        let identity: TLSClientIdentity
        do {
            switch source {
            case .p12File(let path, let password):
                let bytes: [UInt8]
                do { bytes = try LocalFile.bytes(atPath: path) } catch {
                    throw ConfigurationError(.unreadableFile, variable, "\(variable) must name a readable .p12 file, \(couldNotRead(error))")
                }
                identity = try TLSClientIdentity.pkcs12(bytes, password: password)
            case .p12Base64(let text, let password):
                let compact = String(text.unicodeScalars.filter { $0 != "\n" && $0 != "\r" && $0 != " " })
                guard let bytes = Base64URL.decode(compact) else {
                    throw ConfigurationError(.invalid, variable, "\(variable) must hold a .p12 file in base64 (base64 -w0 cert.p12), got \(text.count) characters that are not base64")
                }
                identity = try TLSClientIdentity.pkcs12(bytes, password: password)
            case .pem(let certificateFile, let keyFile):
                let certificate: String, key: String
                do { certificate = try LocalFile.readText(atPath: certificateFile) ?? "" } catch {
                    throw ConfigurationError(.unreadableFile, variable, "\(variable) must name a readable PEM certificate, \(couldNotRead(error))")
                }
                do { key = try LocalFile.readText(atPath: keyFile) ?? "" } catch {
                    throw ConfigurationError(.unreadableFile, variable, "the key file of \(variable) must be a readable PEM private key, \(couldNotRead(error))")
                }
                identity = try TLSClientIdentity.pem(certificate: certificate, key: key)
            }
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(.invalid, variable, "\(variable) is not a usable push certificate: \(error)")
        }
        guard !identity.hasExpired(at: now) else {
            throw ConfigurationError(
                .invalid, variable,
                "\(variable) holds a push certificate that expired on \(Self.day(identity.notAfter)) (\(identity.commonName ?? "no common name")): make a new one in Apple's developer account and replace the file")
        }
        return PushCertificate(identity: identity, variable: variable)
    }

    /// Seconds until the certificate expires (negative once it has).
    package func secondsLeft(now: Int64) -> Int64 { identity.notAfter - now }

    /// The day a certificate expires, as `2026-12-31` (UTC), for messages.
    package var expiryDay: String { Self.day(identity.notAfter) }

    private static func day(_ unixSeconds: Int64) -> String {
        var time = time_t(unixSeconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
    }
}
