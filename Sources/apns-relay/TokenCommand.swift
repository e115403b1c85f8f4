#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import APNs

/// `apns-relay token`: prints a provider token, to try the key with curl or compare with Apple's docs.
enum TokenCommand {
    static func run(_ arguments: [String]) -> Int32 {
        do {
            guard arguments.isEmpty else { throw CommandError("token takes no arguments; it reads APNS_AUTH_KEY[_FILE], APNS_KEY_ID, APPLE_TEAM_ID") }
            let key = try CommandEnvironment.signingKey()
            let token = try ProviderToken(keyID: try CommandEnvironment.keyID(), teamID: try CommandEnvironment.teamID(),
                                          issuedAt: Int64(Date().timeIntervalSince1970), signer: key)
            print(token.jwt)
            return 0
        } catch {
            return CommandEnvironment.fail(error)
        }
    }
}
