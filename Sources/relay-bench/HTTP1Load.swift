// The relay phase's load generator: keep-alive HTTP/1.1 clients on one epoll loop, closed loop
// (each client sends its next push when the previous answer is in). One loop thread and no
// per-request allocation beyond the response buffer, so the generator leaves the cores to the relay.
import Dispatch
import EventLoop
import BenchSupport

/// What one phase measured; built on the generator's loop, read after it has stopped.
struct LoadResult: Sendable {
    /// Answers that arrived inside the measuring window.
    var measuredCount = 0
    var windowSeconds = 0.0
    /// Latency of every answer in the window, nanoseconds.
    var latencies: [UInt64] = []
    /// Every answer by status, window or not.
    var statusCounts: [Int: Int] = [:]
    /// `apns-id` of every success answer, as numbers.
    var acceptedIDs: [UInt128] = []
    /// Success answers without a readable `apns-id`.
    var successWithoutID = 0
    /// 201s that said `X-Relay-Held: true` (the relay kept the push for later), in all and in the window.
    var held = 0
    var measuredHeld = 0
    /// Per second since the phase began: answers, and the slowest of them (ns).
    var seconds: [(answers: Int, slowest: UInt64)] = []
    /// Connections that failed or closed under a request, and requests that got no answer.
    var connectionErrors = 0
    var unanswered = 0
    var firstError: String?
    /// CPU seconds the load generator's own loop thread used for the phase.
    var generatorCPUSeconds = 0.0

    var pushesPerSecond: Double { windowSeconds > 0 ? Double(measuredCount) / windowSeconds : .nan }
    var heldPerSecond: Double { windowSeconds > 0 ? Double(measuredHeld) / windowSeconds : .nan }
    func answers(otherThan status: Int) -> Int { statusCounts.filter { $0.key != status }.reduce(0) { $0 + $1.value } }
}

/// Shared state of one phase: the window, the counters, the clients still working.
///
/// `@unchecked Sendable` only so the main thread can hand it to the loop: every member is
/// touched on the generator's loop alone.
final class LoadPhase: @unchecked Sendable {
    var measureStart: UInt64 = .max
    var measureEnd: UInt64 = .max
    var accepting = true
    var active = 0
    var result = LoadResult()
    var onFinished: (() -> Void)?
    /// The loop thread's CPU clock when the phase began.
    var cpuAtStart = 0.0
    /// Clients stop sending once this many answers are in (nil: at the window's end).
    var answerLimit: Int?
    private var answers = 0
    /// When the window was set (monotonic ns), for the per-second counts; 0 before.
    private var phaseStart: UInt64 = 0

    init(expectedPushes: Int) {
        result.latencies.reserveCapacity(expectedPushes)
        result.acceptedIDs.reserveCapacity(expectedPushes)
    }

    /// Counts an answer that arrived at `now` after `latency`.
    @inline(__always)
    func record(now: UInt64, latency: UInt64, held: Bool = false) {
        if held { result.held += 1 }
        if phaseStart > 0 {
            let second = Int((now &- phaseStart) / 1_000_000_000)
            while result.seconds.count <= second { result.seconds.append((0, 0)) }
            result.seconds[second].answers += 1
            result.seconds[second].slowest = max(result.seconds[second].slowest, latency)
        }
        if now >= measureStart && now < measureEnd {
            result.measuredCount += 1
            if held { result.measuredHeld += 1 }
            result.latencies.append(latency)
        }
        answers += 1
        if let limit = answerLimit, answers >= limit { accepting = false }
    }

    func noteError(_ text: String) {
        result.connectionErrors += 1
        if result.firstError == nil { result.firstError = text }
    }

    func clientFinished() {
        active -= 1
        if active == 0, let done = onFinished {
            onFinished = nil
            done()
        }
    }
}

/// One keep-alive client connection to the relay. Confined to its loop.
final class HTTP1BenchClient: TCPStreamHandler {
    private static let maxReconnects = 1000

    private let index: Int
    private let phase: LoadPhase
    private let template: WebPushRequestTemplate
    private let host: String
    private let port: Int
    private let loop: EventLoop
    private var stream: TCPStream?
    private var out: [UInt8] = []
    private var inbox: [UInt8] = []
    private var sequence = 0
    private var sentAt: UInt64 = 0
    private var waiting = false
    private var finished = false
    private var reconnects = 0

    init(index: Int, phase: LoadPhase, template: WebPushRequestTemplate, host: String, port: Int, loop: EventLoop) {
        self.index = index
        self.phase = phase
        self.template = template
        self.host = host
        self.port = port
        self.loop = loop
        out.reserveCapacity(2048)
        inbox.reserveCapacity(1024)
    }

