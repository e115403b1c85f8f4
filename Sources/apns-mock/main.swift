// apns-mock: the APNs emulator as a process, for the demo and manual tests of apns-relay.
import Foundation
import Dispatch
import OpenSSLSupport
import CertificateSupport
import MockAPNs

let usage = """
    usage: apns-mock [options]

    An APNs emulator over TLS + HTTP/2 that checks Apple's rules with its own code.

      --port N            port to listen on (default 2197; 0 picks a free one)
      --host H            address to bind (default 127.0.0.1)
      --topic T           a base topic the key may push to (repeatable; default com.example.app)
      --team-id ID        the team id tokens must carry as iss (default TEAM123456)
      --key-id ID         the key id tokens must carry as kid (default KEYID12345)
      --public-key FILE   the ES256 public key (PEM) that checks tokens; without it a key pair is
                          generated and the private key PEM is written to a temp file for apns-relay
      --max-streams N     MAX_CONCURRENT_STREAMS after the first authenticated push (default 1000)
      --sandbox           act as the development environment (answers carry apns-unique-id)
      --drop-to-one       advertise 1 stream after any rejection, until the next success
      --goaway-after N    send GOAWAY {"reason":"Shutdown"} after the Nth request on each connection
      --require-push-type refuse a request without apns-push-type (400 InvalidPushType); Apple does
                          so for watchOS only, and by default a missing push type is an alert
      --strict-payload    refuse a body that is not a JSON object with an aps object (400 BadPayload,
                          a reason Apple does not have); by default any non-empty body fits
      --token-max-age S   seconds a provider token is accepted after its iat (default 3600, Apple's hour)
      --token-update-interval S
                          seconds after a key's last new provider token before another new one is
                          accepted, on any connection; sooner is 429 TooManyProviderTokenUpdates
                          (default 1200, Apple's 20 minutes; 0 turns the rule off)
      --stats-every S     every S seconds print one line on stdout: connections accepted so far, open
                          connections, requests recorded (for watching reconnect storms)
      --ca-out FILE       write the CA certificate (PEM) clients must trust (default: a temp file)
      --client-cert-out DIR
                          issue a push client certificate, as Apple's portal would for certificate-
                          based authentication, signed by the emulator's CA, and write it to DIR as
                          push-cert.pem and push-key.pem (its unencrypted key, mode 600); a client
                          presenting it may leave out authorization (and apns-topic)
      --client-cert-topic T
                          the certificate's topic, its subject's UID (default: the first --topic);
                          its team (OU) is --team-id
      --client-cert-password P
                          also write DIR/push.p12, made by openssl pkcs12 -export with password P
      --log               one line per request on stdout: status, reason, path, topic
      --record FILE       every request as one JSON line in FILE (appended): connection, stream,
                          method, path, headers, payload (text, or base64 when not UTF-8), the
                          answer given (status, reason, apns-id; status null: never answered or
                          refused), the topic judged and the credential that authenticated it
                          (auth: a token's team and key, or a certificate's topic and team), so an
                          app developer sees exactly what their server sends
      --outage LIST       the outages SIGUSR1 begins, in turn (comma-separated; default away):
                            away         open connections cut, connects refused on the same port
                            silent       open connections cut, connects accepted and never
                                         answered (the client's TLS handshake times out)
                            other-ca     open connections cut, new ones get a server certificate
                                         from another CA (see --other-ca-out), as when Apple moved
                                         to a new root CA in 2025
                            unavailable  connections kept, every push that passes the checks
                                         answered 503 {"reason":"ServiceUnavailable"}
                          SIGUSR1 ends the outage in force and begins the next (after the last,
                          the first); SIGUSR2 ends it: serving normally, own certificate. Each
                          change prints "outage NAME begins" or "outage NAME ends" on stdout
      --outage-after S    begin the first outage S seconds after start; with --outage-for, each
                          next one S seconds after the previous ended, once through the list;
                          a signal takes over from the schedule, which then stops
      --outage-for S      an outage (timed or signalled) ends by itself after S seconds
      --other-ca-out FILE write the other CA's certificate (PEM), the one other-ca presents, for a
                          client to be given as an operator would (default with other-ca: a temp file)
      --help              this text

    Device tokens starting with dead, 0ee0, 0bad, d7f7, 4290, 5000, 5030, 5031, de1a, 0ff0, 7e5e
    get Apple's failures (410 Unregistered, ... never answered, REFUSED_STREAM); see MockFaults.
    """

