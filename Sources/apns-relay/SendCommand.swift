#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization
import APNs
import HTTPServer

/// `apns-relay send`: one push through the same client the relay uses, result printed as JSON.
/// Exit status 0 when Apple accepted it, 1 when it did not, 2 for a usage or configuration error.
enum SendCommand {
    struct Options {
        var token: String?
        var topic: String?
        var sandbox = false
        var title: String?
        var body: String?
        var payload: String?
        var pushType: String?
        var priority: Int?
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var index = 0
        func next(_ flag: String) throws -> String {
            index += 1
            guard index < arguments.count else { throw CommandError("\(flag) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            let flag = arguments[index]
            switch flag {
            case "--token": options.token = try next(flag)
            case "--topic": options.topic = try next(flag)
            case "--sandbox": options.sandbox = true
            case "--title": options.title = try next(flag)
            case "--body": options.body = try next(flag)
            case "--payload": options.payload = try next(flag)
            case "--push-type": options.pushType = try next(flag)
            case "--priority":
                let text = try next(flag)
                guard let value = Int(text) else { throw CommandError("--priority must be 10, 5 or 1; got \(text)") }
                options.priority = value
            default: throw CommandError("unknown option \(flag) for send")
            }
            index += 1
        }
        return options
    }

    static func notification(_ options: Options) throws -> APNsNotification {
        guard let hex = options.token else { throw CommandError("send needs --token HEX (the device token)") }
        guard let topic = options.topic ?? CommandEnvironment.value("APNS_TOPIC") else {
            throw CommandError("send needs --topic (or APNS_TOPIC): the app's bundle id")
        }
        let payload: APNsPayload
        if let json = options.payload {
            guard options.title == nil, options.body == nil else { throw CommandError("use --payload or --title/--body, not both") }
            payload = try APNsPayload(json: Array(json.utf8))
        } else {
            payload = try APNsAlertPayload(title: options.title ?? "", body: options.body ?? "").build()
        }
        var pushType: APNsPushType?
        if let name = options.pushType {
            guard let type = APNsPushType(rawValue: name) else {
                throw CommandError("--push-type \(name) is unknown; use one of \(APNsPushType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            pushType = type
        }
        return try APNsNotification(token: try DeviceToken(DeviceToken.cleaned(hex)), topic: topic, payload: payload,
                                    pushType: pushType, priority: options.priority)
    }

    static func run(_ arguments: [String]) -> Int32 {
        let options: Options
        let notification: APNsNotification
        var configuration: APNsClientConfiguration
        do {
            options = try parse(arguments)
            notification = try self.notification(options)
            configuration = try APNsClientConfiguration(
                keyID: try CommandEnvironment.keyID(), teamID: try CommandEnvironment.teamID(),
                signingKey: try CommandEnvironment.signingKey(), extraCAFile: CommandEnvironment.value("APNS_CA_FILE"))
            configuration.production = try CommandEnvironment.endpoint("APNS_HOST", default: .production)
            configuration.sandbox = try CommandEnvironment.endpoint("APNS_SANDBOX_HOST", default: .sandbox)
            configuration.poolSize = 1
        } catch {
            return CommandEnvironment.fail(error)
        }

        let group: EventLoopGroup
        let client: APNsClient
        do {
            group = try EventLoopGroup(loopCount: 1)
            client = try APNsClient(configuration: configuration, group: group)
        } catch {
            return CommandEnvironment.fail(error)
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        let environment: APNsEnvironment = options.sandbox ? .sandbox : .production
        client.send(notification, environment: environment) { result in
            outcome.set(result)
            done.signal()
        }
        done.wait()
        let drained = DispatchSemaphore(value: 0)
        Task {
            await client.shutdown()
            drained.signal()
        }
        _ = drained.wait(timeout: .now() + 3)
        group.shutdown()

        switch outcome.get() {
        case .success(let response):
            print(response.json)
            return response.ok ? 0 : 1
        case .failure(let error):
            print(#"{"ok":false,"error":"\#(error.code)","message":\#(JSONString.quoted(error.message))}"#)
            return 1
        case nil:
            return 1
        }
    }
}

/// Carries the one result from the loop thread to the main thread.
private final class OutcomeBox: Sendable {
    private let value = Mutex<Result<APNsResponse, APNsError>?>(nil)
    func set(_ result: Result<APNsResponse, APNsError>) { value.withLock { $0 = result } }
    func get() -> Result<APNsResponse, APNsError>? { value.withLock { $0 } }
}
