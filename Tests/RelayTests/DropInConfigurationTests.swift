import Foundation
import Testing
@testable import Relay

/// toot-relay's and webpush-apn-relay's env files, push certificates, HTTPS files and APPS_FILE,
/// read as `serve` reads them.
@Suite("Configuration: certificates, the other relays' names, apps")
struct DropInConfigurationTests {
    static let key = "-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQgFAKEFAKEFAKE\n-----END PRIVATE KEY-----\n"

    func temporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("dropin-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    func failure(_ environment: [String: String], now: Int64? = nil) -> ConfigurationError? {
        do {
            if let now { _ = try RelayConfiguration.load(environment: environment, now: now) } else {
                _ = try RelayConfiguration.load(environment: environment)
            }
            return nil
        } catch { return error }
    }

    @Test("toot-relay's env (P12_FILENAME, P12_PASSWORD, no TOPIC) reads the .p12, takes the topic from its UID and says whose names it read")
    func tootRelayEnv() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        defer { files.remove() }
        let c = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "PORT": "42069"])
        guard case .certificate(let certificate) = c.credentials else { Issue.record("not certificate auth"); return }
        #expect(certificate.identity.subjectUID == "cx.c3.toot")
        #expect(c.topic == "cx.c3.toot" && c.relayToTopic == "cx.c3.toot")
        #expect(c.port == 42069)
        #expect(c.foreignNames == "toot-relay: P12_FILENAME, P12_PASSWORD")
        #expect(c.loggableSummary["apns.certificate"] == "Apple Push Services: cx.c3.toot")
        #expect(c.loggableSummary["apns.key_id"] == nil)
        // The base64 form, as P12_BASE64 holds it, is the same certificate.
        let b = try RelayConfiguration.load(environment: ["P12_BASE64": files.p12Base64, "P12_PASSWORD": "secret"])
        guard case .certificate(let same) = b.credentials else { Issue.record("not certificate auth"); return }
        #expect(same.identity.fingerprint == certificate.identity.fingerprint)
    }

    @Test("webpush-apn-relay's token env (TOKEN_AUTH_KEY_FILENAME, TOKEN_KEY_ID, TOKEN_TEAM_ID, TOPIC) is a .p8 key, whatever its P12 settings")
    func webpushAPNRelayEnv() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.key.write(toFile: dir + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let c = try RelayConfiguration.load(environment: [
            "TOKEN_AUTH_KEY_FILENAME": dir + "/AuthKey.p8", "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "DEF123GHIJ",
            "TOPIC": "org.joinmastodon.app", "P12_PASSWORD": "unused",
        ])
        #expect(c.keyID == "ABC123DEFG" && c.teamID == "DEF123GHIJ" && c.topic == "org.joinmastodon.app")
        #expect(c.authKeyVariable == "TOKEN_AUTH_KEY_FILENAME")
        #expect(c.foreignNames == "webpush-apn-relay: P12_PASSWORD, TOKEN_AUTH_KEY_FILENAME, TOKEN_KEY_ID, TOKEN_TEAM_ID")
        // Ours and theirs together must agree.
        let e = failure(["TOKEN_AUTH_KEY_FILENAME": dir + "/AuthKey.p8", "TOKEN_KEY_ID": "ABC123DEFG", "APNS_KEY_ID": "XYZ123DEFG",
                         "TOKEN_TEAM_ID": "DEF123GHIJ", "TOPIC": "a.b"])
        #expect(e?.code == .conflict)
    }

    @Test("TOPIC wins over the certificate's UID; a certificate without UID needs TOPIC")
    func topicRules() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        let bare = try PushCertificateFiles(uid: nil)
        defer { files.remove(); bare.remove() }
        let c = try RelayConfiguration.load(environment: ["APNS_P12_FILE": files.p12, "APNS_P12_PASSWORD": "secret", "TOPIC": "cx.c3.other"])
        #expect(c.topic == "cx.c3.other")
        let e = failure(["APNS_CERT_FILE": bare.certificate, "APNS_CERT_KEY_FILE": bare.key])
        #expect(e?.code == .missing && e?.variable == "TOPIC")
        let pem = try RelayConfiguration.load(environment: ["APNS_CERT_FILE": files.certificate, "APNS_CERT_KEY_FILE": files.key])
        #expect(pem.topic == "cx.c3.toot")
    }

    @Test("a wrong password, a file that is not PKCS#12, an expired certificate: one line naming the variable; a certificate near expiry loads")
    func badCertificates() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot", days: 10)
        defer { files.remove() }
        let wrong = failure(["P12_FILENAME": files.p12, "P12_PASSWORD": "nope"])
        #expect(wrong?.variable == "P12_FILENAME")
        #expect(wrong?.message.contains("password is wrong") == true)
        let notP12 = failure(["APNS_P12_FILE": files.certificate, "APNS_P12_PASSWORD": "secret"])
        #expect(notP12?.message.contains("not a PKCS#12 file") == true)
        let missing = failure(["APNS_P12_FILE": files.directory + "/nope.p12"])
        #expect(missing?.code == .unreadableFile)
        // Ten days left: loads (the warning and the gauge are the serve's); past its end: refused.
        let soon = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12, "P12_PASSWORD": "secret"])
        guard case .certificate(let certificate) = soon.credentials else { Issue.record("not certificate auth"); return }
        #expect(certificate.secondsLeft(now: Int64(Date().timeIntervalSince1970)) < PushCertificate.warningSeconds)
        let expired = failure(["P12_FILENAME": files.p12, "P12_PASSWORD": "secret"], now: certificate.identity.notAfter + 1)
        #expect(expired?.variable == "P12_FILENAME")
        #expect(expired?.message.contains("expired on") == true)
        #expect(expired?.message.contains("\n") == false)
    }

    @Test("a .p12 exported the old way (RC2-40, as older Keychain Access exports) loads through OpenSSL's legacy provider")
    func legacyP12() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        defer { files.remove() }
        let legacy = files.directory + "/legacy.p12"
        try PushCertificateFiles.openssl(["pkcs12", "-export", "-legacy", "-in", files.certificate, "-inkey", files.key,
                                          "-out", legacy, "-passout", "pass:pw"])
        let c = try RelayConfiguration.load(environment: ["P12_FILENAME": legacy, "P12_PASSWORD": "pw"])
        #expect(c.topic == "cx.c3.toot")
    }

    @Test("a .p12 with an empty password loads; one exported without its key says so")
    func p12Shapes() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot", password: "")
        defer { files.remove() }
        let c = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12])
        #expect(c.topic == "cx.c3.toot")
        let certificateOnly = files.directory + "/nokey.p12"
        try PushCertificateFiles.openssl(["pkcs12", "-export", "-nokeys", "-in", files.certificate, "-out", certificateOnly, "-passout", "pass:pw"])
        let e = failure(["P12_FILENAME": certificateOnly, "P12_PASSWORD": "pw"])
        #expect(e?.message.contains("holds no private key: export the push certificate together with its private key") == true, "\(e?.message ?? "")")
    }

    @Test("a key and a certificate together, two certificate forms together, half an HTTPS pair: refused with one line")
    func conflicts() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        defer { files.remove() }
        let both = failure(["APNS_AUTH_KEY": Self.key, "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "TEAM123456", "TOPIC": "a.b",
                            "APNS_P12_FILE": files.p12])
        #expect(both?.code == .conflict)
        let forms = failure(["APNS_CERT_FILE": files.certificate, "APNS_CERT_KEY_FILE": files.key, "APNS_P12_FILE": files.p12])
        #expect(forms?.code == .conflict)
        let p12Twice = failure(["APNS_P12_FILE": files.p12, "APNS_P12_BASE64": files.p12Base64, "APNS_P12_PASSWORD": "secret"])
        #expect(p12Twice?.code == .conflict)
        let half = failure(["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "TLS_CERT_FILE": files.certificate])
        #expect(half?.variable == "TLS_KEY_FILE")
        let ca = failure(["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "CA_FILENAME": files.certificate, "APNS_CA_FILE": files.certificate])
        #expect(ca?.code == .conflict)
    }

    @Test("webpush-apn-relay's env without PORT and TOPIC takes its defaults (42069, cx.c3.toot), and says so; healthcheck finds that port; this relay's names keep 3000")
    func foreignDefaults() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.key.write(toFile: dir + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let theirs = ["TOKEN_AUTH_KEY_FILENAME": dir + "/AuthKey.p8", "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "DEF123GHIJ"]
        let c = try RelayConfiguration.load(environment: theirs)
        #expect(c.port == 42069 && c.topic == "cx.c3.toot" && c.relayToTopic == "cx.c3.toot")
        #expect(c.foreignDefaults == ForeignDefaults(family: "webpush-apn-relay", reason: "the credentials are read from TOKEN_AUTH_KEY_FILENAME",
                                                     taken: ["PORT=42069", "TOPIC=cx.c3.toot"]))
        #expect(try RelayConfiguration.listener(environment: theirs).port == 42069)
        // What the env file sets wins, and only what was taken is listed.
        let set = try RelayConfiguration.load(environment: theirs.merging(["PORT": "8080"]) { $1 })
        #expect(set.port == 8080 && set.foreignDefaults?.taken == ["TOPIC=cx.c3.toot"])
        #expect(try RelayConfiguration.load(environment: theirs.merging(["PORT": "8080", "TOPIC": "a.b"]) { $1 }).foreignDefaults == nil)
        // toot-relay's certificate env: PORT 42069; the topic is the certificate's.
        let files = try PushCertificateFiles(uid: "org.example.toot")
        defer { files.remove() }
        let toot = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12, "P12_PASSWORD": "secret"])
        #expect(toot.port == 42069 && toot.topic == "org.example.toot")
        #expect(toot.foreignDefaults == ForeignDefaults(family: "toot-relay", reason: "the credentials are read from P12_FILENAME", taken: ["PORT=42069"]))
        // This relay's own key names keep this relay's defaults, whatever foreign names are beside them.
        let ours = try RelayConfiguration.load(environment: [
            "APNS_AUTH_KEY_FILE": dir + "/AuthKey.p8", "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "DEF123GHIJ", "TOPIC": "a.b",
            "CA_FILENAME": dir + "/cas.crt",
        ])
        #expect(ours.port == 3000 && ours.foreignDefaults == nil)
        #expect(failure(["APNS_AUTH_KEY_FILE": dir + "/AuthKey.p8", "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "DEF123GHIJ"])?.variable == "TOPIC")
    }

    @Test("CA_FILENAME that cannot be read, or beside a .p8 key, is a warning and the system store is used, as the other relays did; APNS_CA_FILE still must be readable")
    func caFilenameLenient() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        defer { files.remove() }
        let missing = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "CA_FILENAME": "/nonexistent/cas.crt"])
        #expect(missing.caFile == nil && !missing.caReplacesSystemStore)
        #expect(missing.warnings.count == 1)
        #expect(missing.warnings.first?.contains(#"CA_FILENAME is ignored, as toot-relay and webpush-apn-relay ignored it, could not read "/nonexistent/cas.crt": No such file or directory"#) == true,
                "\(missing.warnings)")
        #expect(missing.warnings.first?.contains("system trust store (a pinned CA is what broke relays at Apple's 2025 CA change)") == true)
        // Ignored, it does not conflict with this relay's own extra CA.
        let beside = try RelayConfiguration.load(environment: ["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "CA_FILENAME": "/nonexistent/cas.crt",
                                                               "APNS_CA_FILE": files.certificate])
        #expect(beside.caFile == files.certificate && !beside.caReplacesSystemStore)
        // webpush-apn-relay gave CA_FILENAME to certificate clients only.
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.key.write(toFile: dir + "/AuthKey.p8", atomically: true, encoding: .utf8)
        let token = try RelayConfiguration.load(environment: [
            "TOKEN_AUTH_KEY_FILENAME": dir + "/AuthKey.p8", "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "DEF123GHIJ", "CA_FILENAME": files.certificate,
        ])
        #expect(token.caFile == nil && !token.caReplacesSystemStore)
        #expect(token.warnings.first?.contains("CA_FILENAME (\"\(files.certificate)\") is ignored with a .p8 key") == true, "\(token.warnings)")
        let ours = failure(["P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "APNS_CA_FILE": "/nonexistent/cas.crt"])
        #expect(ours?.code == .unreadableFile && ours?.variable == "APNS_CA_FILE")
    }

    @Test("a key or certificate file that is missing says so in errno's words")
    func missingSecretFiles() throws {
        let p8 = failure(["TOKEN_AUTH_KEY_FILENAME": "/nonexistent/AuthKey.p8", "TOKEN_KEY_ID": "ABC123DEFG", "TOKEN_TEAM_ID": "DEF123GHIJ"])
        #expect(p8?.code == .unreadableFile && p8?.variable == "TOKEN_AUTH_KEY_FILENAME")
        #expect(p8?.message == #"TOKEN_AUTH_KEY_FILENAME must name a readable .p8 file, could not read "/nonexistent/AuthKey.p8": No such file or directory"#)
        let p12 = failure(["P12_FILENAME": "/nonexistent/push.p12"])
        #expect(p12?.message == #"P12_FILENAME must name a readable .p12 file, could not read "/nonexistent/push.p12": No such file or directory"#)
        let pem = failure(["APNS_CERT_FILE": "/nonexistent/push.pem", "APNS_CERT_KEY_FILE": "/nonexistent/push.key"])
        #expect(pem?.message.hasSuffix(#"could not read "/nonexistent/push.pem": No such file or directory"#) == true)
    }

    @Test("CA_FILENAME replaces the system store; CRT_FILENAME and KEY_FILENAME serve HTTPS")
    func tootRelayFiles() throws {
        let files = try PushCertificateFiles(uid: "cx.c3.toot")
        defer { files.remove() }
        let c = try RelayConfiguration.load(environment: [
            "P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "CA_FILENAME": files.certificate,
            "CRT_FILENAME": files.certificate, "KEY_FILENAME": files.key,
        ])
        #expect(c.caFile == files.certificate && c.caReplacesSystemStore)
        #expect(c.httpsCertificate == HTTPSFiles(certificateFile: files.certificate, keyFile: files.key, variable: "CRT_FILENAME"))
        let ours = try RelayConfiguration.load(environment: [
            "P12_FILENAME": files.p12, "P12_PASSWORD": "secret", "APNS_CA_FILE": files.certificate,
            "TLS_CERT_FILE": files.certificate, "TLS_KEY_FILE": files.key,
        ])
        #expect(!ours.caReplacesSystemStore && ours.httpsCertificate?.variable == "TLS_CERT_FILE")
    }

    @Test("APPS_FILE: apps with a key or a certificate; every mistake names the app and the field")
    func appsFile() throws {
        let dir = try temporaryDirectory()
        let files = try PushCertificateFiles(uid: "org.example.app.beta")
        defer { try? FileManager.default.removeItem(atPath: dir); files.remove() }
        try Self.key.write(toFile: dir + "/AuthKey_X.p8", atomically: true, encoding: .utf8)
        let base: [String: String] = ["APNS_AUTH_KEY": Self.key, "APNS_KEY_ID": "ABC123DEFG", "APPLE_TEAM_ID": "TEAM123456", "TOPIC": "org.example.app"]
        func load(_ json: String) throws(ConfigurationError) -> RelayConfiguration {
            try? json.write(toFile: dir + "/apps.json", atomically: true, encoding: .utf8)
            var env = base
            env["APPS_FILE"] = dir + "/apps.json"
            return try RelayConfiguration.load(environment: env)
        }
        func message(_ json: String) -> String? {
            do { _ = try load(json); return nil } catch { return error.message }
        }
        let good = try load("""
            {"apps": [
              {"name": "beta", "p12_file": "\(files.p12)", "p12_password": "secret"},
              {"name": "other", "topic": "com.other.app", "key_file": "\(dir)/AuthKey_X.p8", "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ"},
              {"name": "pem", "topic": "org.example.pem", "cert_file": "\(files.certificate)", "cert_key_file": "\(files.key)", "relay_to_topic": "org.example.toot"}
            ]}
            """)
        #expect(good.apps.map(\.name) == ["beta", "other", "pem"])
        #expect(good.apps.map(\.topic) == ["org.example.app.beta", "com.other.app", "org.example.pem"])
        #expect(good.apps[2].relayToTopic == "org.example.toot")
        #expect(good.apps[1].credentials.sharingKey == "token DEF123GHIJ ABC123DEFG")
        #expect(good.apps[0].credentials.sharingKey == good.apps[2].credentials.sharingKey)
        #expect(good.loggableSummary["apps_file"] == .string(dir + "/apps.json"))

        #expect(message(#"{"apps": [{"name": "beta", "p12_file": "\#(files.p12)", "p12_password": "wrong"}]}"#)?
            .hasPrefix(#"APPS_FILE: app "beta": p12_file is not a usable push certificate: "#) == true)
        #expect(message(#"{"apps": [{"name": "x", "topic": "a.b", "key_file": "\#(dir)/AuthKey_X.p8", "key_id": "ABC123DEFG"}]}"#)
            == #"APPS_FILE: app "x": field team_id: must be set to the 10-character Apple team ID"#)
        #expect(message(#"{"apps": [{"name": "x", "topic": "a.b", "p12_file": "\#(files.p12)", "passwd": "secret"}]}"#)?
            .hasPrefix(#"APPS_FILE: app "x": field passwd: is not a field of an app"#) == true)
        #expect(message(#"{"apps": [{"name": "push", "topic": "a.b", "p12_file": "\#(files.p12)"}]}"#)?
            .hasPrefix(#"APPS_FILE: app "push": field name: must be"#) == true)
        try "not a key".write(toFile: dir + "/bad.p8", atomically: true, encoding: .utf8)
        #expect(message(#"{"apps": [{"name": "x", "topic": "a.b", "key_file": "\#(dir)/bad.p8", "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ"}]}"#)?
            .hasPrefix(#"APPS_FILE: app "x": field key_file: must name Apple's .p8 key"#) == true)
        #expect(message(#"{"apps": [{"name": "x", "topic": "a.b"}]}"#)?.hasPrefix(#"APPS_FILE: app "x": field key_file: an app needs credentials"#) == true)
        let twice = #"{"name": "x", "p12_file": "\#(files.p12)", "p12_password": "secret"}"#
        #expect(message(#"{"apps": [\#(twice), \#(twice)]}"#) == #"APPS_FILE: app "x": field name: another app has the same name"#)
        #expect(message("not json")?.hasPrefix("APPS_FILE: must hold a JSON object") == true)
        var env = base
        env["APPS_FILE"] = dir + "/missing.json"
        #expect(throws: ConfigurationError(.unreadableFile, "APPS_FILE", "")) { try RelayConfiguration.load(environment: env) }
    }
}