/// Stops start-up with one line that says what to fix.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("apns-mock: \(message)\n".utf8))
    exit(2)
}

struct Options {
    var port = 2197
    var host = "127.0.0.1"
    var topics: [String] = []
    var teamID = "TEAM123456"
    var keyID = "KEYID12345"
    var publicKeyFile: String?
    var maxStreams: UInt32 = 1000
    var sandbox = false
    var dropToOne = false
    var goAwayAfter: Int?
    var caOut: String?
    var log = false
    var recordFile: String?
    var requirePushType = false
    var strictPayload = false
    var tokenMaxAge: Int64 = 3600
    var tokenUpdateInterval: Int64 = 1200
    var statsEvery: Int?
    var clientCertOut: String?
    var clientCertTopic: String?
    var clientCertPassword: String?
    var outages: [OutageKind] = [.away]
    var outageAfter: Int?
    var outageFor: Int?
    var otherCAOut: String?
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments[...]
    func value(_ flag: String) -> String {
        guard let v = rest.popFirst() else { fail("\(flag) needs a value (see --help)") }
        return v
    }
    func number(_ flag: String, _ range: ClosedRange<Int>) -> Int {
        let text = value(flag)
        guard let n = Int(text), range.contains(n) else {
            fail("\(flag) must be a whole number in \(range.lowerBound)...\(range.upperBound), not \"\(text)\"")
        }
        return n
    }
    while let flag = rest.popFirst() {
        switch flag {
        case "--help", "-h":
            print(usage)
            exit(0)
        case "--port": options.port = number(flag, 0...65535)
        case "--host": options.host = value(flag)
        case "--topic": options.topics.append(value(flag))
        case "--team-id": options.teamID = value(flag)
        case "--key-id": options.keyID = value(flag)
        case "--public-key": options.publicKeyFile = value(flag)
        case "--max-streams": options.maxStreams = UInt32(number(flag, 1...1_000_000))
        case "--sandbox": options.sandbox = true
        case "--drop-to-one": options.dropToOne = true
        case "--goaway-after": options.goAwayAfter = number(flag, 1...Int(Int32.max))
        case "--token-max-age": options.tokenMaxAge = Int64(number(flag, 1...86_400))
        case "--token-update-interval": options.tokenUpdateInterval = Int64(number(flag, 0...86_400))
        case "--stats-every": options.statsEvery = number(flag, 1...3600)
        case "--ca-out": options.caOut = value(flag)
        case "--client-cert-out": options.clientCertOut = value(flag)
        case "--client-cert-topic": options.clientCertTopic = value(flag)
        case "--client-cert-password": options.clientCertPassword = value(flag)
        case "--log": options.log = true
        case "--record": options.recordFile = value(flag)
        case "--require-push-type": options.requirePushType = true
        case "--strict-payload": options.strictPayload = true
        case "--outage":
            switch OutageKind.list(value(flag)) {
            case .success(let kinds): options.outages = kinds
            case .failure(let error):
                fail("--outage: \"\(error.word)\" is no outage (away, silent, other-ca, unavailable, comma-separated)")
            }
        case "--outage-after": options.outageAfter = number(flag, 1...86_400)
        case "--outage-for": options.outageFor = number(flag, 1...86_400)
        case "--other-ca-out": options.otherCAOut = value(flag)
        default: fail("unknown option \(flag) (see --help)")
        }
    }
    if options.topics.isEmpty { options.topics = ["com.example.app"] }
    if options.clientCertOut == nil, options.clientCertTopic != nil || options.clientCertPassword != nil {
        fail("--client-cert-topic and --client-cert-password need --client-cert-out DIR")
    }
    return options
}

/// The private directory made for files written when no path was given (the generated key, the
/// CA): removed when the emulator stops, so no private key is left behind.
nonisolated(unsafe) var madeDirectory: URL?

/// A private directory for the files we write when no path was given.
func tempDirectory() -> URL {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-\(getpid())")
    madeDirectory = dir
    do {
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    } catch {
        fail("cannot create \(dir.path): \(error.localizedDescription)")
    }
    return dir
}

