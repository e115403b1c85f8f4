#if canImport(Glibc)
import Glibc
#endif
import APNs
import EventLoop
import Basics

/// A mistake on the command line: one line naming the variable or flag; its `code` is the exit
/// status (2, as for every usage mistake).
struct CommandError: CodedError {
    let code: Int32 = 2
    let message: String
    init(_ message: String) { self.message = message }
}

/// The environment `token`, `send` and `send-many` read: the library's names
/// (`APNsClientConfiguration.Variable`), with the relay's own names filling in those unset, so
/// one env file serves both.
enum CommandEnvironment {
    /// Library name ← the relay's name for the same setting.
    static let relayNames: [(String, String)] = [
        (APNsClientConfiguration.Variable.key, "APNS_AUTH_KEY"),
        (APNsClientConfiguration.Variable.keyFile, "APNS_AUTH_KEY_FILE"),
        (APNsClientConfiguration.Variable.teamID, "APPLE_TEAM_ID"),
        (APNsClientConfiguration.Variable.topic, "TOPIC"),
    ]

    static var variables: [String: String] {
        var variables = ProcessEnvironment.variables
        for (name, relayName) in relayNames where (variables[name] ?? "").isEmpty {
            if let value = variables[relayName], !value.isEmpty { variables[name] = value }
        }
        return variables
    }

    static func value(_ name: String) -> String? {
        guard let raw = variables[name] else { return nil }
        let trimmed = raw.trimmingWhitespace
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Says `error`'s message (a `CodedError`'s line without its code) and gives exit status 2.
    static func fail(_ error: Error) -> Int32 {
        let text = (error as? any CodedError)?.message ?? "\(error)"
        writeStandardError("apns-relay: \(text)\n")
        return (error as? CommandError)?.code ?? 2
    }
}
