// apns-relay: the WebPush-to-APNs relay. `serve` runs it; `demo` runs it against an embedded
// APNs emulator; `check` and `healthcheck` are for deployments.
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Relay

let usage = """
    usage: apns-relay [command] [options]

    A WebPush-to-APNs relay: Mastodon-style servers POST encrypted WebPush messages to
    /push/{device_token}/{id}[?sandbox=true] (metatext-apns's URL) or
    /relay-to/{production|development}/{device_token}[/extra] (toot-relay's); each goes to
    Apple as a mutable-content alert.

    commands:
      serve [--env-file FILE]     run the relay (the default); settings from the environment,
                                  FILE fills in variables the environment leaves unset;
                                  SIGHUP re-reads them and applies a new key, key id, team or CA
      demo [--once [--away]] [--route push|relay-to]
                                  the relay on 127.0.0.1:$PORT (default 3000) with an embedded APNs
                                  emulator and a throw-away key; prints a curl to try and every
                                  request "Apple" receives; held pushes go to a temporary store
                                  (SIGUSR1 takes the emulator away, SIGUSR2 brings it back).
                                  --once: send one push, print, exit; --away: the emulator is away
                                  while it is sent, and back after the relay's 201 (held);
                                  --route relay-to: the push goes to toot-relay's URL and payload
      check [--env-file FILE] [--connect]
                                  validate the settings and sign a provider token; --connect also
                                  connects to APNS_HOST and proves the token (or push certificate)
                                  with a push to the all-zero device token (400 BadDeviceToken:
                                  good; 403: exit 1)
      healthcheck [--port N] [--env-file FILE] [--https]
                                  GET /health on 127.0.0.1:$PORT, over HTTPS when serve would serve
                                  it (TLS_CERT_FILE, CRT_FILENAME); exit 0 when alive (HEALTHCHECK)
      token                       print a provider token (JWT) made from APNS_KEY[_FILE], APNS_KEY_ID,
                                  APNS_TEAM_ID (or the relay's APNS_AUTH_KEY[_FILE], APPLE_TEAM_ID)
      send --token HEX [options]  send one push with the APNs library, print the result JSON; exit 0
                                  delivered, 1 refused by Apple, 2 usage error, refused before sending
                                  or no answer from Apple. Options: --topic T --push-type TYPE
                                  --priority 10|5|1 --expiration UNIX (0 = try once) --collapse-id ID
                                  --apns-id UUID --sandbox --host HOST[:PORT] --ca-file PEM
                                  --timeout-ms MS; an alert: --title --body --subtitle --badge N
                                  --sound NAME|JSON --category --thread-id --mutable-content
                                  --interruption-level L --relevance-score X --target-content-id ID
                                  --title-loc-key K --title-loc-args A,B --loc-key K --loc-args A,B
                                  --data JSON; or --background [--data JSON]; or --payload JSON.
                                  Reads APNS_KEY[_FILE], APNS_KEY_ID, APNS_TEAM_ID, APNS_TOPIC,
                                  APNS_HOST, APNS_SANDBOX_HOST, APNS_CA, APNS_CA_FILE
      send-many --tokens-file FILE|- [options]
                                  the same push to one token a line, each with its own apns-id (--apns-id
                                  is for send only); prints {sent, failed, remove, results}; exit 0 all
                                  delivered, 2 refused before sending or nothing reached Apple, else 1
      clean-token TOKEN           print the token with spaces, tabs, < and > removed and letters in lower
                                  case, not checked (send checks it)
      --help                      this text
      --version                   the version, one line

    serve also takes webpush-apn-relay's flags -max-queue-size N and -max-workers N, and
    ignores them (one log line says so).

    settings (environment): APNS_AUTH_KEY or APNS_AUTH_KEY_FILE, APNS_KEY_ID, APPLE_TEAM_ID,
    TOPIC, and optionally PORT, BIND_ADDRESS, CONNECTION_POOL_SIZE, APNS_HOST, APNS_SANDBOX_HOST,
    APNS_CA_FILE, PUSH_TIMEOUT_MS, MAX_BODY_BYTES, ALERT_LOC_KEY, LOG_LEVEL, LOG_FORMAT,
    MAX_QUEUED_PUSHES, MAX_CONNECTIONS, RELAY_TO_TOPIC, RELAY_TO_ALERT, REQUEST_TIMEOUT_MS,
    MAX_BUFFERED_REQUEST_BYTES (see README.md).
    """

signal(SIGPIPE, SIG_IGN)

if CommandLine.arguments.dropFirst().first == "--version" {
    say("apns-relay \(RelayVersion.current)")
    exit(0)
}

var arguments = Arguments(rest: CommandLine.arguments.dropFirst())
var command = "serve"
if let first = arguments.rest.first, !first.hasPrefix("-") {
    command = first
    arguments.rest = arguments.rest.dropFirst()
}
// send and send-many take free text as values (`--title -h`): only their parser knows what is
// in option position.
let asksForHelp = command == "send" || command == "send-many"
    ? SendCommand.asksForHelp(Array(arguments.rest), many: command == "send-many")
    : arguments.rest.contains("--help") || arguments.rest.contains("-h")
if asksForHelp || command == "help" {
    say(usage)
    exit(0)
}

switch command {
case "serve": Serve.run(&arguments)
case "demo": Demo.run(&arguments)
case "check": Check.run(&arguments)
case "healthcheck": Healthcheck.run(&arguments)
case "token": exit(TokenCommand.run(Array(arguments.rest)))
case "send": exit(SendCommand.send(Array(arguments.rest)))
case "send-many": exit(SendCommand.sendMany(Array(arguments.rest)))
case "clean-token": exit(SendCommand.cleanToken(Array(arguments.rest)))
default: fail("unknown command \(command) (see --help)", code: 2)
}
