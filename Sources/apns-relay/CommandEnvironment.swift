#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import OpenSSLSupport
import APNs

/// A configuration mistake: one line naming the variable or flag, then exit status 2.
struct CommandError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// The few environment variables `token` and `send` need. The relay's full configuration
/// reads the same names; this stays small until the two are unified.
enum CommandEnvironment {
    static func value(_ name: String) -> String? {
        guard let raw = ProcessInfo.processInfo.environment[name] else { return nil }
        let trimmed = raw.trimmingWhitespace
        return trimmed.isEmpty ? nil : trimmed
    }

    static func required(_ name: String, _ hint: String) throws -> String {
        guard let value = value(name) else { throw CommandError("\(name) is not set; \(hint)") }
        return value
    }

    /// The `.p8` key from APNS_AUTH_KEY (the text) or APNS_AUTH_KEY_FILE (a path).
    static func signingKey() throws -> ES256PrivateKey {
        if let text = value("APNS_AUTH_KEY") {
            do { return try ES256PrivateKey(pem: text) } catch {
                throw CommandError("APNS_AUTH_KEY is not a usable .p8 key: \(error)")
            }
        }
        guard let path = value("APNS_AUTH_KEY_FILE") else {
            throw CommandError("APNS_AUTH_KEY or APNS_AUTH_KEY_FILE must be set to the .p8 key from Apple")
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw CommandError("APNS_AUTH_KEY_FILE: cannot read \(path); check the path and permissions")
        }
        do { return try ES256PrivateKey(pem: text) } catch {
            throw CommandError("APNS_AUTH_KEY_FILE (\(path)) is not a usable .p8 key: \(error)")
        }
    }

    static func keyID() throws -> String { try required("APNS_KEY_ID", "set it to the 10-character Key ID of the .p8 key") }
    static func teamID() throws -> String { try required("APPLE_TEAM_ID", "set it to the 10-character Apple Team ID") }

    static func endpoint(_ name: String, default fallback: APNsEndpoint) throws -> APNsEndpoint {
        guard let text = value(name) else { return fallback }
        guard let endpoint = APNsEndpoint.parse(text) else {
            throw CommandError("\(name)=\(text) is not host or host:port")
        }
        return endpoint
    }

    static func fail(_ error: Error) -> Int32 {
        let text = (error as? CommandError)?.message ?? "\(error)"
        writeStandardError("apns-relay: \(text)\n")
        return 2
    }
}
