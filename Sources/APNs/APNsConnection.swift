import EventLoop
import HTTP2
import Transport

/// One connection to Apple: carries out the pool's `.send`s with the client's one provider token
/// (`APNsCredentials`, shared by every connection) and reports every stream's end, GOAWAY, limit
/// change and close back as pool events.
///
/// It keeps no table of its streams: each stream carries its push's id as the HTTP/2 session's
/// tag for it (`submitRequest(tag:)`, handed back with the stream's completion and by
/// `forEachOpenStream`), and the push's record, deadline included, stays with the shard's
/// machine.
///
/// Not `Sendable`: every mutable member is touched on `loop` alone, its shard's loop (the shard
/// calls it there, directly or through a `LoopBound` carried into `loop.execute`).
final class APNsConnection: HTTP2ClientConnectionDelegate {
    let id: ConnectionID
    let loop: EventLoop
    private weak var shard: APNsPoolShard?
    private let environment: APNsEnvironment
    private let configuration: APNsClientConfiguration
    private let endpoint: APNsEndpoint
    private let observer: (any APNsClientObserver)?
    private let unixTime: @Sendable () -> Int64

    /// The HTTP/2 connection once connected (read by the test seams).
    private(set) var h2: HTTP2ClientConnection?
    private var phase = Phase.connecting(startedAt: .now, tcpDone: false)
    /// The shared token's generation that `sharedHeaders` carries (0: none yet), and when it is
    /// due for replacement (Unix seconds, `APNsCredentials.Current.renewAt`).
    private var tokenGeneration: UInt64 = 0
    private var tokenRenewAt: Int64 = 0
    /// The first stream sent with `tokenGeneration` (nil until one is): stream ids rise, so a
    /// stream below it went out with an earlier token, which is all Apple's ExpiredProviderToken
    /// needs to know (`APNsCredentials.refusedAsExpired`).
    private var tokenFirstStream: Int32?
    /// The lowest last_stream_id of the GOAWAYs received: the streams above it were reported
    /// unprocessed with the GOAWAY, and their completions that follow are not reported again.
    private var goAwayLastStreamID: Int32 = .max
    /// One timer for every stream's deadline, due at the earliest of them (see `armDeadline`).
    private var deadlineTimer: EventLoop.Timer?
    private var deadlineTimerDue: MonotonicInstant?
    /// The request headers of one push, refilled in place for each (its storage kept).
    private var requestHeaders = HTTP2HeaderBlock()
    /// What every request on this connection carries: `:method`, `:scheme`, `:authority` and
    /// `authorization: bearer <JWT>`, packed once per provider token rather than per push.
    private var sharedHeaders = HTTP2HeaderBlock()
    private var lastActivity = MonotonicInstant.now
    private var pingTimer: EventLoop.Timer?
    private var pingTimeoutTimer: EventLoop.Timer?

    init(id: ConnectionID, loop: EventLoop, shard: APNsPoolShard) {
        self.id = id
        self.loop = loop
        self.shard = shard
        self.environment = shard.environment
        self.configuration = shard.configuration
        self.endpoint = shard.endpoint
        self.observer = shard.observer
        self.unixTime = shard.unixTime
    }

    private var number: Int { Int(truncatingIfNeeded: id.value) }

    /// Where the connection is in its life; each case is a state the pool may find it in.
    private enum Phase: Equatable {
        /// The connect is under way since `startedAt`; `tcpDone` once TCP is up (TLS is next).
        case connecting(startedAt: MonotonicInstant, tcpDone: Bool)
        /// Connected: it takes pushes.
        case open
        /// The pool asked us to close (while connecting or open); nothing we do afterwards
        /// matters to it, but the close is still reported once.
        case closing
        /// The pool has been told the connection ended (a failed connect, or the close): nothing
        /// more is reported.
        case ended
    }

    // MARK: Pool's orders (on loop)

