#if canImport(Glibc)
import Glibc
#endif
import APNs
import Basics

/// `apns-relay token`: prints the provider token of the current window, to try the key with curl or
/// compare with Apple's docs.
enum TokenCommand {
    static func run(_ arguments: [String]) -> Int32 {
        do {
            guard arguments.isEmpty else { throw CommandError("token takes no arguments; it reads APNS_KEY[_FILE], APNS_KEY_ID, APNS_TEAM_ID") }
            let configuration = try APNsClientConfiguration(environment: CommandEnvironment.variables)
            guard let credentials = configuration.credentials else { throw CommandError("token needs a .p8 key: APNS_KEY[_FILE]") }
            // The token a relay with this key presents now, byte for byte (the window's `iat`,
            // RFC 6979's signature): trying it with curl counts as no new token.
            print(try credentials.current(now: WallTime.unixSecondsNow).token.jwt)
            return 0
        } catch {
            return CommandEnvironment.fail(error)
        }
    }
}
