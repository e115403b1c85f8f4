// The soak's load: keep-alive HTTP/1.1 clients on threads of their own, each posting one kind of
// push (normal, dead token, slow, never answered); `Tally` judges every answer.
import Foundation
import Synchronization
import BenchSupport

/// One keep-alive connection to the relay, used by one thread.
final class SoakConnection {
    private let port: Int
    private var fd: Int32 = -1
    private var inbox: [UInt8] = []
    private var buffer = [UInt8](repeating: 0, count: 16384)

    init(port: Int) { self.port = port }

    deinit { drop() }

    func drop() {
        if fd >= 0 { close(fd) }
        fd = -1
        inbox.removeAll(keepingCapacity: true)
    }

    /// Sends one request and reads its answer within Mastodon's read timeout (10 s; the relay's
    /// push deadline is 8 s): a later answer is a timeout for the sender, so it counts as none.
    func exchange(_ request: [UInt8]) -> Result<Answer, BenchError> {
        if fd < 0 {
            switch connectLoopback(port: port, timeoutSeconds: 10) {
            case .success(let socket): fd = socket
            case .failure(let error): return .failure(error)
            }
        }
        guard sendAll(fd, request) else {
            drop()
            return .failure(BenchError("the relay closed the connection before the request was sent"))
        }
        while true {
            if let (answer, length) = parse() {
                inbox.removeFirst(length)
                if answer.close { drop() }
                return .success(answer)
            }
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n > 0 else {
                let error = errno
                let why = n == 0 ? "the relay closed the connection"
                    : error == EAGAIN || error == EWOULDBLOCK ? "no answer within 10 s"
                    : "the connection failed (errno \(error))"
                drop()
                return .failure(BenchError(why))
            }
            inbox.append(contentsOf: buffer[0..<n])
        }
    }

    /// One whole answer (head and Content-Length body) at the front of the inbox, or nil.
    private func parse() -> (Answer, Int)? {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard inbox.count >= 12,
              let end = (0..<(inbox.count - 3)).first(where: { inbox[$0] == 13 && Array(inbox[$0..<$0 + 4]) == separator })
        else { return nil }
        let head = String(decoding: inbox[..<end], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        let status = statusLine.count >= 2 ? Int(statusLine[1]) ?? 0 : 0
        var answer = Answer(status: status, retryAfter: false, apnsID: nil, close: false, held: false)
        var length = 0
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            switch name {
            case "content-length": length = Int(value) ?? 0
            case "retry-after": answer.retryAfter = Int(value) != nil
            case "apns-id": answer.apnsID = uuidKey(value.utf8)
            case "connection": answer.close = value.lowercased() == "close"
            case "x-relay-held": answer.held = value.lowercased() == "true"
            default: break
            }
        }
        guard inbox.count >= end + 4 + length else { return nil }
        return (answer, end + 4 + length)
    }
}

/// A client thread: posts pushes of one kind (normal threads mix in dead tokens) until `stop`.
final class SoakWorker: Sendable {
    static let requestsPerConnection = 50
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)

    /// - Parameters:
    ///   - interval: seconds between the starts of two requests (0: back to back).
    ///   - deadShare: the share of a normal thread's pushes that go to its dead token.
    init(index: Int, kind: PushKind, port: Int, variants: [PushVariant], interval: Double, deadShare: Double, tally: Tally) {
        let host = "127.0.0.1:\(port)"
        // A device per push, as Mastodon's fan-out spreads them: a relay holding pushes keeps only
        // the newest HOLD_MAX_PER_DEVICE (100) of one device, which one client would pass in
        // seconds while Apple is away.
        let own = WebPushRequestTemplate(token: makeDeviceToken(prefix: kind.tokenPrefix), host: host, variants: variants, tokenPerPush: true)
        let dead = WebPushRequestTemplate(token: makeDeviceToken(prefix: PushKind.dead.tokenPrefix), host: host, variants: variants,
                                          tokenPerPush: true)
        Thread { [self] in
            let connection = SoakConnection(port: port)
            var request: [UInt8] = []
            var sequence = 0
            var generator = SystemRandomNumberGenerator()
            while !stopped.load(ordering: .relaxed) {
                let started = monotonicNanos()
                sequence += 1
                let isDead = kind == .normal && Double.random(in: 0..<1, using: &generator) < deadShare
                (isDead ? dead : own).write(id: index * 100_000_000 + sequence, into: &request)
                let sent: PushKind = isDead ? .dead : kind
                switch connection.exchange(request) {
                case .success(let answer): tally.record(sent, answer, sentAt: started)
                case .failure(let error):
                    tally.unanswered(sent, error.message, sentAt: started)
                    usleep(100_000)
                }
                // Mastodon's pool opens new connections too (idle ones expire after 30 s): they
                // must be served while floods hold the connection cap.
                if sequence % Self.requestsPerConnection == 0 { connection.drop() }
                let elapsed = Double(monotonicNanos() - started) / 1e9
                if interval > elapsed { usleep(UInt32((interval - elapsed) * 1e6)) }
            }
            connection.drop()
            finished.store(true, ordering: .relaxed)
        }.start()
    }

    func stop() { stopped.store(true, ordering: .relaxed) }
    var isFinished: Bool { finished.load(ordering: .relaxed) }
}
