#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import APNs
import Basics
import EventLoop

/// `apns-relay send`, `send-many` and `clean-token`: the APNs library on the command line.
///
/// Exit status: 0 when Apple accepted (every push, for `send-many`), 1 when Apple refused (any,
/// for `send-many`), 2 for a usage error, a push refused before sending (the library's rules,
/// printed in one line), or no answer from Apple (for `send-many`: none reached Apple). The rules themselves live in the library; this only maps flags.
enum SendCommand {
    struct Options {
        var token: String?
        var tokensFile: String?
        var push = APNsPushOptions()
        var host: String?
        var caFile: String?
        var alert = APNsAlertPayload()
        var alertGiven = false
        var background = false
        var data: String?
        var payload: String?
        /// `--help` or `-h` where an option goes (not as a flag's value: `--title -h` is a title).
        var help = false
    }

    /// True when the arguments ask for help in option position.
    static func asksForHelp(_ arguments: [String], many: Bool) -> Bool {
        (try? parse(arguments, many: many))?.help ?? false
    }

    /// Flags that take a value, with what they set.
    static func parse(_ arguments: [String], many: Bool) throws -> Options {
        var o = Options()
        var index = 0
        func next(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw CommandError("\(flag) needs a value") }
            return arguments[index]
        }
        func integer(_ flag: String) throws -> Int {
            let text = try next(flag)
            guard let value = Int(text) else { throw CommandError("\(flag) must be a whole number; got \(text)") }
            return value
        }
        func list(_ flag: String) throws -> [String] {
            let text = try next(flag)
            if text.hasPrefix("[") {
                guard case .array(let items)? = APNsJSON.parse(text) else {
                    throw CommandError("\(flag) must be a JSON array of strings or a comma-separated list")
                }
                return try items.map { item in
                    guard case .string(let s) = item else { throw CommandError("\(flag) must hold strings only") }
                    return s
                }
            }
            return text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        func alert(_ set: (inout APNsAlertPayload) throws -> Void) throws {
            try set(&o.alert)
            o.alertGiven = true
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--token" where !many: o.token = try next(flag)
            case "--tokens-file" where many: o.tokensFile = try next(flag)
            case "--topic": o.push.topic = try next(flag)
            case "--push-type": o.push.pushType = try APNsPushType.named(try next(flag))
            case "--priority": o.push.priority = try integer(flag)
            case "--expiration": o.push.expiration = try integer(flag)
            case "--collapse-id": o.push.collapseID = try next(flag)
            // send-many gives each push its own apns-id (one id for all would look like one push).
            case "--apns-id" where !many:
                let text = try next(flag)
                guard let id = APNsID(text) else { throw CommandError("--apns-id must be a UUID; got \(text)") }
                o.push.apnsID = id
            case "--sandbox": o.push.sandbox = true
            case "--host": o.host = try next(flag)
            case "--ca-file": o.caFile = try next(flag)
            case "--timeout-ms":
                let ms = try integer(flag)
                guard ms > 0 else { throw CommandError("--timeout-ms must be more than 0; got \(ms)") }
                o.push.timeout = .milliseconds(ms)
            case "--title": try alert { $0.title = try next(flag) }
            case "--body": try alert { $0.body = try next(flag) }
            case "--subtitle": try alert { $0.subtitle = try next(flag) }
            case "--badge": try alert { $0.badge = try integer(flag) }
            case "--sound": try alert { $0.sound = try APNsSound.parse(try next(flag)) }
            case "--category": try alert { $0.category = try next(flag) }
            case "--thread-id": try alert { $0.threadID = try next(flag) }
            case "--mutable-content": try alert { $0.mutableContent = true }
            case "--interruption-level": try alert { $0.interruptionLevel = try APNsInterruptionLevel.named(try next(flag)) }
            case "--relevance-score":
                let text = try next(flag)
                guard let score = Double(text) else { throw CommandError("--relevance-score must be a number from 0 to 1; got \(text)") }
                try alert { $0.relevanceScore = score }
            case "--target-content-id": try alert { $0.targetContentID = try next(flag) }
            case "--title-loc-key": try alert { $0.titleLocKey = try next(flag) }
            case "--title-loc-args": try alert { $0.titleLocArgs = try list(flag) }
            case "--loc-key": try alert { $0.locKey = try next(flag) }
            case "--loc-args": try alert { $0.locArgs = try list(flag) }
            case "--data": o.data = try next(flag)
            case "--background": o.background = true
            case "--payload": o.payload = try next(flag)
            case "--help", "-h": o.help = true
            default: throw CommandError("unknown option \(flag) for \(many ? "send-many" : "send") (see --help)")
            }
            index += 1
        }
        return o
    }

    /// The payload the options describe, built and checked by the library.
    static func payload(_ o: Options) throws -> APNsPayload {
        let kinds = [o.payload != nil, o.background, o.alertGiven].count(where: { $0 })
        guard kinds <= 1 else { throw CommandError("use one of --payload JSON, --background or the alert options, not several") }
        if let json = o.payload {
            guard o.data == nil else { throw CommandError("--data goes with an alert or --background; put the keys in --payload instead") }
            return try APNsPayload(json: Array(json.utf8))
        }
        let data = try o.data.map { text throws(APNsError) in try APNsJSON.object(parsing: text) } ?? [:]
        if o.background { return try APNsBackgroundPayload(data: data).build() }
        var alert = o.alert
        alert.data = data
        return try alert.build()
    }

    static func configuration(_ o: Options) throws -> APNsClientConfiguration {
        var variables = CommandEnvironment.variables
        if let caFile = o.caFile { variables[APNsClientConfiguration.Variable.caFile] = caFile }
        if let host = o.host {
            variables[APNsClientConfiguration.Variable.host] = host
            variables[APNsClientConfiguration.Variable.sandboxHost] = host
        }
        var configuration = try APNsClientConfiguration(environment: variables)
        configuration.poolSize = 1
        if o.host != nil {
            configuration.productionHostSetting = "--host"
            configuration.sandboxHostSetting = "--host"
        }
        // The connect timeout stays below the push's deadline (as the defaults are, 5 s to 8 s), so a
        // failed connect is the answer rather than a bare timeout.
        if let timeout = o.push.timeout { configuration.connectTimeout = min(configuration.connectTimeout, timeout * 5 / 8) }
        return configuration
    }

    static func send(_ arguments: [String]) -> Int32 {
        let client: APNsClient, payload: APNsPayload, options: Options, token: String
        do {
            options = try parse(arguments, many: false)
            guard let given = options.token else { throw CommandError("send needs --token HEX (the device token)") }
            token = given
            payload = try self.payload(options)
            // Every rule the library checks before sending, so a refusal costs no connection.
            _ = try options.push.notification(payload: payload, device: token,
                                              defaultTopic: CommandEnvironment.value(APNsClientConfiguration.Variable.topic))
            client = try APNsClient(configuration: try configuration(options))
        } catch {
            return CommandEnvironment.fail(error)
        }
        let outcome: Result<APNsResponse, APNsError> = wait {
            do throws(APNsError) { return .success(try await client.send(payload, to: token, options: options.push)) } catch {
                return .failure(error)
            }
        }
        wait { await client.shutdown() }
        switch outcome {
        case .success(let response):
            print(response.json)
            return response.ok ? 0 : 1
        case .failure(let error):
            print(#"{"ok":false,"error":"\#(error.code)","message":\#(JSONString.quoted(error.message)),"device":\#(JSONString.quoted(token))}"#)
            return 2
        }
    }

    static func sendMany(_ arguments: [String]) -> Int32 {
        let client: APNsClient, payload: APNsPayload, options: Options, tokens: [String]
        do {
            options = try parse(arguments, many: true)
            guard let file = options.tokensFile else { throw CommandError("send-many needs --tokens-file FILE (or - for standard input), one token a line") }
            let text: String
            if file == "-" {
                var lines: [String] = []
                while let line = readLine() { lines.append(line) }
                text = lines.joined(separator: "\n")
            } else {
                guard let read = LocalFile.text(atPath: file) else {
                    throw CommandError("--tokens-file: cannot read \(file); check the path and permissions")
                }
                text = read
            }
            tokens = text.split(whereSeparator: \.isNewline).map { $0.trimmingWhitespace }.filter { !$0.isEmpty }
            guard !tokens.isEmpty else { throw CommandError("--tokens-file \(file) holds no token") }
            payload = try self.payload(options)
            // The rules that do not depend on the token (topic, collapse id, priority, push
            // type), checked as `send` does before anything goes out; each token's own check
            // stays per token (a bad one is that token's NotSent).
            _ = try options.push.notification(payload: payload, device: String(repeating: "0", count: 64),
                                              defaultTopic: CommandEnvironment.value(APNsClientConfiguration.Variable.topic))
            client = try APNsClient(configuration: try configuration(options))
        } catch {
            return CommandEnvironment.fail(error)
        }
        let result = wait { await client.sendMany(payload, to: tokens, options: options.push) }
        wait { await client.shutdown() }
        print(result.json)
        if result.failed == 0 { return 0 }
        // Nothing sent because talking to Apple failed is a failure to talk to Apple, as for `send`.
        return result.noneReachedApple ? 2 : 1
    }

    static func cleanToken(_ arguments: [String]) -> Int32 {
        guard arguments.count == 1 else { return CommandEnvironment.fail(CommandError("clean-token takes one token")) }
        // The library's rule (DeviceToken.cleaned), unchecked: `send` is where a token is checked.
        print(DeviceToken.cleaned(arguments[0]))
        return 0
    }

    /// Runs `body` to its end from synchronous code (the command's main thread).
    private static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let box = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            box.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }
}
