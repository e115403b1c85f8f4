import Testing
import Foundation
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import MockAPNs
import TestWaits

// The emulator over real TLS + HTTP/2 on loopback, driven by the Transport client with a real
// ES256 key. The JWT maker below is written here on purpose (not shared with any client code).

enum Wire {
    static let team = "TEAM123456"
    static let kid = "KEYID12345"
    static let topic = "com.example.app"
    /// The emulator's clock in these tests, so the 410 timestamp is exact.
    static let now: Int64 = 1_750_000_000
    static let key = try! ES256PrivateKey.generate()

    static func base64url(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        var out = ""
        var index = 0
        while index < bytes.count {
            let b0 = UInt32(bytes[index])
            let b1 = index + 1 < bytes.count ? UInt32(bytes[index + 1]) : 0
            let b2 = index + 2 < bytes.count ? UInt32(bytes[index + 2]) : 0
            let group = b0 << 16 | b1 << 8 | b2
            let produced = min(3, bytes.count - index) + 1
            for j in 0..<produced {
                out.append(alphabet[Int(group >> UInt32(18 - 6 * j) & 0x3F)])
            }
            index += 3
        }
        return out
    }

    /// One token for every test: ECDSA signatures are randomised, so signing again makes a
    /// different token, which Apple (and the emulator) refuse within 20 minutes on one connection.
    static let providerToken = jwt()

    static func jwt(iat: Int64 = now) -> String {
        let header = base64url(Array(#"{"alg":"ES256","kid":"\#(kid)"}"#.utf8))
        let claims = base64url(Array(#"{"iss":"\#(team)","iat":\#(iat)}"#.utf8))
        let signature = try! key.sign(Array("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(base64url(signature))"
    }

    static func token(_ prefix: String = "") -> String {
        prefix + String(repeating: "a", count: 64 - prefix.count)
    }

    static let payload = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    static func configuration(sandbox: Bool = false, faults: MockFaults = .standard) -> MockAPNsConfiguration {
        MockAPNsConfiguration(topics: [topic], teamID: team, keys: [kid: .es256(key.publicKey)],
                              sandbox: sandbox, faults: faults)
    }

    static func headers(topic: String = topic, apnsID: String? = nil) -> [HTTP2Header] {
        var headers = [
            HTTP2Header(name: "authorization", value: "bearer \(providerToken)"),
            HTTP2Header(name: "apns-topic", value: topic),
            HTTP2Header(name: "apns-push-type", value: "alert"),
        ]
        if let apnsID { headers.append(HTTP2Header(name: "apns-id", value: apnsID)) }
        return headers
    }
}

/// One test's emulator and its client loop.
final class Harness: Sendable {
    let server: MockAPNsServer
    let group: EventLoopGroup
    let tls: TLSContext

    init(sandbox: Bool = false, faults: MockFaults = .standard, onAnswerLost: (@Sendable (String) -> Void)? = nil) throws {
        server = try MockAPNsServer.start(configuration: Wire.configuration(sandbox: sandbox, faults: faults),
                                          unixTime: { Wire.now }, onAnswerLost: onAnswerLost)
        group = try EventLoopGroup(loopCount: 1)
        tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: server.caPEM)
    }

    /// - Parameter tls: the client's context; nil is the harness's (trusts the emulator's CA,
    ///   presents no certificate).
    ///   - timeout: the client's bound on connect, TLS handshake and SETTINGS.
    func connect(_ client: Client, tls: TLSContext? = nil, timeout: Duration = .seconds(5)) async throws -> Result<HTTP2ClientConnection, TransportError> {
        let box = Mutex<Handover<Result<HTTP2ClientConnection, TransportError>>?>(nil)
        let loop = group.loops[0]
        let (port, tls) = (server.port, tls ?? self.tls)
        loop.execute {
            HTTP2ClientConnection.connect(host: "localhost", port: port, tls: tls, on: loop, timeout: timeout,
                                          delegate: client) { result in
                box.withLock { $0 = Handover(value: result) }
            }
        }
        _ = try await eventually(within: timeout + .seconds(5)) { box.withLock { $0 != nil } }
        return box.withLock { $0 }?.value ?? .failure(TransportError(.timedOut, "test: no answer"))
    }

    func shutdown() {
        group.shutdown()
        server.stop()
    }
}

/// Collects what one client connection hears.
final class Client: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    struct State {
        var results: [Int32: Result<HTTP2Response, HTTP2StreamError>] = [:]
        var limits: [UInt32] = []
        var goAway: (last: Int32, debug: [UInt8])?
        var closed = false
    }
    let state = Mutex(State())

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        state.withLock { $0.results[id] = result }
    }
    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {
        state.withLock { $0.limits.append(value) }
    }
    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                    refused: [UInt64]) {
        state.withLock { $0.goAway = (lastStreamID, debugData) }
    }
    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {}
    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        state.withLock { $0.closed = true }
    }

    /// Waits (bounded) until `condition` holds; false on timeout.
    func wait(timeout: Duration = .seconds(5), until condition: (State) -> Bool) async throws -> Bool {
        try await eventually(within: timeout) { state.withLock { condition($0) } }
    }

    func result(_ id: Int32, timeout: Duration = .seconds(5)) async throws -> Result<HTTP2Response, HTTP2StreamError>? {
        _ = try await wait(timeout: timeout) { $0.results[id] != nil }
        return state.withLock { $0.results[id] }
    }
}

/// Carries a connection (not `Sendable`: it belongs to its loop) to the test's thread once
/// `connect` has finished with it; the test reaches it only through `onLoop`.
struct Handover<Value>: @unchecked Sendable {
    let value: Value
}

/// Runs `body` with the connection on the connection's loop and returns its value.
func onLoop<T: Sendable>(_ connection: HTTP2ClientConnection, _ body: @escaping @Sendable (HTTP2ClientConnection) -> T) async -> T {
    let bound = LoopBound(connection, on: connection.loop)
    return await withCheckedContinuation { continuation in
        connection.loop.execute { continuation.resume(returning: body(bound.value)) }
    }
}

/// Submits one push and returns its stream id.
func push(_ connection: HTTP2ClientConnection, token: String = Wire.token(), headers: [HTTP2Header] = Wire.headers(),
                  body: [UInt8] = Wire.payload) async throws -> Int32 {
    let id = await onLoop(connection) { try? $0.submitRequest(path: "/3/device/\(token)", headers: headers, body: body) }
    return try #require(id)
}

func reason(_ response: HTTP2Response) -> String? {
    (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])?["reason"] as? String
}
