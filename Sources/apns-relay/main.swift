import Foundation

// One subcommand per file; serve, demo and check are added beside these.
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "token":
    exit(TokenCommand.run(Array(arguments.dropFirst())))
case "send":
    exit(SendCommand.run(Array(arguments.dropFirst())))
default:
    FileHandle.standardError.write(Data("""
        usage: apns-relay <command>
          token   print a provider token (JWT) made from APNS_AUTH_KEY[_FILE], APNS_KEY_ID, APPLE_TEAM_ID
          send    send one push: --token HEX [--topic T] [--sandbox] [--title X --body Y | --payload JSON]
                  [--push-type TYPE] [--priority 10|5|1]; honours APNS_HOST, APNS_SANDBOX_HOST, APNS_CA_FILE

        """.utf8))
    exit(2)
}
