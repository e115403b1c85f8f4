#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Synchronization
import EventLoop
import OpenSSLSupport
import HTTP2
import Transport
import CertificateSupport

/// Serves one connection: keeps its `MockConnectionState` and carries out each decision.
/// Not `Sendable`: it lives on the connection's loop; the control methods reach it through the
/// `LoopBound` in `MockServerShared.connections`.
final class MockConnectionHandler: HTTP2ServerConnectionDelegate {
    private let shared: MockServerShared
    private var state: MockConnectionState
    /// The highest stream id received, the `last_stream_id` of a GOAWAY sent "now".
    private var lastSeenStream: Int32 = 0
    /// Set once a GOAWAY went out: Apple sends one per connection, and streams above it were
    /// never processed.
    private var goAwayLastStream: Int32?
    /// Delayed answers waiting for their timer, so a closed stream or connection cancels them,
    /// each with its push's `apns-id` (nil when the answer carries none).
    private var timers: [Int32: (timer: EventLoop.Timer, apnsID: String?)] = [:]
    /// Streams received and not yet closed on this connection.
    private var openStreams = Set<Int32>()
    /// Whether the client certificate was read into `state`: once, at the first request, since the
    /// handshake is over by then and the certificate cannot change.
    private var certificateRead = false

    init(id: Int, shared: MockServerShared) {
        self.shared = shared
        self.state = MockConnectionState(connectionID: id)
    }

    func connection(_ connection: HTTP2ServerConnection, didReceive request: HTTP2Request, stream id: Int32) {
        shared.streamCount.add(1, ordering: .relaxed)
        openStreams.insert(id)
        shared.maxOpenStreams.max(openStreams.count, ordering: .relaxed)
        lastSeenStream = max(lastSeenStream, id)
        if let last = goAwayLastStream, id > last {
            // After our GOAWAY this stream does not exist for "Apple": not processed, retry elsewhere.
            connection.reset(stream: id, errorCode: HTTP2ErrorCode.refusedStream)
            return
        }
        if !certificateRead {
            certificateRead = true
            state.clientCertificate = connection.peerCertificateDER.map(MockClientCertificate.init(der:))
        }
        let head = MockRequestHead(method: request.method, path: request.path,
                                   headers: request.headers.map { (name: $0.name, value: $0.value) },
                                   body: request.body, streamID: id)
        let decision = shared.rules.decide(head, connection: &state, now: shared.unixTime())

        if let limit = decision.newMaxConcurrentStreams {
            connection.updateMaxConcurrentStreams(limit)
        }
        switch decision.action {
        case .respond(let response):
            send(response, on: connection, stream: id)
        case .delay(let delay, let response):
            let timer = connection.loop.schedule(after: delay) { [weak self, weak connection] in
                guard let self, let connection else { return }
                self.timers[id] = nil
                self.send(response, on: connection, stream: id)
            }
            timers[id] = (timer, response.header("apns-id"))
        case .neverAnswer:
            break
        case .refuseStream:
            connection.reset(stream: id, errorCode: HTTP2ErrorCode.refusedStream)
        }
        if decision.goAwayAfter {
            goAway(connection, lastStreamID: id, debugData: MockDecision.goAwayDebugData)
        }
        if let onRecord = shared.onRecord {
            let response = decision.response
            onRecord(MockRecord(connectionID: state.connectionID, streamID: id, method: head.method, path: head.path,
                                headers: head.headers, payload: head.body, status: response?.status,
                                reason: response?.reason, apnsID: response?.header("apns-id"),
                                auth: decision.auth, topic: decision.topic))
        }
    }

    /// A new stream limit; a connection not yet authenticated keeps 1, as Apple's do.
    func advertise(_ limit: UInt32, on connection: HTTP2ServerConnection) {
        guard state.authenticated, state.advertisedMaxConcurrentStreams != limit else { return }
        state.advertisedMaxConcurrentStreams = limit
        connection.updateMaxConcurrentStreams(limit)
    }

    /// Sends the one GOAWAY of this connection; later calls do nothing.
    func goAway(_ connection: HTTP2ServerConnection, lastStreamID: Int32?, debugData: [UInt8]) {
        guard goAwayLastStream == nil else { return }
        let last = lastStreamID ?? lastSeenStream
        goAwayLastStream = last
        connection.goAway(lastStreamID: last, debugData: debugData)
    }

    /// A delayed answer that will never go out: the push was decided (and recorded), its client
    /// never hears how.
    private func lose(_ pending: (timer: EventLoop.Timer, apnsID: String?)) {
        pending.timer.cancel()
        if let id = pending.apnsID { shared.onAnswerLost?(id) }
    }

    private func send(_ response: MockResponse, on connection: HTTP2ServerConnection, stream id: Int32) {
        let headers = response.headers.map { HTTP2Header(name: $0.name, value: $0.value) }
        connection.respond(stream: id, status: response.status, headers: headers, body: response.body)
    }

    func connection(_ connection: HTTP2ServerConnection, streamDidClose id: Int32, errorCode: UInt32) {
        if let pending = timers.removeValue(forKey: id) { lose(pending) }
        openStreams.remove(id)
    }

    func connection(_ connection: HTTP2ServerConnection, didClose error: TransportError?) {
        for pending in timers.values { lose(pending) }
        timers.removeAll()
        shared.openConnectionCount.subtract(1, ordering: .relaxed)
        let id = state.connectionID
        shared.connections.withLock { $0[id] = nil }
    }
}
