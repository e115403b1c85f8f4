import EventLoop
import HTTP2
import Transport

/// One connection to Apple: carries out the pool's `.send`s with the client's one provider token
/// (`APNsCredentials`, shared by every connection) and reports every stream's end, GOAWAY, limit
/// change and close back as pool events.
///
/// Not `Sendable`: every mutable member is touched on `loop` alone, its shard's loop (the shard
/// calls it there, directly or through a `LoopBound` carried into `loop.execute`).
final class APNsConnection: HTTP2ClientConnectionDelegate {
    let id: ConnectionID
    let loop: EventLoop
    private weak var pool: APNsPoolShard?
    private let environment: APNsEnvironment
    private let configuration: APNsClientConfiguration
    private let endpoint: APNsEndpoint
    private let observer: (any APNsClientObserver)?
    private let unixTime: @Sendable () -> Int64

    /// The HTTP/2 connection once connected (read by the test seams).
    private(set) var h2: HTTP2ClientConnection?
    private var phase = Phase.connecting(startedAt: .now, tcpDone: false)
    /// The shared token's generation and `iat` that `sharedHeaders` carries (0: none yet).
    private var tokenGeneration: UInt64 = 0
    private var tokenIssuedAt: Int64 = 0
    private var streams: [Int32: InFlight] = [:]
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