    func connect() {
        phase = .connecting(startedAt: .now, tcpDone: false)
        HTTP2ClientConnection.connect(
            host: endpoint.host, port: endpoint.port, serverName: endpoint.serverName, tls: configuration.connectionTLS,
            on: loop, timeout: configuration.connectTimeout, id: number, delegate: self,
            tcpConnected: { [weak self] in
                guard let self, case .connecting(let startedAt, _) = self.phase else { return }
                self.phase = .connecting(startedAt: startedAt, tcpDone: true)
            }
        ) { [self] result in
            switch result {
            case .failure(let error):
                phase = .ended
                observer?.connectFailed(environment: environment, error: "\(error)")
                let hostSetting = environment == .production ? configuration.productionHostSetting : configuration.sandboxHostSetting
                shard?.lastConnectFailure = APNsConnectFailure(error, endpoint: endpoint, caSetting: configuration.caSetting,
                                                              hostSetting: hostSetting)
                shard?.handle(.connectionFailed(id))
            case .success(let connection):
                h2 = connection
                if case .closing = phase { connection.close(); return }
                phase = .open
                shard?.lastConnectFailure = nil
                observer?.connectionOpened(environment: environment, connection: number)
                shard?.handle(.connectionEstablished(id))
                shard?.handle(.maxConcurrentStreamsChanged(id, Int(connection.remoteMaxConcurrentStreams)))
                armPing()
            }
        }
    }

    func send(_ push: PushID, _ notification: APNsNotification, deadline: MonotonicInstant) {
        guard let h2, !h2.isClosed, case .open = phase else {
            shard?.handle(.streamCompleted(id, push, .notSent(.unavailable("the connection to APNs closed before the push went out"))))
            return
        }
        do {
            try refreshTokenIfChanged()
        } catch {
            // Unreachable once the client started: it signed the first token, and a renewal that
            // fails keeps the current one.
            shard?.handle(.streamCompleted(id, push, .retryable(error)))
            return
        }
        // Filled as a local taken out of the member (storage and all) and put back after: each
        // field appended to the member itself would be an exclusivity check.
        var headers = HTTP2HeaderBlock()
        swap(&headers, &requestHeaders)
        defer { swap(&headers, &requestHeaders) }
        headers.removeAll()
        // Not checked again (`checked: false`): the names are constants, and the notification
        // held every value to HTTP/2's rules when it was made (a visible-ASCII topic, a collapse
        // id without control bytes; digits, a UUID and the token's hex besides).
        headers.append(":path", neverIndex: true, checked: false) { path in
            path.append(contentsOf: APNsNotification.pathPrefix.utf8)
            path.append(contentsOf: notification.token.hex.utf8)
        }
        notification.writeHeaders { name, value in
            // apns-id changes per push: indexing it would only evict authorization and the topic.
            headers.append(name, bytes: value, neverIndex: name == "apns-id", checked: false)
        }
        let stream: Int32
        do {
            stream = try h2.submitRequest(headers, shared: sharedHeaders, body: notification.payload, tag: push.value)
        } catch let error as HTTP2Error where Self.neverSent.contains(error.code) {
            // Closing, going away or out of stream ids: nothing left us, so no retry is used,
            // and the pool stops choosing this connection.
            shard?.handle(.streamCompleted(id, push, .notSent(.unavailable("APNs connection \(number) cannot open streams: \(error.message)"))))
            return
        } catch {
            shard?.handle(.streamCompleted(id, push, .retryable(.unavailable("could not open a stream to APNs: \(error)"))))
            return
        }
        if tokenFirstStream == nil { tokenFirstStream = stream }
        lastActivity = .now
        armDeadline(deadline)
    }

    func close() {
        if phase != .ended { phase = .closing }
        cancelTimers()
        h2?.close()
    }

