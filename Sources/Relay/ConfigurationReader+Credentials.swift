import EventLoop
import Basics

/// The default app's credentials (a `.p8` key or a push certificate), its topic, Apple's CA and
/// the HTTPS files, read under this relay's names and under toot-relay's and webpush-apn-relay's.
extension Reader {
    /// The first of `names` that is set, with its value; names that are set must agree.
    /// - Parameter secret: the values are a key, a password or a certificate: the message names
    ///   the variables only.
    func agreeing(_ names: [String], secret: Bool = false) throws(ConfigurationError) -> (name: String, value: String)? {
        var found: (name: String, value: String)?
        for name in names {
            guard let text = value(name) else { continue }
            if let first = found, first.value != text {
                let values = secret ? "" : ", got \(quoted(first.value)) and \(quoted(text))"
                throw ConfigurationError(.conflict, first.name, "\(first.name) and \(name) must not disagree (set only one)\(values)")
            }
            if found == nil { found = (name, text) }
        }
        return found
    }

    /// The first name set of each kind of credential, as `credentials()` weighs them.
    private var credentialNames: (ownKey: String?, theirKey: String?, ownCertificate: String?, theirCertificate: String?) {
        ([Variable.authKey, Variable.authKeyFile, Variable.authKeyAlias, Variable.authKeyFileAlias].first { value($0) != nil },
         value(ForeignVariable.tokenKeyFile) != nil ? ForeignVariable.tokenKeyFile : nil,
         [Variable.p12File, Variable.p12Base64, Variable.certFile].first { value($0) != nil },
         [ForeignVariable.p12Base64, ForeignVariable.p12File].first { value($0) != nil })
    }

    func credentials() throws(ConfigurationError) -> AppCredentials {
        let (ownKey, theirKey, ownCertificate, theirCertificate) = credentialNames
        if let key = ownKey ?? theirKey, let certificate = ownCertificate ?? (ownKey != nil ? theirCertificate : nil) {
            throw ConfigurationError(
                .conflict, key, "\(key) and \(certificate) must not both be set: the relay authenticates to Apple with a .p8 key or with a push certificate, not both")
        }
        // webpush-apn-relay uses its token key when one is named, whatever its P12 settings say.
        if ownKey != nil || theirKey != nil { return .token(try tokenKey()) }
        if let source = try certificateSource() {
            return .certificate(try PushCertificate.load(source.source, variable: source.variable, now: now))
        }
        throw ConfigurationError(
            .missing, Variable.authKey,
            "\(Variable.authKey) must be set to the text of Apple's .p8 key (or \(Variable.authKeyFile) to its path), or \(Variable.p12File) to Apple's push certificate (.p12)")
    }

    private func tokenKey() throws(ConfigurationError) -> TokenKey {
        let (text, variable) = try authKey()
        let keyName = value(Variable.keyID) != nil || value(ForeignVariable.tokenKeyID) == nil ? Variable.keyID : ForeignVariable.tokenKeyID
        guard let keyID = try agreeing([Variable.keyID, ForeignVariable.tokenKeyID]) else {
            throw ConfigurationError(.missing, Variable.keyID, "\(Variable.keyID) must be set to the 10-character key ID of the .p8 key")
        }
        guard let team = try agreeing([Variable.teamID, Variable.teamIDAlias, ForeignVariable.tokenTeamID]) else {
            throw ConfigurationError(.missing, Variable.teamID, "\(Variable.teamID) (or \(Variable.teamIDAlias)) must be set to the 10-character Apple team ID")
        }
        return TokenKey(authKey: text, variable: variable, keyID: try appleID(keyName, keyID.value, "the key ID of the .p8 key"),
                        teamID: try appleID(team.name, team.value, "the Apple team ID"))
    }

    /// The `.p8` key's text and the variable that gave it.
    private func authKey() throws(ConfigurationError) -> (text: String, variable: String) {
        let inline = try agreeing([Variable.authKey, Variable.authKeyAlias], secret: true)
        let path = try agreeing([Variable.authKeyFile, Variable.authKeyFileAlias, ForeignVariable.tokenKeyFile])
        var text: String
        var source: String
        switch (inline, path) {
        case (_?, _?):
            throw ConfigurationError(
                .conflict, Variable.authKey, "\(Variable.authKey) and \(Variable.authKeyFile) must not both be set: keep the key text or the path to the .p8 file, not both")
        case (nil, nil):
            throw ConfigurationError(
                .missing, Variable.authKey,
                "\(Variable.authKey) must be set to the text of Apple's .p8 key (or \(Variable.authKeyFile) to its path)")
        case (let t?, nil):
            text = t.value
            source = t.name
        case (nil, let p?):
            do {
                // Not UTF-8: not a PEM key either, which the check below says.
                text = try LocalFile.readText(atPath: p.value) ?? ""
            } catch {
                throw ConfigurationError(.unreadableFile, p.name, "\(p.name) must name a readable .p8 file, \(couldNotRead(error))")
            }
            source = p.name
        }
        // Env files and Docker cannot hold multi-line values, so metatext-apns deployments
        // write the key on one line with literal \n.
        // CR LF is one Character, so the standard library splits on it.
        text = text.unescapingLineFeeds.split(separator: "\r\n", omittingEmptySubsequences: false).joined(separator: "\n")
            .trimmingWhitespace
        // The message never repeats the key: it is a secret and would land in logs.
        guard Self.isPEMPrivateKey(text) else {
            let what = inline != nil ? "the text of" : "a path to"
            throw ConfigurationError(
                .invalid, source,
                "\(source) must hold \(what) Apple's .p8 key (-----BEGIN PRIVATE KEY----- ... -----END PRIVATE KEY-----), got \(text.count) characters that are not a PEM key")
        }
        return (text + "\n", source)
    }

