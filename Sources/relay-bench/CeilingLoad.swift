// The ceiling phase: the same pushes sent straight to the emulator over TLS + HTTP/2, as the relay
// would send them, with no HTTP/1.1 hop and no relay logic. What the relay reaches is measured
// against this.
import Dispatch
import Foundation
import EventLoop
import BenchSupport
import HTTP2
import OpenSSLSupport
import Transport

/// What every ceiling request carries besides its own id.
struct CeilingRequestShape: Sendable {
    var headers: [HTTP2Header]
    var payload: APNsPayloadTemplate
}

/// One HTTP/2 connection to the emulator keeping up to `target` streams open (never more than
/// the server's live limit), each answered stream replaced by a new one.
///
/// `@unchecked Sendable` only so the main thread can hand it to the loop: every member is used
/// on the ceiling client's loop alone.
final class CeilingConnection: HTTP2ClientConnectionDelegate, @unchecked Sendable {
    private let index: Int
    private let target: Int
    private let phase: LoadPhase
    private let shape: CeilingRequestShape
    private let path: String
    private var connection: HTTP2ClientConnection?
    private var sentAt: [Int32: UInt64] = [:]
    private var sequence = 0
    private var finished = false

    init(index: Int, target: Int, phase: LoadPhase, shape: CeilingRequestShape) {
        self.index = index
        self.target = target
        self.phase = phase
        self.shape = shape
        self.path = "/3/device/" + makeDeviceToken()
    }

    func start(port: Int, tls: TLSContext, loop: EventLoop) {
        HTTP2ClientConnection.connect(host: "localhost", port: port, tls: tls, on: loop, timeout: .seconds(5),
                                      id: index, delegate: self) { [self] result in
            switch result {
            case .success(let connection):
                self.connection = connection
                topUp()
            case .failure(let error):
                phase.noteError("connecting to the emulator: \(error)")
                finish()
            }
        }
    }

    /// Opens streams up to the target and the server's live limit; ends the connection once
    /// the window is over and its last stream has answered.
    private func topUp() {
        guard !finished, let connection else { return }
        guard phase.accepting, connection.isUsable else {
            if sentAt.isEmpty { finish() }
            return
        }
        let limit = min(target, Int(connection.remoteMaxConcurrentStreams))
        while sentAt.count < limit {
            sequence += 1
            let id = pushID(connection: index, sequence: sequence)
            var headers = shape.headers
            headers.append(HTTP2Header(name: "apns-id", value: UUID().uuidString.lowercased(), neverIndex: true))
            do {
                let stream = try connection.submitRequest(path: path, headers: headers, body: shape.payload.payload(id: id))
                sentAt[stream] = monotonicNanos()
            } catch {
                phase.noteError("submitting a request: \(error)")
                break
            }
        }
    }

    private func finish() {
        guard !finished else { return }
        finished = true
        phase.result.unanswered += sentAt.count
        sentAt.removeAll()
        connection?.close()
        phase.clientFinished()
    }

    func abandon() { finish() }

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        guard let start = sentAt.removeValue(forKey: id) else { return }
        let now = monotonicNanos()
        switch result {
        case .success(let response):
            phase.record(now: now, latency: now &- start)
            phase.result.statusCounts[response.status, default: 0] += 1
        case .failure(let error):
            phase.noteError("stream failed: \(error)")
        }
        topUp()
    }

    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {
        topUp()
    }

    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8],
                    refused: [UInt64]) {
        phase.noteError("the emulator sent GOAWAY (code \(errorCode))")
    }

    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {}

    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        if let error, !finished { phase.noteError("the connection to the emulator closed: \(error)") }
        sentAt.removeAll()
        finish()
    }
}

/// The ceiling phase: `settings.pool` connections carrying `settings.connections` streams in all.
func runCeilingLoad(port: Int, caPEM: String, providerToken: String, topic: String,
                    settings: BenchSettings, variants: [PushVariant]) throws -> LoadResult {
    let tls = try TLSContext.client(trustSystemStore: false, extraCAPEM: caPEM)
    let group = try EventLoopGroup(loopCount: 1)
    defer { group.shutdown() }
    let loop = group.loops[0]
    let phase = LoadPhase(expectedPushes: 400_000)
    let expiration = String(Int64(Date().timeIntervalSince1970) + 172_800)
    let shape = CeilingRequestShape(headers: [
        HTTP2Header(name: "authorization", value: "bearer " + providerToken),
        HTTP2Header(name: "apns-topic", value: topic),
        HTTP2Header(name: "apns-push-type", value: "alert"),
        HTTP2Header(name: "apns-priority", value: "10"),
        HTTP2Header(name: "apns-expiration", value: expiration),
    ], payload: APNsPayloadTemplate(variants: variants))
    let pool = min(settings.pool, settings.connections)
    let connections = (0..<pool).map { i in
        // Spread the streams evenly; the first connections take the remainder.
        let target = settings.connections / pool + (i < settings.connections % pool ? 1 : 0)
        return CeilingConnection(index: i + 1, target: target, phase: phase, shape: shape)
    }
    return drivePhase(phase, settings: settings, loop: loop, begin: {
        phase.active = connections.count
        phase.openWindow(warmup: settings.warmup, seconds: settings.seconds, on: loop)
        for connection in connections { connection.start(port: port, tls: tls, loop: loop) }
    }, abandon: {
        for connection in connections { connection.abandon() }
    })
}
