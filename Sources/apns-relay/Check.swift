#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import APNs
import EventLoop
import Relay
import Basics
import OpenSSLSupport

/// `check`: everything `serve` would refuse to start with, found before a deploy.
enum Check {
    static func run(_ arguments: inout Arguments) -> Never {
        var envFile: String?
        var connect = false
        while let flag = arguments.next() {
            switch flag {
            case "--env-file": envFile = arguments.value(for: flag)
            case "--connect": connect = true
            default: fail("check: unknown option \(flag) (see --help)", code: 2)
            }
        }
        let configuration = Serve.loadConfiguration(envFile: envFile)
        let clientConfiguration: APNsClientConfiguration
        do {
            clientConfiguration = try RelayServer.clientConfiguration(configuration)
        } catch {
            fail(error.message)
        }
        let now = WallTime.unixSecondsNow
        switch configuration.credentials {
        case .token(let key):
            let token: ProviderToken
            do {
                let credentials = APNsCredentials(.init(keyID: key.keyID, teamID: key.teamID, signer: try RelayServer.signingKey(key)))
                token = try credentials.current(now: now).token
            } catch {
                fail("\(key.variable) cannot sign a provider token: \(error)")
            }
            say("configuration ok: key \(key.keyID), team \(key.teamID), topic \(configuration.topic)")
            say("provider token signed (ES256, \(token.jwt.utf8.count) characters)")
        case .certificate(let certificate):
            say("configuration ok: push certificate \(certificate.identity.commonName ?? "?") (\(certificate.variable)), topic \(configuration.topic)")
            say(Serve.expiryLine(app: RelayApp.defaultName, certificate, now: now))
        }
        for app in configuration.apps {
            say("app \(app.name): topic \(app.topic), at /\(app.name)/push/… and /\(app.name)/relay-to/…")
            if case .certificate(let certificate) = app.credentials { say(Serve.expiryLine(app: app.name, certificate, now: now)) }
        }
        if let https = configuration.httpsCertificate { say("HTTPS with \(https.certificateFile) (\(https.variable))") }
        if let names = configuration.foreignNames { say("read the names of \(names)") }
        if let defaults = configuration.foreignDefaults {
            say("took \(defaults.family)'s defaults \(defaults.taken.joined(separator: ", ")): \(defaults.reason)")
        }
        for warning in configuration.warnings { say("warning: \(warning)") }
        say("APNs hosts: production \(configuration.apnsHost), sandbox \(configuration.apnsSandboxHost)")
        guard connect else { exit(0) }

        // One connection to the production host, as `serve` would open it. The probe push waits
        // for it; a connect that fails answers the probe at once, with why as a value.
        var single = clientConfiguration
        single.poolSize = 1
        single.connectTimeout = .seconds(10)
        single.pushTimeout = .seconds(15)
        let group: EventLoopGroup
        let client: APNsClient
        do {
            group = try EventLoopGroup(loopCount: 1)
            client = try APNsClient(configuration: single, group: group)
        } catch {
            fail("cannot start the APNs client: \(error)")
        }
        let started = ContinuousClock.now
        let outcome = CredentialProbe.run(client: client, topic: configuration.topic)
        let elapsed = Int((ContinuousClock.now - started) / .milliseconds(1))
        let done = DispatchSemaphore(value: 0)
        Task {
            await client.shutdown()
            done.signal()
        }
        done.wait()
        group.shutdown()
        if case .success = outcome {
            say("connected to \(configuration.apnsHost) (TLS, ALPN h2); the probe push was answered in \(elapsed) ms")
        }
        let verdict = CredentialProbe.verdict(outcome, certificate: configuration.tokenKey == nil)
        guard verdict.credentialsAccepted else { fail(verdict.message) }
        say(verdict.message)
        exit(0)
    }
}

/// `healthcheck`: Docker's HEALTHCHECK, which has no curl in a slim image.
enum Healthcheck {
    static func run(_ arguments: inout Arguments) -> Never {
        var givenPort: Int?
        var https = false
        var envFile: String?
        while let flag = arguments.next() {
            switch flag {
            case "--https": https = true
            case "--env-file": envFile = arguments.value(for: flag)
            case "--port":
                let text = arguments.value(for: flag)
                guard let p = Int(text), (1...65535).contains(p) else { fail("--port must be 1 to 65535, got \"\(text)\"", code: 2) }
                givenPort = p
            default: fail("healthcheck: unknown option \(flag) (see --help)", code: 2)
            }
        }
        // The port and HTTPS exactly as serve reads them (the same rules, the same settings).
        let listener: (port: Int, https: HTTPSFiles?)
        do {
            listener = try RelayConfiguration.listener(environment: ProcessEnvironment.variables, envFile: envFile)
        } catch {
            fail(error.message)
        }
        let port = givenPort ?? listener.port
        if listener.https != nil { https = true }
        do {
            // Any certificate: this asks whether the relay on 127.0.0.1 answers, not who it is.
            let tls = https ? try TLSContext.client(alpn: [], trustSystemStore: false, verifyPeer: false) : nil
            let response = try PlainHTTP.request(method: "GET", port: port, target: "/health", timeoutSeconds: 3, tls: tls)
            guard response.status == 200 else { fail("GET /health answered \(response.status)") }
            say("ok")
            exit(0)
        } catch {
            fail("GET \(https ? "https" : "http")://127.0.0.1:\(port)/health failed: \(error)")
        }
    }
}
