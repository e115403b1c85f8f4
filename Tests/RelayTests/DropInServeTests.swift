import Foundation
import Testing
import MockAPNs
import OpenSSLSupport
import CertificateSupport
import TestWaits
import BuiltProducts
import Relay
#if canImport(Glibc)
import Glibc
#endif

/// The other relays' env files, unchanged, given to `apns-relay serve` (the shipped binary in
/// make test's second pass) against the emulator over TLS + HTTP/2; HTTPS served by the relay and
/// asked with curl; push certificates and the HTTPS certificate renewed under the running relay;
/// two apps of two teams in one relay.
@Suite("drop-in: toot-relay's and webpush-apn-relay's env files, HTTPS, several apps", .serialized, .enabled(if: BuiltProducts.runsRelay))
struct DropInServeTests {
    static let tootTopic = "cx.c3.toot"
    static let team = RelayHarness.teamID

    /// A push over HTTPS with curl (as Mastodon's sender connects: TLS with SNI, HTTP/1.1);
    /// returns the status, the headers and the body.
    static func curl(_ method: String = "POST", port: Int, path: String, ca: String, body: Bool = true) async throws -> (Int, String) {
        try await onOwnThread {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            var arguments = ["-sS", "--http1.1", "--max-time", "15", "--cacert", ca, "--resolve", "localhost:\(port):127.0.0.1",
                             "-o", "-", "-w", "\n%{http_code}", "-X", method]
            if body {
                arguments += ["-H", "Content-Encoding: aesgcm", "-H", "Encryption: salt=\(Sample.salt)", "-H", "Crypto-Key: dh=\(Sample.dh)",
                              "--data-binary", "@-"]
            }
            process.arguments = arguments + ["https://localhost:\(port)\(path)"]
            let input = Pipe(), output = Pipe()
            process.standardInput = input
            process.standardOutput = output
            process.standardError = output
            try process.run()
            input.fileHandleForWriting.write(Data(Sample.body))
            try input.fileHandleForWriting.close()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let text = String(decoding: data, as: UTF8.self)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }
    }

    /// Waits until `GET /ready` over HTTPS answers 200 (bounded: 15 s).
    static func waitUntilReady(_ relay: ServeProcess, port: Int, ca: String) async throws {
        let ready = try await eventually(within: .seconds(15)) {
            guard relay.isRunning else { throw TestHTTP.Failure(description: "the relay exited: \(relay.logText)") }
            return (try? await curl("GET", port: port, path: "/ready", ca: ca, body: false))?.0 == 200
        }
        guard ready else { throw TestHTTP.Failure(description: "the relay never became ready over HTTPS: \(relay.logText)") }
    }