    func start() {
        TCPStream.connect(host: host, port: port, on: loop, timeout: .seconds(5)) { [self] result in
            switch result {
            case .success(let stream):
                guard !finished else { stream.close(); return }
                stream.handler = self
                self.stream = stream
                sendNext()
            case .failure(let error):
                guard !finished else { return }
                phase.noteError("connecting to the relay: \(error)")
                finish()
            }
        }
    }

    /// Ends this client once; the phase ends when every client has.
    private func finish() {
        guard !finished else { return }
        finished = true
        if waiting {
            phase.result.unanswered += 1
            waiting = false
        }
        stream?.close()
        stream = nil
        phase.clientFinished()
    }

    /// Called by the phase at its hard deadline, for clients still waiting for an answer.
    func abandon() { finish() }

    private func sendNext() {
        guard phase.accepting, let stream, stream.isOpen else { finish(); return }
        sequence += 1
        template.write(id: pushID(connection: index, sequence: sequence), into: &out)
        waiting = true
        sentAt = monotonicNanos()
        stream.write(out)
    }

    func streamDidRead(_ stream: TCPStream, _ bytes: UnsafeRawBufferPointer) {
        inbox.append(contentsOf: bytes)
        while waiting, let response = parseResponse() {
            let now = monotonicNanos()
            waiting = false
            phase.record(now: now, latency: now &- sentAt, held: response.held)
            phase.result.statusCounts[response.status, default: 0] += 1
            if response.status == 201 {
                if let id = response.apnsID { phase.result.acceptedIDs.append(id) } else { phase.result.successWithoutID += 1 }
            }
            if response.close {
                stream.close()
                return
            }
            sendNext()
        }
        if !waiting && !inbox.isEmpty && !finished {
            phase.noteError("the relay sent \(inbox.count) bytes nobody asked for")
            finish()
        }
    }

    func streamDidDrainWrites(_ stream: TCPStream) {}

    func streamDidClose(_ stream: TCPStream, error: SocketError?) {
        guard !finished, self.stream === stream else { return }
        self.stream = nil
        inbox.removeAll(keepingCapacity: true)
        if waiting {
            waiting = false
            phase.result.unanswered += 1
            phase.noteError("the relay closed a connection with a push in flight: \(error.map { "\($0)" } ?? "EOF")")
        }
        guard phase.accepting, reconnects < Self.maxReconnects else { finish(); return }
        reconnects += 1
        start()
    }

    private struct Response {
        var status: Int
        var apnsID: UInt128?
        var close: Bool
        var held: Bool
    }

    /// Takes one whole response (head and `Content-Length` body) off the inbox, or nil until
    /// it has arrived. The relay's answers are small, so the bytes moved down after it are few.
    private func parseResponse() -> Response? {
        let count = inbox.count
        guard count >= 16 else { return nil }
        let parsed = inbox.withUnsafeBufferPointer { b -> (Response, Int)? in
            var headEnd = -1
            var i = 3
            while i < count {
                if b[i] == 10 && b[i - 1] == 13 && b[i - 2] == 10 && b[i - 3] == 13 { headEnd = i + 1; break }
                i += 1
            }
            guard headEnd > 0 else { return nil }
            // "HTTP/1.1 201 Created"; anything else is counted as status 0 and ends the connection.
            var status = 0
            for j in 9..<12 {
                let d = Int(b[j]) - 48
                guard d >= 0 && d <= 9 else { return (Response(status: 0, apnsID: nil, close: true, held: false), count) }
                status = status * 10 + d
            }
            var contentLength = 0
            var apnsID: UInt128?
            var close = false
            var held = false
            var lineStart = 0
            while b[lineStart] != 10 { lineStart += 1 }
            lineStart += 1
            while lineStart < headEnd - 2 {
                var lineEnd = lineStart
                while b[lineEnd] != 13 { lineEnd += 1 }
                var colon = lineStart
                while colon < lineEnd && b[colon] != 58 { colon += 1 }
                var valueStart = min(colon + 1, lineEnd)
                while valueStart < lineEnd && b[valueStart] == 32 { valueStart += 1 }
                let name = UnsafeBufferPointer(rebasing: b[lineStart..<colon])
                let value = UnsafeBufferPointer(rebasing: b[valueStart..<lineEnd])
                if Self.equalsLowercased(name, "content-length") {
                    contentLength = 0
                    for c in value where c >= 48 && c <= 57 { contentLength = contentLength * 10 + Int(c - 48) }
                } else if Self.equalsLowercased(name, "apns-id") {
                    apnsID = uuidKey(value)
                } else if Self.equalsLowercased(name, "x-relay-held") {
                    held = value.count == 4 && (value[0] | 0x20) == UInt8(ascii: "t")
                } else if Self.equalsLowercased(name, "connection") {
                    close = value.count == 5 && (value[0] | 0x20) == UInt8(ascii: "c")
                }
                lineStart = lineEnd + 2
            }
            guard count >= headEnd + contentLength else { return nil }
            return (Response(status: status, apnsID: apnsID, close: close, held: held), headEnd + contentLength)
        }
        guard let (response, length) = parsed else { return nil }
        if length >= inbox.count { inbox.removeAll(keepingCapacity: true) } else { inbox.removeFirst(length) }
        return response
    }

