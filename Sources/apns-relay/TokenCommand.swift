#if canImport(Glibc)
import Glibc
#endif
import APNs
import Basics

/// `apns-relay token`: prints a provider token, to try the key with curl or compare with Apple's docs.
enum TokenCommand {
    static func run(_ arguments: [String]) -> Int32 {
        do {
            guard arguments.isEmpty else { throw CommandError("token takes no arguments; it reads APNS_KEY[_FILE], APNS_KEY_ID, APNS_TEAM_ID") }
            let configuration = try APNsClientConfiguration(environment: CommandEnvironment.variables)
            guard let identity = configuration.credentials?.current else { throw CommandError("token needs a .p8 key: APNS_KEY[_FILE]") }
            let token = try ProviderToken(keyID: identity.keyID, teamID: identity.teamID,
                                          issuedAt: WallTime.unixSecondsNow, signer: identity.signer)
            print(token.jwt)
            return 0
        } catch {
            return CommandEnvironment.fail(error)
        }
    }
}