    /// Writes `text` to `name` in `files`' directory; returns its path.
    static func write(_ files: TemporaryFiles, _ name: String, _ text: String) throws -> String {
        let path = files.directory.appendingPathComponent(name).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// A `.p12` of a push certificate the emulator's CA signed, made by `openssl pkcs12 -export`.
    static func p12(_ files: TemporaryFiles, _ name: String, apple: MockAPNsServer, topic: String, team: String, password: String) throws -> String {
        let issued = try apple.certificates.issuePushClientCertificate(bundleID: topic, teamID: team)
        let certificate = try write(files, name + ".pem", issued.certificatePEM)
        let key = try write(files, name + ".key", issued.privateKeyPEM)
        let p12 = files.directory.appendingPathComponent(name + ".p12").path
        try PushCertificateFiles.openssl(["pkcs12", "-export", "-in", certificate, "-inkey", key, "-out", p12, "-passout", "pass:\(password)"])
        return p12
    }

    @Test("toot-relay's env file, unchanged: the .p12 (no TOPIC) delivers on both routes over HTTPS the relay serves; both certificates renewed with SIGHUP")
    func tootRelay() async throws {
        let apple = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [], teamID: Self.team, keys: [:]), certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let port = try freePort()
        let https = try TestCertificates.make(), renewed = try TestCertificates.make()
        let httpsCA = try Self.write(files, "https-ca.pem", https.caPEM), renewedCA = try Self.write(files, "renewed-ca.pem", renewed.caPEM)
        _ = try Self.write(files, "toot-relay.crt", https.certificatePEM)
        _ = try Self.write(files, "toot-relay.key", https.privateKeyPEM)
        let p12 = try Self.p12(files, "push", apple: apple, topic: Self.tootTopic, team: Self.team, password: "hunter2")
        // toot-relay's own names, as its operators' env files hold them; APNS_HOST and BIND_ADDRESS
        // only point the relay at the emulator on loopback.
        try """
            P12_FILENAME=\(p12)
            P12_PASSWORD=hunter2
            CA_FILENAME=\(try Self.write(files, "apple-ca.pem", RelayHarness.certificates.caPEM))
            CRT_FILENAME=\(files.directory.path)/toot-relay.crt
            KEY_FILENAME=\(files.directory.path)/toot-relay.key
            PORT=\(port)
            APNS_HOST=localhost:\(apple.port)
            BIND_ADDRESS=127.0.0.1
            CONNECTION_POOL_SIZE=1
            """.write(to: files.envFile, atomically: true, encoding: .utf8)
        let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log)
        defer { relay.forceStop() }
        try await Self.waitUntilReady(relay, port: port, ca: httpsCA)
        #expect(relay.logText.contains("read the variable names of toot-relay: P12_FILENAME, P12_PASSWORD, CA_FILENAME, CRT_FILENAME, KEY_FILENAME"))

        let token = Sample.token
        let push = try await Self.curl(port: port, path: "/push/\(token)/sub-1", ca: httpsCA)
        let relayTo = try await Self.curl(port: port, path: "/relay-to/production/\(token)", ca: httpsCA)
        #expect(push.0 == 201 && relayTo.0 == 201, "\(push) \(relayTo) \(relay.logText)")
        let delivered = apple.records.filter { $0.status == 200 }
        #expect(delivered.map(\.topic) == [Self.tootTopic, Self.tootTopic])
        #expect(delivered.allSatisfy { $0.auth == .certificate(topic: Self.tootTopic, teamID: Self.team) && $0.header("authorization") == nil })
        // Docker's HEALTHCHECK speaks TLS when the env names a certificate; plain HTTP there is refused.
        let healthy = try await run(["healthcheck", "--env-file", files.envFile.path], environment: [:])
        #expect(healthy.status == 0, "\(healthy.stdout) \(healthy.stderr)")
        let plain = try await run(["healthcheck", "--port", String(port)], environment: [:])
        #expect(plain.status == 1 && plain.stderr.contains("answered 503"), "\(plain.stderr)")
        let metrics = try await Self.curl("GET", port: port, path: "/metrics", ca: httpsCA, body: false)
        #expect(metrics.1.contains(#"relay_apns_certificate_expiry_seconds{app="default"}"#))
        #expect(metrics.1.contains("relay_https_certificate_expiry_seconds"))