    @inline(__always)
    private static func equalsLowercased(_ bytes: UnsafeBufferPointer<UInt8>, _ lower: StaticString) -> Bool {
        guard bytes.count == lower.utf8CodeUnitCount else { return false }
        let l = lower.utf8Start
        for i in 0..<bytes.count where (bytes[i] | 0x20) != l[i] { return false }
        return true
    }
}

extension LoadPhase {
    /// Sets the window from now: `warmup` seconds unmeasured, then `seconds` measured, after
    /// which clients stop sending; call on the loop.
    func openWindow(warmup: Double, seconds: Double, on loop: EventLoop) {
        let start = monotonicNanos()
        phaseStart = start
        measureStart = start + UInt64(warmup * 1e9)
        measureEnd = measureStart + UInt64(seconds * 1e9)
        result.windowSeconds = seconds
        loop.schedule(after: .nanoseconds(Int64((warmup + seconds) * 1e9))) { [self] in
            accepting = false
        }
    }
}

/// Drives a phase whose work lives on `loop`: `begin` runs there and must arrange for
/// `phase.onFinished` to fire; after the window plus a grace period the remaining work is
/// abandoned by `abandon`, so the phase always ends.
func drivePhase(_ phase: LoadPhase, settings: BenchSettings, loop: EventLoop,
                begin: @escaping @Sendable () -> Void, abandon: @escaping @Sendable () -> Void) -> LoadResult {
    let done = DispatchSemaphore(value: 0)
    loop.execute {
        phase.cpuAtStart = threadCPUSeconds()
        phase.onFinished = { done.signal() }
        begin()
    }
    let grace = 12.0
    if done.wait(timeout: .now() + settings.warmup + settings.seconds + grace) == .timedOut {
        loop.execute { abandon() }
        _ = done.wait(timeout: .now() + 3)
    }
    let collected = DispatchSemaphore(value: 0)
    let box = ResultBox()
    loop.execute {
        phase.result.generatorCPUSeconds = threadCPUSeconds() - phase.cpuAtStart
        box.result = phase.result
        collected.signal()
    }
    _ = collected.wait(timeout: .now() + 3)
    return box.result ?? phase.result
}

/// Carries a result from the loop to the waiting main thread.
///
/// `@unchecked Sendable`: written once on the loop before a semaphore signal, read after the wait.
final class ResultBox: @unchecked Sendable {
    var result: LoadResult?
}

/// The relay phase: `settings.connections` clients against the relay at 127.0.0.1:`port`.
/// - Parameters:
///   - tokenPerPush: every push to a device of its own (held pushes: HOLD_MAX_PER_DEVICE).
///   - answerLimit: stop once this many answers are in (the window is then only a bound).
func runHTTP1Load(port: Int, settings: BenchSettings, variants: [PushVariant], tokenPerPush: Bool = false,
                  answerLimit: Int? = nil) throws -> LoadResult {
    let group = try EventLoopGroup(loopCount: 1)
    defer { group.shutdown() }
    let loop = group.loops[0]
    let phase = LoadPhase(expectedPushes: answerLimit ?? 200_000)
    phase.answerLimit = answerLimit
    let clients = ClientList()
    let templates = (0..<settings.connections).map { _ in
        WebPushRequestTemplate(token: makeDeviceToken(), host: "127.0.0.1:\(port)", variants: variants, tokenPerPush: tokenPerPush)
    }
    return drivePhase(phase, settings: settings, loop: loop, begin: {
        phase.active = templates.count
        phase.openWindow(warmup: settings.warmup, seconds: settings.seconds, on: loop)
        clients.all = templates.enumerated().map { i, template in
            HTTP1BenchClient(index: i + 1, phase: phase, template: template, host: "127.0.0.1", port: port, loop: loop)
        }
        for client in clients.all { client.start() }
    }, abandon: {
        for client in clients.all { client.abandon() }
    })
}

/// The clients of a phase, kept alive while it runs.
///
/// `@unchecked Sendable`: created and used on the generator's loop only.
final class ClientList: @unchecked Sendable {
    var all: [HTTP1BenchClient] = []
}
