import APNs
import EventLoop

/// `APPS_FILE`: the apps a relay serves beside the default one, each with its own credentials.
///
///     {"apps": [
///       {"name": "beta", "topic": "org.example.app.beta", "p12_file": "/run/secrets/beta.p12", "p12_password": "…"},
///       {"name": "other", "topic": "com.other.app", "key_file": "/run/secrets/AuthKey_X.p8",
///        "key_id": "ABC123DEFG", "team_id": "DEF123GHIJ"}
///     ]}
///
/// Every error is one line naming the app and the field, so an operator fixes the file from the log.
enum AppsFile {
    static let fields: Set<String> = [
        "name", "topic", "relay_to_topic", "key_file", "key_id", "team_id", "p12_file", "p12_base64", "p12_password",
        "cert_file", "cert_key_file",
    ]
    /// Names an app cannot take: the relay's own first path segments.
    static let reservedNames: Set<String> = ["push", "relay-to", "health", "ready", "metrics", RelayApp.defaultName]

    static func read(path: String, variable: String, now: Int64) throws(ConfigurationError) -> [RelayApp] {
        guard let text = LocalFile.text(atPath: path) else {
            throw ConfigurationError(.unreadableFile, variable, "\(variable) must name a readable JSON file of apps, could not read \(quoted(path))")
        }
        return try parse(text, variable: variable, now: now)
    }

    static func parse(_ text: String, variable: String, now: Int64) throws(ConfigurationError) -> [RelayApp] {
        func fail(_ what: String) -> ConfigurationError { ConfigurationError(.invalid, variable, "\(variable): \(what)") }
        guard case .object(let root)? = APNsJSON.parse(text), case .array(let entries)? = root["apps"] else {
            throw fail(#"must hold a JSON object {"apps": [{"name": …, "topic": …, credentials}, …]}"#)
        }
        var apps: [RelayApp] = []
        for (index, entry) in entries.enumerated() {
            guard case .object(let fields) = entry else { throw fail("app \(index + 1) must be a JSON object") }
            let label: String
            if case .string(let name)? = fields["name"] { label = "app \(quoted(name))" } else { label = "app \(index + 1)" }
            let reader = AppReader(fields: fields, label: label, variable: variable, now: now)
            let app = try reader.app()
            if apps.contains(where: { $0.name == app.name }) { throw fail("\(label): field name: another app has the same name") }
            apps.append(app)
        }
        return apps
    }
}

/// One entry of the apps file, read field by field.
private struct AppReader {
    let fields: [String: APNsJSON]
    let label: String
    let variable: String
    let now: Int64

    func fail(_ field: String, _ what: String, _ code: ConfigurationError.Code = .invalid) -> ConfigurationError {
        ConfigurationError(code, variable, "\(variable): \(label): field \(field): \(what)")
    }

    func string(_ field: String) throws(ConfigurationError) -> String? {
        guard let value = fields[field] else { return nil }
        guard case .string(let text) = value, !text.isEmpty else { throw fail(field, "must be a non-empty string") }
        return text
    }

    func app() throws(ConfigurationError) -> RelayApp {
        if let unknown = fields.keys.sorted().first(where: { !AppsFile.fields.contains($0) }) {
            throw fail(unknown, "is not a field of an app (\(AppsFile.fields.sorted().joined(separator: ", ")))")
        }
        guard let name = try string("name") else { throw fail("name", "must be set to the app's path prefix", .missing) }
        // Starting with a letter or digit: `.` and `..` are dot segments clients remove from paths.
        let validName = name.unicodeScalars.allSatisfy { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") || $0 == "-" || $0 == "_" || $0 == "." }
            && name.unicodeScalars.count <= 64 && name.unicodeScalars.first.map { ($0 >= "a" && $0 <= "z") || ($0 >= "0" && $0 <= "9") } == true
        guard validName, !AppsFile.reservedNames.contains(name) else {
            throw fail("name", "must be 1 to 64 of a-z, 0-9, '-', '_', '.', starting with a letter or digit, and none of \(AppsFile.reservedNames.sorted().joined(separator: ", ")), got \(quoted(name))")
        }
        let credentials = try credentials()
        let topic: String
        if let given = try string("topic") {
            topic = try bundleID("topic", given)
        } else if case .certificate(let certificate) = credentials, let uid = certificate.identity.subjectUID {
            topic = try bundleID("topic", uid)
        } else {
            throw fail("topic", "must be set to the app's bundle ID", .missing)
        }
        let relayToTopic = try string("relay_to_topic").map { (text) throws(ConfigurationError) in try bundleID("relay_to_topic", text) }
        return RelayApp(name: name, topic: topic, relayToTopic: relayToTopic, credentials: credentials)
    }

    func bundleID(_ field: String, _ text: String) throws(ConfigurationError) -> String {
        guard Reader.isBundleID(text) else { throw fail(field, "must be a bundle ID (letters, digits, '.' and '-'), got \(quoted(text))") }
        return text
    }

    func credentials() throws(ConfigurationError) -> AppCredentials {
        let forms = ["key_file", "p12_file", "p12_base64", "cert_file"].filter { fields[$0] != nil }
        guard forms.count == 1 else {
            throw fail(forms.first ?? "key_file", forms.isEmpty
                ? "an app needs credentials: key_file with key_id and team_id, p12_file or p12_base64 with p12_password, or cert_file with cert_key_file"
                : "only one of \(forms.joined(separator: ", ")) may be set", forms.isEmpty ? .missing : .conflict)
        }
        let password = try string("p12_password") ?? ""
        let source: PushCertificate.Source
        switch forms[0] {
        case "key_file":
            let path = try string("key_file")!
            let text: String
            do { text = try LocalFile.readText(atPath: path) ?? "" } catch { throw fail("key_file", couldNotRead(error), .unreadableFile) }
            guard Reader.isPEMPrivateKey(text.trimmingWhitespace) else {
                throw fail("key_file", "must name Apple's .p8 key (-----BEGIN PRIVATE KEY----- …), \(quoted(path)) is not a PEM key")
            }
            guard let keyID = try string("key_id") else { throw fail("key_id", "must be set to the 10-character key ID of key_file", .missing) }
            guard let teamID = try string("team_id") else { throw fail("team_id", "must be set to the 10-character Apple team ID", .missing) }
            for (field, id) in [("key_id", keyID), ("team_id", teamID)] where !Reader.isAppleID(id) {
                throw fail(field, "must be 10 characters, capital letters A-Z and digits, got \(quoted(id))")
            }
            return .token(TokenKey(authKey: text, variable: "key_file", keyID: keyID, teamID: teamID))
        case "p12_file": source = .p12File(path: try string("p12_file")!, password: password)
        case "p12_base64": source = .p12Base64(try string("p12_base64")!, password: password)
        default:
            guard let key = try string("cert_key_file") else { throw fail("cert_key_file", "must be set to the PEM key of cert_file", .missing) }
            source = .pem(certificateFile: try string("cert_file")!, keyFile: key)
        }
        do {
            return .certificate(try PushCertificate.load(source, variable: forms[0], now: now))
        } catch {
            // The message names the field already (`p12_file must name …`).
            throw ConfigurationError(error.code, variable, "\(variable): \(label): \(error.message)")
        }
    }
}