        // Renewal: both files replaced under the running relay, then SIGHUP.
        _ = try Self.write(files, "toot-relay.crt", renewed.certificatePEM)
        _ = try Self.write(files, "toot-relay.key", renewed.privateKeyPEM)
        let next = try Self.p12(files, "next", apple: apple, topic: Self.tootTopic, team: "RENEWED001", password: "hunter2")
        try FileManager.default.removeItem(atPath: p12)
        try FileManager.default.copyItem(atPath: next, toPath: p12)
        relay.signal(SIGHUP)
        try await relay.waitForLog("SIGHUP: reloaded the push certificate")
        // New connections get the new HTTPS certificate; the old CA no longer verifies them.
        try await Self.waitUntilReady(relay, port: port, ca: renewedCA)
        #expect(try await Self.curl("GET", port: port, path: "/health", ca: httpsCA, body: false).0 == 0)
        // The APNs connections drained and their replacements present the renewed certificate.
        let renewedDelivered = try await eventually(within: .seconds(10)) {
            let answer = try await Self.curl(port: port, path: "/push/\(token)/sub-2", ca: renewedCA)
            #expect(answer.0 == 201, "\(answer)")
            return apple.records.last { $0.status == 200 }?.auth == .certificate(topic: Self.tootTopic, teamID: "RENEWED001")
        }
        #expect(renewedDelivered, "\(relay.logText)")
        #expect(try await relay.stop() == 0)
    }

    @Test("webpush-apn-relay's env file, unchanged (token names), delivers on /relay-to")
    func webpushAPNRelay() async throws {
        let apple = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: ["org.joinmastodon.app"], teamID: Self.team,
                                                 keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
            certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let port = try freePort()
        let key = try Self.write(files, "AuthKey.p8", RelayHarness.key.pemPKCS8)
        try """
            TOKEN_AUTH_KEY_FILENAME=\(key)
            TOKEN_KEY_ID=\(RelayHarness.keyID)
            TOKEN_TEAM_ID=\(Self.team)
            TOPIC=org.joinmastodon.app
            CA_FILENAME=\(try Self.write(files, "apple-ca.pem", RelayHarness.certificates.caPEM))
            PORT=\(port)
            APNS_HOST=localhost:\(apple.port)
            BIND_ADDRESS=127.0.0.1
            """.write(to: files.envFile, atomically: true, encoding: .utf8)
        // CA_FILENAME is not used with a key, as webpush-apn-relay did not use it: the emulator's
        // CA reaches the system store through OpenSSL's SSL_CERT_FILE.
        let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log,
                                     environment: ["SSL_CERT_FILE": try Self.write(files, "system-store.pem", RelayHarness.certificates.caPEM)])
        defer { relay.forceStop() }
        try await relay.waitUntilReady(port: port)
        #expect(relay.logText.contains("read the variable names of webpush-apn-relay: CA_FILENAME, TOKEN_AUTH_KEY_FILENAME, TOKEN_KEY_ID, TOKEN_TEAM_ID"))
        #expect(relay.logText.contains("CA_FILENAME") && relay.logText.contains("is ignored with a .p8 key"), "\(relay.logText)")
        let response = try await TestHTTP.post(
            port: port, target: "/relay-to/production/\(Sample.token)",
            headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)")], body: Sample.body)
        #expect(response.status == 201, "\(response.status) \(relay.logText)")
        #expect(apple.records.last?.auth == .token(teamID: Self.team, keyID: RelayHarness.keyID))
        #expect(apple.records.last?.topic == "org.joinmastodon.app")
        #expect(try await relay.stop() == 0)
    }

    @Test("webpush-apn-relay as run in 2026: its env (no PORT, no TOPIC, the image's CA_FILENAME=/cas.crt unreadable here), its flags and its probe path; pushes reach Apple on 42069 with cx.c3.toot")
    func webpushAPNRelay2026() async throws {
        let apple = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [Self.tootTopic], teamID: Self.team,
                                                 keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
            certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        // Their default port, which this test cannot choose: taken in turns with any other test run
        // on this machine, and a clear failure if something else holds it.
        let port = 42069
        let portLock = try await lockPort(port)
        defer { releasePortLock(portLock) }
        #expect(try portIsFree(port), "port \(port) on 127.0.0.1 is taken on this machine; this test needs it")
        let key = try Self.write(files, "AuthKey.p8", RelayHarness.key.pemPKCS8)
        // As their manifests run it: the variables in the environment, no command, their flags.
        // APNS_HOST, BIND_ADDRESS and SSL_CERT_FILE (the emulator's CA as the system store) only
        // point it at the emulator on loopback.
        let environment = [
            "TOKEN_AUTH_KEY_FILENAME": key, "TOKEN_KEY_ID": RelayHarness.keyID, "TOKEN_TEAM_ID": Self.team,
            "CA_FILENAME": files.directory.path + "/cas.crt",
            "APNS_HOST": "localhost:\(apple.port)", "BIND_ADDRESS": "127.0.0.1",
            "SSL_CERT_FILE": try Self.write(files, "system-store.pem", RelayHarness.certificates.caPEM),
        ]
        let relay = try ServeProcess(arguments: ["-max-queue-size", "4096", "--max-workers=16"], log: files.log, environment: environment)
        defer { relay.forceStop() }
        let up = try await eventually(within: .seconds(15)) {
            guard relay.isRunning else { throw TestHTTP.Failure(description: "the relay exited: \(relay.logText)") }
            // Its own listening line first: a 200 before it would be another program's.
            guard relay.logText.contains("apns-relay listening") else { return false }
            return (try? await TestHTTP.get(port: port, target: "/relay-to/_health"))?.status == 200
        }
        #expect(up, "\(relay.logText)")
        let log = relay.logText
        #expect(log.contains("ignored webpush-apn-relay's flags -max-queue-size 4096, -max-workers 16"), "\(log)")
        #expect(log.contains(#""defaults_from":"webpush-apn-relay""#) && log.contains(#""defaults":"PORT=42069, TOPIC=cx.c3.toot""#), "\(log)")
        #expect(log.contains("the credentials are read from TOKEN_AUTH_KEY_FILENAME"), "\(log)")
        #expect(log.contains(#""listen":"127.0.0.1:42069""#) && log.contains(#""version":"\#(RelayVersion.current)""#), "\(log)")
        #expect(log.contains("CA_FILENAME") && log.contains("system trust store"), "\(log)")
        let delivered = try await eventually(within: .seconds(10)) {
            let response = try await TestHTTP.post(
                port: port, target: "/relay-to/production/\(Sample.token)/extra",
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)")], body: Sample.body)
            return response.status == 201
        }
        #expect(delivered, "\(relay.logText)")
        #expect(apple.records.last { $0.status == 200 }?.topic == Self.tootTopic)
        #expect(apple.records.last { $0.status == 200 }?.auth == .token(teamID: Self.team, keyID: RelayHarness.keyID))
        // Docker's HEALTHCHECK, given the same environment, finds the same port.
        let healthy = try await run(["healthcheck"], environment: environment)
        #expect(healthy.status == 0, "\(healthy)")
        #expect(try await relay.stop() == 0)
    }

    @Test("two apps of two teams and a certificate app in one relay: each push reaches Apple with its own topic and credentials; SIGHUP drops an app, whose pushes then answer 502")
    func severalApps() async throws {
        let otherKey = try ES256PrivateKey.generate()
        var configuration = MockAPNsConfiguration(topics: [RelayHarness.topic], teamID: Self.team,
                                                  keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)])
        configuration.otherTeams = [MockTeam(teamID: "OTHER12345", topics: ["com.other.app"], keys: ["OTHERKEY01": .es256(otherKey.publicKey)])]
        let apple = try MockAPNsServer.start(configuration: configuration, certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let port = try freePort()
        let betaP12 = try Self.p12(files, "beta", apple: apple, topic: "com.example.app.beta", team: Self.team, password: "b")
        let otherKeyFile = try Self.write(files, "AuthKey_OTHER.p8", otherKey.pemPKCS8)
        let beta = #"{"name": "beta", "p12_file": "\#(betaP12)", "p12_password": "b"}"#
        let other = #"{"name": "other", "topic": "com.other.app", "key_file": "\#(otherKeyFile)", "key_id": "OTHERKEY01", "team_id": "OTHER12345"}"#
        let appsFile = try Self.write(files, "apps.json", #"{"apps": [\#(beta), \#(other)]}"#)
        try files.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple,
                                ca: URL(fileURLWithPath: try Self.write(files, "apple-ca.pem", RelayHarness.certificates.caPEM)),
                                port: port, pool: 1)
        try ((try String(contentsOf: files.envFile, encoding: .utf8)) + "\nAPPS_FILE=\(appsFile)\n").write(to: files.envFile, atomically: true, encoding: .utf8)
        let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log)
        defer { relay.forceStop() }
        try await relay.waitUntilReady(port: port)

        func post(_ path: String) async throws -> TestHTTP.Response {
            try await TestHTTP.post(
                port: port, target: path,
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)")], body: Sample.body)
        }
        let routes = ["/push/\(Sample.token)/a", "/beta/push/\(Sample.token)/b", "/other/relay-to/production/\(Sample.token)"]
        for path in routes {
            // An app's client connects when the relay starts; its first push may wait for it.
            let response = try await post(path)
            #expect(response.status == 201, "\(path): \(response.status) \(String(decoding: response.body, as: UTF8.self)) \(relay.logText)")
        }
        let delivered = apple.records.filter { $0.status == 200 }
        #expect(delivered.map(\.topic) == [RelayHarness.topic, "com.example.app.beta", "com.other.app"])
        #expect(delivered.map(\.auth) == [.token(teamID: Self.team, keyID: RelayHarness.keyID),
                                          .certificate(topic: "com.example.app.beta", teamID: Self.team),
                                          .token(teamID: "OTHER12345", keyID: "OTHERKEY01")])
        // Three credentials, three clients: each has connections of its own.
        #expect(Set(delivered.map(\.connectionID)).count == 3)

        // The file loses "other": SIGHUP, and its pushes answer 502 (never a 4xx: the subscription is not dead).
        try #"{"apps": [\#(beta)]}"#.write(toFile: appsFile, atomically: true, encoding: .utf8)
        relay.signal(SIGHUP)
        try await relay.waitForLog("SIGHUP: reloaded; the default app's key or certificate is unchanged")
        let dropped = try await post(routes[2])
        #expect(dropped.status == 502 && dropped.reason?.contains(#"no app named "other""#) == true)
        #expect(try await post(routes[1]).status == 201)
        // The unchanged key signed no second token (Apple allows one new token per key every 20 minutes).
        #expect(try await post(routes[0]).status == 201)
        #expect(apple.rules.newTokensAccepted[RelayHarness.keyID] == 1)
        #expect(try await relay.stop() == 0)
    }

    @Test("check --connect proves a push certificate with Apple and warns of its expiry; an expired one stops with one line")
    func checkCertificate() async throws {
        let apple = try MockAPNsServer.start(
            configuration: MockAPNsConfiguration(topics: [], teamID: Self.team, keys: [:]), certificates: RelayHarness.certificates)
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let now = Int64(Date().timeIntervalSince1970)
        func environment(notAfter: Int64) throws -> [String: String] {
            let issued = try apple.certificates.issuePushClientCertificate(bundleID: Self.tootTopic, teamID: Self.team,
                                                                           notBefore: now - 30 * 86_400, notAfter: notAfter)
            return ["APNS_CERT_FILE": try Self.write(files, "push.pem", issued.certificatePEM),
                    "APNS_CERT_KEY_FILE": try Self.write(files, "push.key", issued.privateKeyPEM),
                    "CA_FILENAME": try Self.write(files, "apple-ca.pem", RelayHarness.certificates.caPEM),
                    "APNS_HOST": "localhost:\(apple.port)"]
        }
        let soon = try await run(["check", "--connect"], environment: try environment(notAfter: now + 10 * 86_400))
        #expect(soon.status == 0, "\(soon.stdout)\n\(soon.stderr)")
        #expect(soon.stdout.contains("push certificate accepted"), "\(soon.stdout)")
        #expect(soon.stdout.contains("expires on") && soon.stdout.contains(" days: renew it"), "\(soon.stdout)")
        #expect(apple.records.last?.reason == "BadDeviceToken")
        #expect(apple.records.last?.auth == .certificate(topic: Self.tootTopic, teamID: Self.team))
        let expired = try await run(["check"], environment: try environment(notAfter: now - 86_400))
        #expect(expired.status == 1)
        #expect(expired.stderr.contains("APNS_CERT_FILE holds a push certificate that expired on"), "\(expired.stderr)")
    }
}