    /// Where the push certificate comes from; nil when nothing names one and toot-relay's
    /// default file is not in the working directory.
    private func certificateSource() throws(ConfigurationError) -> (source: PushCertificate.Source, variable: String)? {
        let password = try agreeing([Variable.p12Password, ForeignVariable.p12Password], secret: true)?.value ?? ""
        let base64 = try agreeing([Variable.p12Base64, ForeignVariable.p12Base64], secret: true)
        let file = try agreeing([Variable.p12File, ForeignVariable.p12File])
        let pem = value(Variable.certFile)
        if let pem {
            if let other = base64 ?? file {
                throw ConfigurationError(
                    .conflict, Variable.certFile, "\(Variable.certFile) and \(other.name) must not both be set: give the push certificate as a PEM pair or as a .p12, not both")
            }
            guard let key = value(Variable.certKeyFile) else {
                throw ConfigurationError(.missing, Variable.certKeyFile, "\(Variable.certKeyFile) must be set to the PEM private key of \(Variable.certFile)")
            }
            return (.pem(certificateFile: pem, keyFile: key), Variable.certFile)
        }
        // Both forms named, one of them by this relay's names: which is meant cannot be told (a
        // renewed file beside a stale base64 would lose silently).
        if let base64, let file, base64.name == Variable.p12Base64 || file.name == Variable.p12File {
            throw ConfigurationError(
                .conflict, file.name, "\(file.name) and \(base64.name) must not both be set: give the .p12 as a file or as base64, not both")
        }
        // As toot-relay reads its own two: the base64 text when given, else the file.
        if let base64 { return (.p12Base64(base64.value, password: password), base64.name) }
        if let file { return (.p12File(path: file.value, password: password), file.name) }
        if usesDefaultP12 {
            return (.p12File(path: ForeignVariable.defaultP12File, password: password), ForeignVariable.p12File)
        }
        return nil
    }

    /// toot-relay's default certificate is used: no credential is named and `toot-relay.p12` is
    /// in the working directory.
    var usesDefaultP12: Bool {
        let credentials = [Variable.authKey, Variable.authKeyFile, Variable.authKeyAlias, Variable.authKeyFileAlias,
                           ForeignVariable.tokenKeyFile, Variable.p12File, Variable.p12Base64, Variable.certFile,
                           ForeignVariable.p12File, ForeignVariable.p12Base64]
        return !credentials.contains { value($0) != nil } && LocalFile.isReadable(atPath: ForeignVariable.defaultP12File)
    }

    /// `TOPIC`; with a push certificate and no `TOPIC`, the certificate's `UID` (its bundle id);
    /// else, where the other relays' defaults apply, theirs. `defaulted`: that default was taken.
    func topic(for credentials: AppCredentials) throws(ConfigurationError) -> (topic: String, defaulted: Bool) {
        if let given = try agreeing([Variable.topic, Variable.topicAlias]) { return (try bundleID(given.name, given.value), false) }
        if case .certificate(let certificate) = credentials, let uid = certificate.identity.subjectUID {
            return (try bundleID(certificate.variable, uid), false)
        }
        if foreignFamily() != nil { return (ForeignVariable.defaultTopic, true) }
        if case .certificate(let certificate) = credentials {
            throw ConfigurationError(
                .missing, Variable.topic, "\(Variable.topic) must be set to the app's bundle ID: the certificate of \(certificate.variable) names none (no UID in its subject)")
        }
        throw ConfigurationError(.missing, Variable.topic, "\(Variable.topic) (or \(Variable.topicAlias)) must be set to the app's bundle ID (e.g. com.example.app)")
    }

    /// `PORT`; unset, 3000, or 42069 where the other relays' defaults apply.
    func port() throws(ConfigurationError) -> Int {
        let unset = foreignFamily() != nil ? ForeignVariable.defaultPort : RelayConfiguration.Defaults.port
        return try integer(Variable.port, default: unset, in: 1...65535, "")
    }

    /// The other relay whose defaults fill unset variables, and why: the default app's credentials
    /// are read under its names (no key or certificate name of this relay's is set), so its env
    /// file means here what it meant there. From names alone, so `healthcheck` finds the port
    /// `serve` listens on without reading a key.
    func foreignFamily() -> (family: String, reason: String)? {
        let names = credentialNames
        guard names.ownKey == nil, names.ownCertificate == nil else { return nil }
        if let credential = names.theirKey ?? names.theirCertificate {
            return (familyName, "the credentials are read from \(credential)")
        }
        return usesDefaultP12 ? (familyName, "\(ForeignVariable.defaultP12File) is in the working directory and no credential is set") : nil
    }

