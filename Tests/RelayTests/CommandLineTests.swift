import Foundation
import Testing
import MockAPNs
import OpenSSLSupport
import BuiltProducts
import TestWaits
import Relay
import APNs
import Basics
#if canImport(Glibc)
import Glibc
#endif

@Suite("apns-relay executable", .serialized, .enabled(if: BuiltProducts.runsRelay))
struct CommandLineTests {
    @Test("demo --once relays one encrypted push through the emulator, prints it and exits 0")
    func demoOnce() async throws {
        let result = try await run(["demo", "--once"], environment: ["PORT": "0"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("relay answered 201"))
        #expect(result.stdout.contains("apns-push-type: alert"))
        #expect(result.stdout.contains(#""e":"aesgcm""#))
        #expect(result.stdout.contains("Alice mentioned you"))
    }

    @Test("demo --once --route relay-to relays one push to toot-relay's URL, and the device decrypts p/k/s")
    func demoRelayTo() async throws {
        let result = try await run(["demo", "--once", "--route", "relay-to"], environment: ["PORT": "0"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("POST /relay-to/production/"))
        #expect(result.stdout.contains("relay answered 201"))
        #expect(result.stdout.contains(#"{"aps":{"alert":"🎺","mutable-content":1,"content-available":1},"p":""#))
        #expect(result.stdout.contains(#""x":"demo-subscription-1","k":""#))
        #expect(result.stdout.contains("the device decrypts p/k/s to:"))
        #expect(result.stdout.contains("Alice mentioned you"))
    }

    @Test("demo --once --away: the emulator away, the push is answered 201 held, and reaches it once it is back; the store is gone after")
    func demoAway() async throws {
        let result = try await run(["demo", "--once", "--away"], environment: ["PORT": "0"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stdout.contains("the APNs emulator is away"))
        #expect(result.stdout.contains("relay answered 201"))
        #expect(result.stdout.contains("X-Relay-Held: true"), "\(result.stdout)")
        #expect(result.stdout.contains("the APNs emulator is back"))
        #expect(result.stdout.contains("Alice mentioned you"))
        #expect(result.stderr.contains("push held"), "the relay's line for it: \(result.stderr)")
        let line = try #require(result.stdout.split(separator: "\n").first { $0.contains("pushes are held in ") })
        let store = String(line.split(separator: " ").last ?? "")
        #expect(store.hasPrefix("/tmp/apns-relay-demo-") && store.hasSuffix("/held.sqlite"), "\(line)")
        #expect(!FileManager.default.fileExists(atPath: (store as NSString).deletingLastPathComponent), "the demo's store stays after it: \(store)")
    }

    @Test("demo --route with an unknown route stops with exit 2")
    func demoUnknownRoute() async throws {
        let result = try await run(["demo", "--route", "toot"], environment: ["PORT": "0"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("relay-to"))
    }

    @Test("serve without a key stops with one line naming the variable, exit 1")
    func configurationError() async throws {
        let result = try await run(["serve"], environment: ["APNS_KEY_ID": "ABC123DEFG"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1)
        #expect(result.stderr.contains("APNS_AUTH_KEY"))
    }

    @Test("STORE_PATH that cannot be used stops start-up with one line naming it, exit 1")
    func storePathUnusable() async throws {
        let result = try await run(["serve"], environment: [
            "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID, "APPLE_TEAM_ID": RelayHarness.teamID,
            "TOPIC": RelayHarness.topic, "PORT": String(try freePort()), "BIND_ADDRESS": "127.0.0.1",
            "STORE_PATH": "/nonexistent-\(getpid())/held.sqlite"])
        #expect(result.status == 1, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("STORE_PATH") && result.stderr.contains("/nonexistent-\(getpid()) is not writable"), "\(result.stderr)")
    }

    @Test("STORE_URL refused at start-up: rediss://, both STORE_URL and STORE_PATH, a bad URL: one line naming it, never the password, exit 1",
          arguments: [("rediss://:hunter2@redis:6379/0", nil, "no TLS"),
                      ("redis://:hunter2@redis:6379/0", "/tmp/held.sqlite", "both set"),
                      ("redis://:hunter2@redis:port/0", nil, "port")] as [(String, String?, String)])
    func storeURLRefused(url: String, path: String?, what: String) async throws {
        var environment = [
            "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID, "APPLE_TEAM_ID": RelayHarness.teamID,
            "TOPIC": RelayHarness.topic, "PORT": String(try freePort()), "BIND_ADDRESS": "127.0.0.1", "STORE_URL": url]
        if let path { environment["STORE_PATH"] = path }
        let result = try await run(["serve"], environment: environment)
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("STORE_URL") && result.stderr.contains(what), "\(result.stderr)")
        #expect(!result.stderr.contains("hunter2") && !result.stdout.contains("hunter2"))
    }

    @Test("the default store path not writable (a bare binary): one warning, holding off, and /health says so",
          .enabled(if: !FileManager.default.fileExists(atPath: "/var/lib/apns-relay")))
    func defaultStoreUnusable() async throws {
        let port = try freePort()
        try await withIdleServe(port: port) { relay in
            #expect(relay.logText.contains("pushes Apple cannot take will not be held"), "\(relay.logText)")
            let health = try await TestHTTP.get(port: port, target: "/health")
            let body = String(decoding: health.body, as: UTF8.self)
            #expect(health.status == 200 && body.hasPrefix(#"{"status":"alive","hold":"off: cannot create the store at /var/lib/apns-relay/held.sqlite"#), "\(body)")
            #expect(try await relay.stop() == 0)
        }
    }

    @Test("healthcheck fails when nothing listens")
    func healthcheckFails() async throws {
        let result = try await run(["healthcheck", "--port", "1"], environment: [:])
        #expect(result.status == 1)
    }

    @Test("--help lists the commands")
    func help() async throws {
        let result = try await run(["--help"], environment: [:])
        #expect(result.status == 0)
        for command in ["serve", "demo", "check", "healthcheck"] { #expect(result.stdout.contains(command)) }
    }

    @Test("--version prints the version on one line, exit 0")
    func version() async throws {
        let result = try await run(["--version"], environment: [:])
        #expect(result.status == 0 && result.stdout == "apns-relay \(RelayVersion.current)\n" && result.stderr.isEmpty, "\(result)")
    }

    @Test("serve refuses webpush-apn-relay's flags without a whole number, exit 2, as Go's flag package did")
    func foreignFlagsNeedNumbers() async throws {
        for arguments in [["-max-workers", "lots"], ["serve", "--max-queue-size="], ["-max-queue-size"]] {
            let result = try await run(arguments, environment: [:])
            #expect(result.status == 2 && result.stderr.contains("webpush-apn-relay's flag, ignored here) needs a whole number"), "\(arguments): \(result)")
        }
        #expect(try await run(["-max-everything", "1"], environment: [:]).stderr.contains("unknown option -max-everything"))
    }

    @Test("a .p8 or .p12 the relay's user may not read: errno's words and the fix (chown, or a mode) in the one line; a missing one reads differently")
    func secretFilePermissions() async throws {
        let files = try TemporaryFiles()
        defer { files.remove() }
        try RelayHarness.key.pemPKCS8.write(to: files.keyFile, atomically: true, encoding: .utf8)
        let p12 = files.directory.appendingPathComponent("push.p12")
        try Data("not read".utf8).write(to: p12)
        for file in [files.keyFile, p12] { chmod(file.path, 0o600) }
        // As the image runs: uid 10001, the files root's with mode 0600 (as root, by setpriv;
        // another user meets its own mode 0000 file the same way).
        let asImage = getuid() == 0
        let uid = asImage ? 10001 : Int(getuid())
        if !asImage { for file in [files.keyFile, p12] { chmod(file.path, 0) } }
        let wrapper = asImage ? ["/usr/bin/setpriv", "--reuid=10001", "--regid=10001", "--clear-groups"] : []
        let key = ["APNS_KEY_ID": RelayHarness.keyID, "APPLE_TEAM_ID": RelayHarness.teamID, "TOPIC": RelayHarness.topic]
        let cases: [([String: String], String)] = [
            (key.merging(["APNS_AUTH_KEY_FILE": files.keyFile.path]) { $1 }, "APNS_AUTH_KEY_FILE must name a readable .p8 file"),
            (["TOKEN_AUTH_KEY_FILENAME": files.keyFile.path, "TOKEN_KEY_ID": RelayHarness.keyID, "TOKEN_TEAM_ID": RelayHarness.teamID],
             "TOKEN_AUTH_KEY_FILENAME must name a readable .p8 file"),
            (["P12_FILENAME": p12.path], "P12_FILENAME must name a readable .p12 file"),
        ]
        for (environment, start) in cases {
            let path = environment["P12_FILENAME"] ?? files.keyFile.path
            let result = try await run(["check"], environment: environment, wrapper: wrapper)
            #expect(result.status == 1, "\(result)")
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "\(result.stderr)")
            #expect(result.stderr.contains(#"\#(start), could not read "\#(path)": Permission denied; the relay runs as "#), "\(result.stderr)")
            #expect(result.stderr.contains("chown \(uid) the file (mode 0600 stays), or make it group-readable (chmod 0640)"), "\(result.stderr)")
            if asImage { #expect(result.stderr.contains("uid 10001 (the image's user)")) }
        }
        let missing = try await run(["check"], environment: key.merging(["APNS_AUTH_KEY_FILE": files.directory.path + "/gone.p8"]) { $1 })
        #expect(missing.status == 1 && missing.stderr.contains(#"gone.p8": No such file or directory"#) && !missing.stderr.contains("chown"), "\(missing)")
    }

    @Test("healthcheck exits 0 against a running relay")
    func healthcheckSucceeds() async throws {
        try await RelayHarness.with { h in
            let result = try await run(["healthcheck", "--port", String(h.port)], environment: [:])
            #expect(result.status == 0, "\(result.stderr)")
        }
    }

    /// `check --connect`'s environment against the harness's production emulator.
    private func checkEnvironment(_ h: RelayHarness, ca: URL, keyID: String = RelayHarness.keyID,
                                  teamID: String = RelayHarness.teamID) -> [String: String] {
        [
            "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": keyID,
            "APPLE_TEAM_ID": teamID, "TOPIC": RelayHarness.topic,
            "APNS_HOST": "localhost:\(h.apple.port)", "APNS_CA_FILE": ca.path,
        ]
    }

    @Test("check --connect connects and proves the credentials with a push to the all-zero token")
    func checkConnect() async throws {
        try await RelayHarness.with { h in
            let ca = try TemporaryFiles.caFile()
            defer { try? FileManager.default.removeItem(at: ca) }
            let result = try await run(["check", "--connect"], environment: checkEnvironment(h, ca: ca))
            #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stdout.contains("connected to localhost:\(h.apple.port)"))
            #expect(result.stdout.contains("provider token accepted"), "\(result.stdout)")
            #expect(h.apple.records.last?.reason == "BadDeviceToken")
            #expect(h.apple.records.last?.path == "/3/device/" + String(repeating: "0", count: 64))
        }
    }

    @Test("check --connect fails with 403 when the key id or the team is wrong", arguments: [
        ("WRONGKEY01", RelayHarness.teamID), (RelayHarness.keyID, "WRONGTEAM1"),
    ])
    func checkConnectRefused(keyID: String, teamID: String) async throws {
        try await RelayHarness.with { h in
            let ca = try TemporaryFiles.caFile()
            defer { try? FileManager.default.removeItem(at: ca) }
            let result = try await run(["check", "--connect"], environment: checkEnvironment(h, ca: ca, keyID: keyID, teamID: teamID))
            #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stderr.contains("403 InvalidProviderToken"), "\(result.stderr)")
            #expect(result.stderr.contains("APNS_KEY_ID"))
        }
    }

    @Test("check --connect beside a relay sending with the same key: the same token, so Apple counts no new one; exit 0")
    func checkConnectBesideARelay() async throws {
        try await RelayHarness.with { h in
            #expect(try await h.push(token: token("c1")).status == 201)
            let ca = try TemporaryFiles.caFile()
            defer { try? FileManager.default.removeItem(at: ca) }
            let result = try await run(["check", "--connect"], environment: checkEnvironment(h, ca: ca))
            // A window boundary between the relay's push and the check makes the check's token the
            // next window's, new within 20 minutes of the relay's: then Apple's 429 is right.
            if h.apple.rules.tokenUpdatesRefused == 0 {
                #expect(result.status == 0 && result.stdout.contains("provider token accepted"), "\(result.stdout)\n\(result.stderr)")
                #expect(h.apple.rules.newTokensAccepted == [RelayHarness.keyID: 1])
            }
            #expect(try await h.push(token: token("c2")).status == 201)
        }
    }

    @Test("check --connect after another signer's token for the key within 20 minutes: Apple's 429 TooManyProviderTokenUpdates is named, exit 1")
    func checkConnectAfterAnotherToken() async throws {
        try await RelayHarness.with { h in
            // Another tool's token for the key, its iat a second before the window's start (so
            // never the relay's), new to Apple now.
            let now = WallTime.unixSecondsNow
            let other = try ProviderToken(keyID: RelayHarness.keyID, teamID: RelayHarness.teamID,
                                          issuedAt: ProviderTokenPolicy().issuedAt(now: now) - 1, signer: APNsSigningKey(RelayHarness.key))
            var connection = MockConnectionState(connectionID: 1_000)
            _ = h.apple.rules.decide(MockRequestHead(method: "POST", path: "/3/device/" + token("", fill: "4"),
                                                     headers: [("authorization", other.authorization)], body: []),
                                     connection: &connection, now: now)
            try #require(h.apple.rules.newTokensAccepted == [RelayHarness.keyID: 1])
            let ca = try TemporaryFiles.caFile()
            defer { try? FileManager.default.removeItem(at: ca) }
            let result = try await run(["check", "--connect"], environment: checkEnvironment(h, ca: ca))
            #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
            #expect(result.stderr.contains("429 TooManyProviderTokenUpdates") && result.stderr.contains("the key was not judged"), "\(result.stderr)")
        }
    }

    @Test("check --connect where nothing listens says why, by the failure's value: connection refused, check APNS_HOST; exit 1")
    func checkConnectNothingListens() async throws {
        let port = try freePort()
        let ca = try TemporaryFiles.caFile()
        defer { try? FileManager.default.removeItem(at: ca) }
        let result = try await run(["check", "--connect"], environment: [
            "APNS_AUTH_KEY": RelayHarness.key.pemPKCS8, "APNS_KEY_ID": RelayHarness.keyID,
            "APPLE_TEAM_ID": RelayHarness.teamID, "TOPIC": RelayHarness.topic,
            "APNS_HOST": "127.0.0.1:\(port)", "APNS_CA_FILE": ca.path,
        ])
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("could not connect to APNs, so the key was not judged"), "\(result.stderr)")
        #expect(result.stderr.contains("connection refused by 127.0.0.1:\(port)") && result.stderr.contains("check APNS_HOST"),
                "\(result.stderr)")
    }

    /// `apns-relay serve` (through `wrapper`, a command that execs it) against a fresh emulator,
    /// ready, pool 2; stopped and cleaned up after `body`.
    private func withIdleServe(wrapper: [String] = [], port chosen: Int? = nil, _ body: (ServeProcess) async throws -> Void) async throws {
        let apple = try startEmulator()
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let ca = try TemporaryFiles.caFile()
        defer { try? FileManager.default.removeItem(at: ca) }
        let port = try chosen ?? freePort()
        try files.writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8, apple: apple, ca: ca,
                                port: port, pool: 2)
        let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log, wrapper: wrapper)
        defer { relay.forceStop() }
        try await relay.waitUntilReady(port: port)
        try await body(relay)
    }

    @Test("an idle serve runs its event loops and no other thread (the lookup of APNS_HOST's name ran on one that ended); SIGTERM drains it to exit 0")
    func idleThreads() async throws {
        try await withIdleServe { relay in
            // The lookup thread may still be leaving when the relay is ready (it ends once the
            // name is resolved, and leaves /proc a moment later): poll, with a bound.
            func onlyLoops(_ names: [String]) -> Bool {
                names.filter { $0 == "apns-relay" }.count == 1 && names.filter { $0 != "apns-relay" }.allSatisfy { $0.hasPrefix("eventloop-") }
            }
            _ = try await eventually(within: .seconds(5)) { onlyLoops(relay.threadNames) }
            let seen = relay.threadNames
            #expect(onlyLoops(seen), "the main thread and the event loops only: \(seen)")
            #expect(try await relay.stop() == 0)
            #expect(relay.logText.contains("drained; bye"))
        }
    }

    @Test("pinned to one CPU (taskset -c 0) on a bigger machine, serve runs one event loop and says why", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset")))
    func loopsFollowTheAffinity() async throws {
        try await withIdleServe(wrapper: ["/usr/bin/taskset", "-c", "0"]) { relay in
            let line = try #require(relay.logText.split(separator: "\n").first { $0.contains("apns-relay listening") })
            #expect(line.contains(#""event_loops":1"#), "\(line)")
            // One CPU by its affinity, unless the machine itself has one CPU (then nothing was cut).
            let machine = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
            #expect(line.contains(machine > 1 ? #""event_loops.reason":"CPU affinity""# : #""event_loops.reason":"online CPUs""#), "\(line)")
            let loops = relay.threadNames.filter { $0.hasPrefix("eventloop-") }
            #expect(loops.count == 1, "\(loops)")
            #expect(try await relay.stop() == 0)
        }
    }

    @Test("the JSON start-up line writes numeric settings as JSON numbers, as push lines do")
    func startupLineTypes() async throws {
        try await withIdleServe { relay in
            let line = try #require(relay.logText.split(separator: "\n").first { $0.contains("apns-relay listening") })
            let fields = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            for key in ["event_loops", "apns.pool_size", "max_body_bytes", "max_queued_pushes", "max_connections",
                        "push_timeout_ms", "request_timeout_ms", "max_buffered_request_bytes", "port"] {
                #expect(fields[key] is Int, "\(key) in \(line)")
            }
            #expect(fields["apns.topic"] is String, "\(line)")
            // Not set: Apple's own limit holds, and no made-up number stands for it.
            #expect(fields["apns.max_streams_per_connection"] == nil, "\(line)")
            #expect(try await relay.stop() == 0)
        }
    }

    @Test("SIGHUP rotates the key from the env file and the key file; an invalid one is logged and the old stays")
    func sighupReload() async throws {
        let newKeyID = "ROTATED123"
        let newKey = try ES256PrivateKey.generate()
        let apple = try startEmulator()
        defer { apple.stop() }
        let files = try TemporaryFiles()
        defer { files.remove() }
        let ca = try TemporaryFiles.caFile()
        defer { try? FileManager.default.removeItem(at: ca) }
        let port = try freePort()
        func writeSettings(keyID: String, key: String) throws {
            try files.writeSettings(keyID: keyID, key: key, apple: apple, ca: ca, port: port, pool: 1)
        }
        try writeSettings(keyID: RelayHarness.keyID, key: RelayHarness.key.pemPKCS8)
        let relay = try ServeProcess(arguments: ["serve", "--env-file", files.envFile.path], log: files.log)
        defer { relay.forceStop() }
        try await relay.waitUntilReady(port: port)

        func pushKeyID() async throws -> String? {
            let id = UUID().uuidString
            let response = try await TestHTTP.post(
                port: port, target: "/push/\(token("", fill: "2"))/\(id)",
                headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"), ("Crypto-Key", "dh=\(Sample.dh)")],
                body: Sample.body)
            #expect(response.status == 201, "\(response.status) \(String(decoding: response.body, as: UTF8.self))")
            let record = apple.records.last { $0.status == 200 && $0.apnsID == response.header("apns-id") }
            return record.flatMap { tokenKeyID($0.header("authorization")) }
        }
        #expect(try await pushKeyID() == RelayHarness.keyID)

        // Rotate: the emulator trusts the new key, the files name it, SIGHUP, then the old key is revoked.
        apple.rules.keys[newKeyID] = .es256(newKey.publicKey)
        try writeSettings(keyID: newKeyID, key: newKey.pemPKCS8)
        relay.signal(SIGHUP)
        try await relay.waitForLog("reloaded the provider key")
        apple.rules.keys[RelayHarness.keyID] = nil
        apple.dropAllConnections()
        try await relay.waitUntilReady(port: port)
        #expect(try await pushKeyID() == newKeyID)

        // An invalid key file: logged with the variable's name; the running key keeps working.
        try "not a key".write(to: files.keyFile, atomically: true, encoding: .utf8)
        relay.signal(SIGHUP)
        try await relay.waitForLog("APNS_AUTH_KEY_FILE")
        // An invalid key id in the env file: the same.
        try writeSettings(keyID: "bad", key: newKey.pemPKCS8)
        relay.signal(SIGHUP)
        try await relay.waitForLog("APNS_KEY_ID must be")
        apple.dropAllConnections()
        try await relay.waitUntilReady(port: port)
        #expect(try await pushKeyID() == newKeyID)
        #expect(relay.isRunning)
        #expect(try await relay.stop() == 0)
    }
}

/// The `kid` of a provider token (`bearer header.claims.signature`).
private func tokenKeyID(_ authorization: String?) -> String? {
    guard let authorization, let header = authorization.dropFirst("bearer ".count).split(separator: ".").first else { return nil }
    let bytes = base64URLDecode(String(header))
    let json = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    return json?["kid"] as? String
}

/// The APNs emulator trusting the harness's key for its topic and team.
func startEmulator() throws -> MockAPNsServer {
    try MockAPNsServer.start(
        configuration: MockAPNsConfiguration(topics: [RelayHarness.topic], teamID: RelayHarness.teamID,
                                             keys: [RelayHarness.keyID: .es256(RelayHarness.key.publicKey)]),
        certificates: RelayHarness.certificates)
}
