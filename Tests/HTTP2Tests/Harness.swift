import HTTP2

/// Records everything a client session tells its owner, so tests can check "exactly once".
final class ClientRecorder: HTTP2ClientDelegate {
    var completions: [Int32: [Result<HTTP2Response, HTTP2StreamError>]] = [:]
    var completionOrder: [Int32] = []
    var maxConcurrentUpdates: [UInt32] = []
    var goAways: [(lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8], refused: [UInt64])] = []
    /// The tag each completion came back with.
    var tags: [Int32: UInt64] = [:]
    var pingAcks = 0
    var events: [String] = []
    /// Runs inside the completion callback, to prove the delegate may call back into the session.
    var onComplete: ((HTTP2ClientSession, Int32) -> Void)?

    func session(_ s: HTTP2ClientSession, stream id: Int32, tag: UInt64, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        completions[id, default: []].append(result)
        tags[id] = tag
        completionOrder.append(id)
        events.append("complete \(id)")
        onComplete?(s, id)
    }
    func session(_ s: HTTP2ClientSession, didUpdateMaxConcurrentStreams value: UInt32) {
        maxConcurrentUpdates.append(value)
    }
    func session(_ s: HTTP2ClientSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8], refused: [UInt64]) {
        goAways.append((lastStreamID, errorCode, debugData, refused))
        events.append("goaway \(lastStreamID)")
    }
    func sessionDidReceivePingAck(_ s: HTTP2ClientSession) { pingAcks += 1 }

    func response(_ id: Int32) -> HTTP2Response? {
        guard let results = completions[id], results.count == 1, case .success(let r) = results[0] else { return nil }
        return r
    }
    func failure(_ id: Int32) -> HTTP2StreamError? {
        guard let results = completions[id], results.count == 1, case .failure(let e) = results[0] else { return nil }
        return e
    }
}

/// A server delegate that answers through a closure, or holds requests until the test answers.
final class ServerRecorder: HTTP2ServerDelegate {
    var requests: [Int32: HTTP2Request] = [:]
    var pending: [Int32] = []
    var closed: [Int32: UInt32] = [:]
    var goAways: [Int32] = []
    /// nil holds every request in `pending`.
    var answer: ((HTTP2ServerSession, HTTP2Request, Int32) -> Void)?

    init(answer: ((HTTP2ServerSession, HTTP2Request, Int32) -> Void)? = ServerRecorder.ok) {
        self.answer = answer
    }

    static func ok(_ session: HTTP2ServerSession, _ request: HTTP2Request, _ id: Int32) {
        try? session.respond(stream: id, status: 200, headers: [], body: [])
    }

    func session(_ s: HTTP2ServerSession, didReceive request: HTTP2Request, stream id: Int32) {
        requests[id] = request
        if let answer { answer(s, request, id) } else { pending.append(id) }
    }
    func session(_ s: HTTP2ServerSession, streamDidClose id: Int32, errorCode: UInt32) {
        closed[id] = errorCode
    }
    func session(_ s: HTTP2ServerSession, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        goAways.append(lastStreamID)
    }
}

/// A client and a server session joined in memory: each `pump` moves every byte each side
/// has to the other until both are quiet.
final class Pair {
    let clientRecorder = ClientRecorder()
    let serverRecorder: ServerRecorder
    let client: HTTP2ClientSession
    let server: HTTP2ServerSession

    init(maxConcurrentStreams: UInt32 = 1000,
         answer: ((HTTP2ServerSession, HTTP2Request, Int32) -> Void)? = ServerRecorder.ok) throws {
        serverRecorder = ServerRecorder(answer: answer)
        client = try HTTP2ClientSession(delegate: clientRecorder)
        server = try HTTP2ServerSession(delegate: serverRecorder, maxConcurrentStreams: maxConcurrentStreams)
    }

    /// Returns the number of rounds it took; bounded so a livelock fails instead of hanging.
    @discardableResult
    func pump(maxRounds: Int = 10_000) throws -> Int {
        for round in 0..<maxRounds {
            var toServer: [UInt8] = []
            client.takeOutput(into: &toServer)
            var toClient: [UInt8] = []
            server.takeOutput(into: &toClient)
            if toServer.isEmpty && toClient.isEmpty { return round }
            try toServer.withUnsafeBytes { try server.receive($0) }
            try toClient.withUnsafeBytes { try client.receive($0) }
        }
        throw PumpError()
    }

    struct PumpError: Error {}

    func get(_ path: String, headers: [HTTP2Header] = [], body: [UInt8] = [], tag: UInt64 = 0) throws -> Int32 {
        try client.submitRequest(method: "POST", authority: "api.push.apple.com", path: path, headers: headers, body: body, tag: tag)
    }
}