    /// What the connect is doing, while it is under way: the words a push that reaches its
    /// deadline meanwhile ends with (nil once it succeeded or failed).
    var connectProgress: String? {
        guard case .connecting(let started, let tcpDone) = phase else { return nil }
        let step = tcpDone ? "TLS handshake with \(endpoint)" : "TCP connect to \(endpoint)"
        return "\(step) not done within \(Self.milliseconds(.now - started)) (the connect timeout is \(Self.milliseconds(configuration.connectTimeout)))"
    }

    private static func milliseconds(_ duration: Duration) -> String {
        "\(Int((duration / .milliseconds(1)).rounded())) ms"
    }

    /// The provider token generation stream `id` went out with: the current one, or 0 for any
    /// earlier one (Apple's refusal of an earlier token needs no new signing).
    private func tokenGeneration(of stream: Int32) -> UInt64 {
        guard let first = tokenFirstStream, stream >= first else { return 0 }
        return tokenGeneration
    }

    /// Submit errors that mean the request never left us and this connection can take no more.
    private static let neverSent: Set<HTTP2Error.Code> = [.goingAway, .sessionClosed, .streamIDsExhausted]

    // MARK: Internals

    /// Packs the shared provider token into `sharedHeaders` when it changed (renewed, re-signed
    /// after Apple's refusal, a new key) or is due for renewal. The common push costs one atomic
    /// load and a comparison: the lock in `APNsCredentials` is taken only when something changed.
    /// With a certificate there is no token: the shared headers are packed once, without one.
    private func refreshTokenIfChanged() throws(APNsError) {
        guard let credentials = configuration.credentials else {
            if sharedHeaders.count == 0 { HTTP2ClientSession.startShared(&sharedHeaders, authority: h2?.authority ?? endpoint.host) }
            return
        }
        let now = unixTime()
        if tokenGeneration != 0, credentials.generation == tokenGeneration, now < tokenRenewAt { return }
        let current = try credentials.current(now: now)
        if let reason = current.signed { observer?.providerTokenSigned(environment: environment, reason: reason) }
        tokenRenewAt = current.renewAt
        guard current.generation != tokenGeneration else { return }
        tokenGeneration = current.generation
        tokenFirstStream = nil
        HTTP2ClientSession.startShared(&sharedHeaders, authority: h2?.authority ?? endpoint.host)
        sharedHeaders.append("authorization", current.token.authorization)
    }

    /// Makes sure the deadline timer comes due by `deadline`. One timer serves every stream:
    /// pushes share a timeout, so a later push's deadline is almost never earlier than the one
    /// the timer waits for, and the common push arms nothing (a timer per push would be two
    /// allocations and a heap entry, cancelled milliseconds later when Apple answered).
    private func armDeadline(_ deadline: MonotonicInstant) {
        if let due = deadlineTimerDue, due <= deadline { return }
        deadlineTimer?.cancel()
        deadlineTimerDue = deadline
        deadlineTimer = loop.schedule(after: deadline - .now) { [weak self] in self?.deadlinesDue() }
    }

    /// Every stream whose push's deadline has come: the push ends now (`.timeout`, or Apple's
    /// last answer to an earlier attempt) and the stream is reset, so Apple's late answer cannot
    /// arrive. Then the timer waits for the next deadline. A stream whose push ended already
    /// (its answer only frees the slot) or that a GOAWAY refused has no deadline here.
    private func deadlinesDue() {
        deadlineTimer = nil
        deadlineTimerDue = nil
        guard let h2, let shard else { return }
        let now = MonotonicInstant.now
        var due: [(stream: Int32, push: PushID)] = []
        var next: MonotonicInstant?
        h2.forEachOpenStream { stream, tag in
            let push = PushID(tag)
            guard stream <= goAwayLastStreamID, let deadline = shard.deadline(of: push) else { return }
            if deadline <= now {
                due.append((stream, push))
            } else if next.map({ deadline < $0 }) ?? true {
                next = deadline
            }
        }
        // In the order they were sent, as a timer per push would have fired them.
        due.sort { $0.stream < $1.stream }
        for (stream, push) in due {
            shard.handle(.deadlinePassed(push))
            h2.cancel(stream: stream)
        }
        if let next, case .open = phase { armDeadline(next) }
    }