    /// Which of the two relays the foreign names read are from: webpush-apn-relay's token names
    /// are its own; the rest toot-relay had first.
    private var familyName: String {
        ForeignVariable.webpushAPNRelay.contains { value($0) != nil } ? "webpush-apn-relay" : "toot-relay"
    }

    /// `APNS_CA_FILE` adds roots to the system store and must be readable. toot-relay's
    /// `CA_FILENAME` replaces the store, but only where and as leniently as the other relays read
    /// it: both read it with `ReadFile` and went on with the system store on an error
    /// (webpush-apn-relay's image sets `CA_FILENAME=/cas.crt` itself), and webpush-apn-relay gave
    /// its roots to certificate clients only (apns2's token client has no TLS settings to hold
    /// them). So an unreadable one, or one beside a `.p8` key, is a warning, and Apple is
    /// verified against the system store.
    func caFile(for credentials: AppCredentials) throws(ConfigurationError) -> (path: String?, replacesSystemStore: Bool, warning: String?) {
        var only = value(ForeignVariable.caFile)
        var warning: String?
        if let path = only {
            let store = "Apple's certificate is verified against the system trust store (a pinned CA is what broke relays at Apple's 2025 CA change)"
            if case .token = credentials {
                warning = "\(ForeignVariable.caFile) (\(quoted(path))) is ignored with a .p8 key, as webpush-apn-relay ignored it: \(store)"
                only = nil
            } else {
                do { _ = try LocalFile.bytes(atPath: path) } catch {
                    warning = "\(ForeignVariable.caFile) is ignored, as toot-relay and webpush-apn-relay ignored it, \(couldNotRead(error)): \(store)"
                    only = nil
                }
            }
        }
        let extra = value(Variable.caFile)
        if extra != nil, only != nil {
            throw ConfigurationError(
                .conflict, Variable.caFile, "\(Variable.caFile) and \(ForeignVariable.caFile) must not both be set: the first adds roots to the system's, the second replaces them")
        }
        guard let path = extra ?? only else { return (nil, false, warning) }
        let name = extra != nil ? Variable.caFile : ForeignVariable.caFile
        guard LocalFile.isReadable(atPath: path) else {
            throw ConfigurationError(.unreadableFile, name, "\(name) must name a readable PEM file of CA certificates, could not read \(quoted(path))")
        }
        return (path, only != nil, warning)
    }

    /// `TLS_CERT_FILE` and `TLS_KEY_FILE` (or `CRT_FILENAME` and `KEY_FILENAME`): both or neither.
    /// With toot-relay's names in use and neither set, toot-relay's default files when both exist.
    func httpsFiles() throws(ConfigurationError) -> HTTPSFiles? {
        let certificate = try agreeing([Variable.tlsCertFile, ForeignVariable.httpsCertFile])
        let key = try agreeing([Variable.tlsKeyFile, ForeignVariable.httpsKeyFile])
        switch (certificate, key) {
        case (let c?, let k?):
            for (name, path) in [(c.name, c.value), (k.name, k.value)] where !LocalFile.isReadable(atPath: path) {
                throw ConfigurationError(.unreadableFile, name, "\(name) must name a readable PEM file, could not read \(quoted(path))")
            }
            return HTTPSFiles(certificateFile: c.value, keyFile: k.value, variable: c.name)
        case (let c?, nil):
            throw ConfigurationError(.missing, Variable.tlsKeyFile, "\(Variable.tlsKeyFile) must be set to the PEM key of \(c.name) to serve HTTPS")
        case (nil, let k?):
            throw ConfigurationError(.missing, Variable.tlsCertFile, "\(Variable.tlsCertFile) must be set to the PEM certificate of \(k.name) to serve HTTPS")
        case (nil, nil):
            // Only for a relay set up as toot-relay is: a key-based relay that finds its old files
            // lying around keeps speaking plain HTTP to its proxy.
            let inUse = ForeignVariable.tootRelay.contains { value($0) != nil } || usesDefaultP12
            guard inUse, LocalFile.isReadable(atPath: ForeignVariable.defaultHTTPSCertFile),
                  LocalFile.isReadable(atPath: ForeignVariable.defaultHTTPSKeyFile) else { return nil }
            return HTTPSFiles(certificateFile: ForeignVariable.defaultHTTPSCertFile, keyFile: ForeignVariable.defaultHTTPSKeyFile,
                              variable: ForeignVariable.httpsCertFile)
        }
    }

    /// Which other relay's names were read, and which: `webpush-apn-relay: TOKEN_KEY_ID, …`.
    func foreignNames() -> String? {
        let read = ForeignVariable.all.filter { value($0) != nil }
        guard !read.isEmpty else { return nil }
        return "\(familyName): \(read.joined(separator: ", "))"
    }
}