func write(_ text: String, to path: String, what: String, permissions: Int = 0o644) {
    guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8),
                                         attributes: [.posixPermissions: permissions]) else {
        fail("cannot write the \(what) to \(path): check the directory exists and is writable")
    }
}

let options = parse(Array(CommandLine.arguments.dropFirst()))

let publicKey: ES256PublicKey
var privateKeyPath: String?
if let file = options.publicKeyFile {
    guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
        fail("--public-key: cannot read \(file)")
    }
    do {
        publicKey = try ES256PublicKey(pem: pem)
    } catch {
        fail("--public-key \(file): \(error)")
    }
} else {
    do {
        let key = try ES256PrivateKey.generate()
        let path = tempDirectory().appendingPathComponent("AuthKey_\(options.keyID).p8").path
        write(key.pemPKCS8, to: path, what: "generated private key", permissions: 0o600)
        privateKeyPath = path
        publicKey = key.publicKey
    } catch {
        fail("cannot generate a key pair: \(error)")
    }
}

var faults = MockFaults.standard
faults.goAwayAfterRequests = options.goAwayAfter
let configuration = MockAPNsConfiguration(
    topics: options.topics,
    teamID: options.teamID,
    keys: [options.keyID: .es256(publicKey)],
    maxConcurrentStreams: options.maxStreams,
    dropToOneAfterRejection: options.dropToOne,
    sandbox: options.sandbox,
    faults: faults,
    requirePushType: options.requirePushType,
    strictPayload: options.strictPayload,
    providerTokenMaxAge: options.tokenMaxAge,
    providerTokenUpdateInterval: options.tokenUpdateInterval
)

/// One line per request, for watching a relay talk to "Apple".
@Sendable func logLine(_ record: MockRecord) {
    let status = record.status.map { String($0) } ?? "-"
    let line = "\(status) \(record.reason ?? "-") \(record.path) \(record.topic ?? record.header("apns-topic") ?? "-")\n"
    FileHandle.standardOutput.write(Data(line.utf8))
}

/// A request and its answer as one JSON object (Foundation's encoder: the emulator shares no
/// code with the client's).
func jsonLine(_ record: MockRecord) -> Data {
    var object: [String: Any] = [
        "connection": record.connectionID, "stream": Int(record.streamID), "method": record.method, "path": record.path,
        "headers": record.headers.map { [$0.name, $0.value] },
        "status": record.status.map { $0 as Any } ?? NSNull(), "reason": record.reason.map { $0 as Any } ?? NSNull(),
        "apns_id": record.apnsID.map { $0 as Any } ?? NSNull(),
        "topic": record.topic.map { $0 as Any } ?? NSNull(),
    ]
    switch record.auth {
    case .token(let team, let key)?: object["auth"] = ["kind": "token", "team": team, "key": key]
    case .certificate(let topic, let team)?: object["auth"] = ["kind": "certificate", "topic": topic, "team": team.map { $0 as Any } ?? NSNull()]
    case nil: object["auth"] = NSNull()
    }
    if let text = String(validating: record.payload, as: UTF8.self) {
        object["payload"] = text
    } else {
        object["payload_base64"] = Data(record.payload).base64EncodedString()
    }
    var line = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
    line.append(UInt8(ascii: "\n"))
    return line
}

let recordHandle: FileHandle? = options.recordFile.map { path in
    if !FileManager.default.fileExists(atPath: path) { write("", to: path, what: "record file") }
    guard let handle = FileHandle(forWritingAtPath: path) else { fail("--record: cannot open \(path) for writing") }
    handle.seekToEndOfFile()
    return handle
}
let onRecord: (@Sendable (MockRecord) -> Void)?
switch (options.log, recordHandle) {
case (false, nil): onRecord = nil
case (let log, let file):
    // One loop (below) calls it, so the lines never interleave.
    onRecord = { record in
        if log { logLine(record) }
        file?.write(jsonLine(record))
    }
}

let server: MockAPNsServer
do {
    server = try MockAPNsServer.start(configuration: configuration, host: options.host, port: options.port,
                                      loopCount: 1, onRecord: onRecord)
} catch {
    fail("cannot listen on \(options.host):\(options.port): \(error)")
}