    init(id: ConnectionID, loop: EventLoop, shard pool: APNsPoolShard) {
        self.id = id
        self.loop = loop
        self.pool = pool
        self.environment = pool.environment
        self.configuration = pool.configuration
        self.endpoint = pool.endpoint
        self.observer = pool.observer
        self.unixTime = pool.unixTime
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

    /// A stream's push, by id: its record (and notification) stays with the shard's machine.
    private struct InFlight {
        let push: PushID
        /// The push's deadline, for the one deadline timer (the stream outlives an ended push).
        let deadline: MonotonicInstant
        /// The provider token it went out with, so Apple's ExpiredProviderToken names the token.
        let tokenGeneration: UInt64
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
                pool?.lastConnectFailure = APNsConnectFailure(error, endpoint: endpoint, caSetting: configuration.caSetting,
                                                              hostSetting: hostSetting)
                pool?.handle(.connectionFailed(id))
            case .success(let connection):
                h2 = connection
                if case .closing = phase { connection.close(); return }
                phase = .open
                pool?.lastConnectFailure = nil
                observer?.connectionOpened(environment: environment, connection: number)
                pool?.handle(.connectionEstablished(id))
                pool?.handle(.maxConcurrentStreamsChanged(id, Int(connection.remoteMaxConcurrentStreams)))
                armPing()
            }
        }
    }

    func send(_ push: PushID, _ notification: APNsNotification, deadline: MonotonicInstant) {
        guard let h2, !h2.isClosed, case .open = phase else {
            pool?.handle(.streamCompleted(id, push, .notSent(.unavailable("the connection to APNs closed before the push went out"))))
            return
        }
        do {
            try refreshTokenIfChanged()
        } catch {
            // Unreachable once the client started: it signed the first token, and a renewal that
            // fails keeps the current one.
            pool?.handle(.streamCompleted(id, push, .retryable(error)))
            return
        }
        // Filled as a local taken out of the member (storage and all) and put back after: each
        // field appended to the member itself was an exclusivity check.
        var headers = HTTP2HeaderBlock()
        swap(&headers, &requestHeaders)
        defer { swap(&headers, &requestHeaders) }
        headers.removeAll()
        // Not checked again (`checked: false`): the names are constants, and the notification
        // held every value to HTTP/2's rules when it was made (a visible-ASCII topic, a collapse
        // id without control bytes; digits, a UUID and the token's hex besides). The block's
        // check of each field was about 1,500 instructions per push.
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
            stream = try h2.submitRequest(headers, shared: sharedHeaders, body: notification.payload)
        } catch let error as HTTP2Error where Self.neverSent.contains(error.code) {
            // Closing, going away or out of stream ids: nothing left us, so no retry is used,
            // and the pool stops choosing this connection.
            pool?.handle(.streamCompleted(id, push, .notSent(.unavailable("APNs connection \(number) cannot open streams: \(error.message)"))))
            return
        } catch {
            pool?.handle(.streamCompleted(id, push, .retryable(.unavailable("could not open a stream to APNs: \(error)"))))
            return
        }
        streams[stream] = InFlight(push: push, deadline: deadline, tokenGeneration: tokenGeneration)
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
        let policy = configuration.tokenPolicy
        let now = unixTime()
        if tokenGeneration != 0, credentials.generation == tokenGeneration,
           !policy.needsRenewal(now: now, issuedAt: tokenIssuedAt) { return }
        let current = try credentials.current(now: now, policy: policy)
        if let reason = current.signed { observer?.providerTokenSigned(environment: environment, reason: reason) }
        guard current.generation != tokenGeneration else { return }
        tokenGeneration = current.generation
        tokenIssuedAt = current.token.issuedAt
        HTTP2ClientSession.startShared(&sharedHeaders, authority: h2?.authority ?? endpoint.host)
        sharedHeaders.append("authorization", current.token.authorization)
    }

    /// Makes sure the deadline timer comes due by `deadline`. One timer serves every stream:
    /// pushes share a timeout, so a later push's deadline is almost never earlier than the one
    /// the timer waits for, and the common push arms nothing (a timer per push was two
    /// allocations and a heap entry, cancelled milliseconds later when Apple answered).
    private func armDeadline(_ deadline: MonotonicInstant) {
        if let due = deadlineTimerDue, due <= deadline { return }
        deadlineTimer?.cancel()
        deadlineTimerDue = deadline
        deadlineTimer = loop.schedule(after: deadline - .now) { [weak self] in self?.deadlinesDue() }
    }

    /// Every stream whose deadline has come: the push ends now (`.timeout`, or Apple's last
    /// answer to an earlier attempt) and the stream is reset, so Apple's late answer cannot arrive. Then the timer waits for the next deadline.
    private func deadlinesDue() {
        deadlineTimer = nil
        deadlineTimerDue = nil
        let now = MonotonicInstant.now
        var due: [(stream: Int32, push: PushID)] = []
        var next: MonotonicInstant?
        for (stream, entry) in streams {
            if entry.deadline <= now {
                due.append((stream, entry.push))
            } else if next.map({ entry.deadline < $0 }) ?? true {
                next = entry.deadline
            }
        }
        // In the order they were sent, as a timer per push would have fired them.
        due.sort { $0.stream < $1.stream }
        for (stream, push) in due {
            pool?.handle(.deadlinePassed(push))
            h2?.cancel(stream: stream)
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

    /// The stream's push, once: a stream that ends leaves nothing behind (the deadline timer
    /// finds no entry for it and waits for the next deadline still open, if any).
    private func forget(stream: Int32) -> InFlight? {
        streams.removeValue(forKey: stream)
    }

    // MARK: HTTP2ClientConnectionDelegate

    func connection(_ connection: HTTP2ClientConnection, stream id: Int32, didComplete result: Result<HTTP2Response, HTTP2StreamError>) {
        lastActivity = .now
        guard let entry = forget(stream: id) else { return }
        let push = entry.push
        guard let notification = pool?.notification(of: push) else {
            // The push ended already (its deadline): the stream's end only frees its slot. Its
            // answer is not read, so a late ExpiredProviderToken signs nothing: the next push's
            // own 403 does, one push later.
            if case .failure(let error) = result, error.reason == .connectionClosed { return }
            pool?.handle(.streamCompleted(self.id, push, .late(answered: (try? result.get()) != nil)))
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
               !(configuration.credentials?.refusedAsExpired(generation: entry.tokenGeneration, now: unixTime(),
                                                             policy: configuration.tokenPolicy) ?? false) {
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
        pool?.handle(.streamCompleted(self.id, push, outcome))
    }

    func connection(_ connection: HTTP2ClientConnection, didUpdateMaxConcurrentStreams value: UInt32) {
        pool?.handle(.maxConcurrentStreamsChanged(id, Int(value)))
    }

    func connection(_ connection: HTTP2ClientConnection, didReceiveGoAway lastStreamID: Int32, errorCode: UInt32, debugData: [UInt8]) {
        // Streams above last_stream_id were never processed: the pool moves them without using a retry.
        var unprocessed: [PushID] = []
        for stream in streams.keys.sorted() where stream > lastStreamID {
            if let entry = forget(stream: stream) { unprocessed.append(entry.push) }
        }
        pool?.handle(.goAwayReceived(id, unprocessed: unprocessed))
    }

    func connectionDidReceivePingAck(_ connection: HTTP2ClientConnection) {
        pingTimeoutTimer?.cancel()
        pingTimeoutTimer = nil
        lastActivity = .now
    }

    func connection(_ connection: HTTP2ClientConnection, didClose error: TransportError?) {
        cancelTimers()
        streams.removeAll()
        if case .ended = phase { return }
        phase = .ended
        observer?.connectionClosed(environment: environment, connection: number, error: error.map { "\($0)" })
        // Streams still open when a connection dies may have reached Apple; the pool retries them
        // anyway: a duplicate notification beats a lost one.
        pool?.handle(error == nil ? .connectionClosed(id) : .connectionFailed(id))
    }
}
