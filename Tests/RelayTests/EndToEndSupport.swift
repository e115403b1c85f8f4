import Foundation
import Synchronization
import Testing
import APNs
import MockAPNs
import Observability
import ObservabilityTestSupport
import Basics
import OpenSSLSupport
@testable import Relay
import CertificateSupport
import TestWaits
#if canImport(Glibc)
import Glibc
#endif

/// A tiny HTTP/1.1 client over blocking sockets, run on its own thread so it never blocks
/// Swift's task pool (where the relay's responder runs).
enum TestHTTP {
    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        var json: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]) ?? [:]
        }

        var reason: String? { json["reason"] as? String }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    static func post(port: Int, target: String, headers: [(String, String)], body: [UInt8]) async throws -> Response {
        var head = "POST \(target) HTTP/1.1\r\nHost: relay.test\r\nConnection: close\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        return try await raw(Array((head + "\r\n").utf8) + body, port: port)
    }

    static func get(port: Int, target: String, method: String = "GET") async throws -> Response {
        try await raw(Array("\(method) \(target) HTTP/1.1\r\nHost: relay.test\r\nConnection: close\r\n\r\n".utf8), port: port)
    }

    /// Sends `bytes` on a fresh connection and reads the answer until the server closes.
    static func raw(_ bytes: [UInt8], port: Int) async throws -> Response {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Response, Error>) in
            let thread = Thread {
                c.resume(with: Result { try exchange(bytes, port: port) })
            }
            thread.start()
        }
    }

    /// True when a connection to the port is refused (the relay stopped listening).
    static func refused(port: Int) -> Bool {
        (try? connectSocket(port: port)).map { close($0); return false } ?? true
    }

    private static func connectSocket(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var timeout = timeval(tv_sec: 15, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            close(fd)
            throw Failure(description: "connect to \(port) failed: errno \(errno)")
        }
        return fd
    }

    private static func exchange(_ bytes: [UInt8], port: Int) throws -> Response {
        let fd = try connectSocket(port: port)
        defer { close(fd) }
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            // The server may answer (413, 400) and close before taking the whole body.
            if n <= 0 { break }
            sent += n
        }
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            input.append(contentsOf: buffer[0..<n])
            if let response = complete(input) { return response }
        }
        guard let response = complete(input) else {
            throw Failure(description: "no complete answer (\(input.count) bytes)")
        }
        return response
    }

    /// The response once its head and Content-Length bytes of body are in.
    private static func complete(_ input: [UInt8]) -> Response? {
        guard input.count >= 4 else { return nil }
        var end: Int?
        for i in 0...(input.count - 4) where input[i] == 13 && input[i + 1] == 10 && input[i + 2] == 13 && input[i + 3] == 10 {
            end = i
            break
        }
        guard let end else { return nil }
        var lines = String(decoding: input[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines.removeFirst().split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let length = headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0
        guard input.count - (end + 4) >= length else { return nil }
        return Response(status: status, headers: headers, body: Array(input[(end + 4)..<(end + 4 + length)]))
    }
}

/// The relay on real sockets: HTTP/1.1 in, TLS + HTTP/2 out to two emulators (production and
/// sandbox) that check Apple's rules with their own code.
final class RelayHarness: Sendable {
    static let topic = "com.example.app"
    static let teamID = "TEAM123456"
    static let keyID = "KEYID12345"
    static let key = try! ES256PrivateKey.generate()
    static let certificates = try! TestCertificates.make()

    let apple: MockAPNsServer
    let sandbox: MockAPNsServer
    let relay: RelayServer
    let logs = InMemoryLogSink()
    /// The relay's wall clock at start, fixed to a whole second so `apns-expiration` is exact.
    let now: WallTime
    /// The relay's wall clock: `now` until a test moves it (to age held pushes past their TTL).
    let wallClock: ManualWallClock
    /// The emulators' clock (Unix seconds): the real one until a test fixes it, to age the
    /// relay's provider token without waiting.
    let appleTime = EmulatorClock()

    /// - Parameters:
    ///   - emulator: changes both emulators' configuration (token max age, faults).
    ///   - tuneClient: runs after the harness's own short timings, to change them.
    init(topic: String = RelayHarness.topic, relayToTopic: String? = nil, pushTimeout: Duration = .seconds(6),
         poolSize: Int = 2, loops: Int = 1, hold: HoldConfiguration = .off,
         emulator configure: (inout MockAPNsConfiguration) -> Void = { _ in },
         tuneClient: (@Sendable (inout APNsClientConfiguration) -> Void)? = nil) throws {
        let appleTime = self.appleTime
        func emulator(sandbox: Bool) throws -> MockAPNsServer {
            var configuration = MockAPNsConfiguration(topics: [Self.topic], teamID: Self.teamID,
                                                      keys: [Self.keyID: .es256(Self.key.publicKey)], sandbox: sandbox,
                                                      // The relay always sends both: hold it to that.
                                                      requirePushType: true, strictPayload: true)
            configure(&configuration)
            return try MockAPNsServer.start(configuration: configuration, certificates: Self.certificates,
                                            unixTime: { appleTime.unixSeconds })
        }
        apple = try emulator(sandbox: false)
        sandbox = try emulator(sandbox: true)
        let now = WallTime(nanosecondsSince1970: WallTime.now.unixSeconds * 1_000_000_000)
        self.now = now
        let wallClock = ManualWallClock(now)
        self.wallClock = wallClock
        var configuration = RelayConfiguration(
            authKey: Self.key.pemPKCS8, keyID: Self.keyID, teamID: Self.teamID, topic: topic,
            connectionPoolSize: poolSize, port: 0, bindAddress: "127.0.0.1",
            apnsHost: .init(host: "localhost", port: apple.port), apnsSandboxHost: .init(host: "localhost", port: sandbox.port),
            pushTimeout: pushTimeout, maxBodyBytes: 65536, relayToTopic: relayToTopic)
        configuration.hold = hold
        var options = RelayServer.Options(extraCAPEM: Self.certificates.caPEM)
        options.loopCount = loops
        options.now = { wallClock.now }
        options.tuneClient = { c in
            c.backoffBase = .milliseconds(50)
            c.backoffMax = .milliseconds(300)
            c.tickInterval = .milliseconds(50)
            c.connectTimeout = .seconds(3)
            tuneClient?(&c)
        }
        relay = try RelayServer.start(configuration: configuration, logger: Logger(label: "relay", level: .debug, sink: logs),
                                      options: options)
    }

    var port: Int { relay.port }

    func waitUntilReady() async throws {
        guard try await eventually(within: .seconds(10), { relay.isReady }) else {
            throw TestHTTP.Failure(description: "relay never became ready")
        }
    }

    func close() async {
        await relay.shutdown(deadline: .seconds(3))
        apple.stop()
        sandbox.stop()
    }

    /// Runs `body` against a ready relay and always stops everything afterwards.
    static func with(topic: String = RelayHarness.topic, relayToTopic: String? = nil, pushTimeout: Duration = .seconds(6),
                     poolSize: Int = 2, loops: Int = 1, hold: HoldConfiguration = .off,
                     emulator: (inout MockAPNsConfiguration) -> Void = { _ in },
                     tuneClient: (@Sendable (inout APNsClientConfiguration) -> Void)? = nil,
                     _ body: (RelayHarness) async throws -> Void) async throws {
        let harness = try RelayHarness(topic: topic, relayToTopic: relayToTopic, pushTimeout: pushTimeout, poolSize: poolSize,
                                       loops: loops, hold: hold, emulator: emulator, tuneClient: tuneClient)
        do {
            try await harness.waitUntilReady()
            try await body(harness)
        } catch {
            await harness.close()
            throw error
        }
        await harness.close()
    }

    /// A Mastodon-shaped aesgcm push for `token`.
    func push(token: String, id: String = "sub-1", query: String = "", extra: [(String, String)] = [],
              body: [UInt8] = Sample.body) async throws -> TestHTTP.Response {
        try await TestHTTP.post(
            port: port, target: "/push/\(token)/\(id)\(query)",
            headers: [("Content-Encoding", "aesgcm"), ("Encryption", "salt=\(Sample.salt)"),
                      ("Crypto-Key", "dh=\(Sample.dh);p256ecdsa=BAAA")] + extra,
            body: body)
    }
}

/// A wall clock that stands still until `advance`.
final class ManualWallClock: Sendable {
    private let nanoseconds: Atomic<Int64>
    init(_ start: WallTime) { nanoseconds = Atomic(start.nanosecondsSince1970) }
    var now: WallTime { WallTime(nanosecondsSince1970: nanoseconds.load(ordering: .acquiring)) }
    func advance(by seconds: Int64) { nanoseconds.add(seconds * 1_000_000_000, ordering: .acquiringAndReleasing) }
}

/// Unix seconds: the real time until `fix(at:)`, then that second until fixed again.
final class EmulatorClock: Sendable {
    private let fixed = Atomic<Int64>(0)

    var unixSeconds: Int64 {
        let fixed = fixed.load(ordering: .acquiring)
        return fixed != 0 ? fixed : WallTime.unixSecondsNow
    }

    func fix(at seconds: Int64) { fixed.store(seconds, ordering: .releasing) }
}

/// A 64-digit token starting with `prefix` (the emulator picks its fault by prefix).
func token(_ prefix: String = "", fill: Character = "1") -> String {
    prefix + String(repeating: fill, count: 64 - prefix.count)
}

/// Unpadded or padded base64url → bytes.
func base64URLDecode(_ s: String) -> [UInt8] {
    var t = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while t.count % 4 != 0 { t += "=" }
    return Array(Data(base64Encoded: t)!)
}

/// Padded base64url, written independently of the relay's encoder.
func base64URLPadded(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
}