let caPath = options.caOut ?? tempDirectory().appendingPathComponent("ca.pem").path
write(server.caPEM, to: caPath, what: "CA certificate")

/// Issues a push client certificate and writes it (and a .p12 when a password was given) into
/// `directory`; returns a note for the banner.
func writeClientCertificate(into directory: String, topic: String) -> String {
    let certificate: PushClientCertificate
    do {
        certificate = try server.certificates.issuePushClientCertificate(bundleID: topic, teamID: options.teamID)
    } catch {
        fail("--client-cert-out: cannot issue a certificate for \(topic): \(error)")
    }
    let certPath = directory + "/push-cert.pem", keyPath = directory + "/push-key.pem"
    write(certificate.certificatePEM, to: certPath, what: "client certificate")
    write(certificate.privateKeyPEM, to: keyPath, what: "client certificate's key", permissions: 0o600)
    var note = " client-cert=\(certPath) client-key=\(keyPath) client-topic=\(topic)"
    if let password = options.clientCertPassword {
        let p12Path = directory + "/push.p12"
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["pkcs12", "-export", "-in", certPath, "-inkey", keyPath, "-out", p12Path,
                             "-passout", "pass:\(password)"]
        do {
            try openssl.run()
            openssl.waitUntilExit()
        } catch {
            fail("--client-cert-password: cannot run /usr/bin/openssl to make the .p12: \(error.localizedDescription)")
        }
        guard openssl.terminationStatus == 0 else {
            fail("--client-cert-password: openssl pkcs12 -export exited \(openssl.terminationStatus)")
        }
        note += " client-p12=\(p12Path)"
    }
    return note
}

var banner = "apns-mock listening on \(options.host):\(server.port) ca=\(caPath) team=\(options.teamID) key=\(options.keyID)"
if let privateKeyPath { banner += " private-key=\(privateKeyPath)" }
if let directory = options.clientCertOut {
    banner += writeClientCertificate(into: directory, topic: options.clientCertTopic ?? options.topics[0])
}

// The other CA exists from start-up, so its file is there before any outage begins.
var otherCA: TestCertificates?
if options.otherCAOut != nil || options.outages.contains(.otherCA) {
    do {
        otherCA = try TestCertificates.make(caName: "apns-mock other CA")
    } catch {
        fail("cannot make the other CA's certificates: \(error)")
    }
    let path = options.otherCAOut ?? tempDirectory().appendingPathComponent("other-ca.pem").path
    write(otherCA!.caPEM, to: path, what: "other CA certificate")
    banner += " other-ca=\(path)"
}
let outages = OutageDriver(server: server, kinds: options.outages, lasting: options.outageFor, otherCA: otherCA)
// SIGUSR1/SIGUSR2 would kill the process until handled: sources set up before the banner, so a
// script that waited for it can signal at once.
var signalSources: [DispatchSourceSignal] = []
for (sig, action) in [(SIGUSR1, { outages.beginNext() }), (SIGUSR2, { outages.end() })] {
    signal(sig, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler(handler: action)
    source.resume()
    signalSources.append(source)
}
if let after = options.outageAfter { outages.schedule(after: after) }

FileHandle.standardOutput.write(Data((banner + "\n").utf8))

var statsTimer: DispatchSourceTimer?
if let every = options.statsEvery {
    let timer = DispatchSource.makeTimerSource(queue: .main)
    timer.schedule(deadline: .now() + .seconds(every), repeating: .seconds(every))
    timer.setEventHandler {
        let line = "stats t=\(Int(Date().timeIntervalSince1970)) connections=\(server.connectionCount) open=\(server.openConnectionCount) requests=\(server.records.count)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
    timer.resume()
    statsTimer = timer
}

// SIGINT/SIGTERM through dispatch sources, so the handler may do real work (stop the server).
for sig in [SIGINT, SIGTERM] {
    signal(sig, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
    source.setEventHandler {
        server.stop()
        try? recordHandle?.synchronize()
        if let madeDirectory { try? FileManager.default.removeItem(at: madeDirectory) }
        exit(0)
    }
    source.resume()
    signalSources.append(source)
}
dispatchMain()