    private func armPing() {
        pingTimer = loop.schedule(after: configuration.idlePingInterval) { [weak self] in
            guard let self, case .open = self.phase, let h2 = self.h2, !h2.isClosed else { return }
            if MonotonicInstant.now - self.lastActivity >= self.configuration.idlePingInterval, self.pingTimeoutTimer == nil {
                h2.ping()
                self.pingTimeoutTimer = self.loop.schedule(after: self.configuration.pingTimeout) { [weak self] in
                    guard let self else { return }
                    self.pingTimeoutTimer = nil
                    self.h2?.close(TransportError(.timedOut, "APNs did not answer a PING within \(self.configuration.pingTimeout)"))
                }
            }
            self.armPing()
        }
    }

    private func cancelTimers() {
        pingTimer?.cancel(); pingTimer = nil
        pingTimeoutTimer?.cancel(); pingTimeoutTimer = nil
        deadlineTimer?.cancel(); deadlineTimer = nil
        deadlineTimerDue = nil
    }

    // MARK: HTTP2ClientConnectionDelegate

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, tag: UInt64,
                    didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        lastActivity = .now
        // Reported unprocessed with the GOAWAY already.
        guard id <= goAwayLastStreamID else { return }
        let push = PushID(tag)
        guard let notification = shard?.notification(of: push) else {
            // The push ended already (its deadline): the stream's end only frees its slot. Its
            // answer is not read, so a late ExpiredProviderToken signs nothing: the next push's
            // own 403 does, one push later.
            if case .failure(let error) = result, error.reason == .connectionClosed { return }
            shard?.handle(.streamCompleted(self.id, push, .late(answered: (try? result.get()) != nil)))
            return
        }
        let outcome: StreamOutcome
        switch result {
        case .success(let response):
            // Apple echoes our apns-id: read as our own string, so the answer makes none.
            let apnsID = response.header("apns-id", reusing: notification.apnsID)
            let classified = StreamOutcome.classify(
                APNsResponse.parse(status: response.status, apnsID: apnsID, uniqueID: response.header("apns-unique-id"),
                                   body: response.body, device: notification.token, sentID: notification.apnsID))
            if case .expiredProviderToken(let refused) = classified,
               !(configuration.credentials?.refusedAsExpired(generation: tokenGeneration(of: id), now: unixTime()) ?? false) {
                // No newer token to retry with (Apple's refusals already forced one lately): the answer stands.
                outcome = .final(refused)
            } else {
                outcome = classified
            }
        case .failure(let error):
            // A lost connection is reported once, by didClose: the pool retries its streams then.
            if error.reason == .connectionClosed { return }
            let processed = error.wasProcessed ? "may have been processed" : "was not processed"
            outcome = .retryable(.unavailable("APNs ended the stream (\(error.reason), code \(error.errorCode)); it \(processed)"))
        }
        shard?.handle(.streamCompleted(self.id, push, outcome))
    }

    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {
        shard?.handle(.maxConcurrentStreamsChanged(id, Int(value)))
    }

    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32,
                    debugData: [UInt8], refused: [UInt64]) {
        // Streams above last_stream_id were never processed: the pool moves them without using a retry.
        goAwayLastStreamID = min(goAwayLastStreamID, lastStreamID)
        shard?.handle(.goAwayReceived(id, unprocessed: refused.map(PushID.init)))
    }

    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {
        pingTimeoutTimer?.cancel()
        pingTimeoutTimer = nil
        lastActivity = .now
    }

    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        cancelTimers()
        if case .ended = phase { return }
        phase = .ended
        observer?.connectionClosed(environment: environment, connection: number, error: error.map { "\($0)" })
        // Streams still open when a connection dies may have reached Apple; the pool retries them
        // anyway: a duplicate notification beats a lost one.
        shard?.handle(error == nil ? .connectionClosed(id) : .connectionFailed(id))
    }
}
