/// The pool's pushes: queueing, placing on connections, retries and endings.
extension PoolStateMachine {
    mutating func enqueue(_ push: Push, now: Instant, into actions: inout [Action]) {
        // The owner's ids are unique; a reused one ends at once so both callers still get one answer.
        guard pushes[push.id] == nil else {
            actions.append(.failPush(push.request, .unavailable("push id \(push.id) is already in the pool; try again")))
            return
        }
        if isShuttingDown {
            actions.append(.failPush(push.request, .shuttingDown("the APNs pool is shutting down; send the push to another instance")))
            return
        }
        guard now < push.deadline else {
            actions.append(.failPush(push.request, .timeout("the push's deadline had passed before it was queued")))
            return
        }
        // A free stream means the queue is empty (dispatch drains it), so the push goes out at once.
        if queuedCount >= configuration.queueCapacity, bestConnection(for: nil) == nil {
            actions.append(.failPush(push.request, .overloaded("the APNs queue is full (\(configuration.queueCapacity) pushes); try again later")))
            return
        }
        pushes[push.id] = push
        queue.append(push.id)
        queuedCount += 1
    }

    /// A handed-off retry queues like any retry: before new pushes, and past the capacity (the
    /// machine it left gave its place up, so the owner's total stays bounded). It keeps its
    /// retries, its token retry and Apple's last answer; where it went in the other machine
    /// means nothing here.
    mutating func adopt(_ push: Push, now: Instant, into actions: inout [Action]) {
        guard pushes[push.id] == nil else {
            actions.append(Self.ending(push, .failure(.unavailable("push id \(push.id) is already in the pool; try again"))))
            return
        }
        if isShuttingDown {
            actions.append(Self.ending(push, .failure(.shuttingDown("the APNs pool is shutting down; the push was not sent"))))
            return
        }
        guard now < push.deadline else {
            actions.append(Self.ending(push, .failure(.timeout("the push's deadline passed while retrying"))))
            return
        }
        var adopted = push
        adopted.state = .queued
        adopted.lastConnection = nil
        adopted.lossCountedOn = nil
        adopted.notBefore = nil
        pushes[push.id] = adopted
        retryQueue.append(push.id)
        queuedCount += 1
    }

    /// The action that ends `push`: a failure gives way to Apple's last answer to a retried
    /// attempt, which stands when no later attempt got one.
    static func ending(_ push: Push, _ result: Result<APNsResponse, APNsError>) -> Action {
        switch result {
        case .success(let response):
            return .completePush(push.request, response)
        case .failure(let error):
            if let answer = push.lastAnswer { return .completePush(push.request, answer) }
            return .failPush(push.request, error)
        }
    }

    /// Ends a live push exactly once: removes its record and emits its answer.
    mutating func end(_ id: PushID, with result: Result<APNsResponse, APNsError>, into actions: inout [Action]) {
        guard let push = pushes.removeValue(forKey: id) else { return }
        if push.state == .queued { queuedCount -= 1 }
        // An in-flight stream keeps its slot in `streams` until Apple answers or the connection goes.
        actions.append(Self.ending(push, result))
    }

    /// Puts a push back for another attempt, or fails it when retries, deadline or shutdown forbid.
    /// `delayed`: an answer from Apple, retried after `retryDelay` × the attempt, never past the deadline.
    /// `staysOnConnection`: the retry prefers `c` itself, where any other retry prefers another.
    mutating func retryOrFail(_ id: PushID, _ error: APNsError, from c: ConnectionID, counts: Bool,
                              delayed: Bool = false, staysOnConnection: Bool = false, now: Instant,
                              into actions: inout [Action]) {
        guard var push = pushes[id] else { return }
        if isShuttingDown {
            end(id, with: .failure(error), into: &actions)
            return
        }
        if counts && push.retries >= configuration.maxRetries {
            let message = "\(error.message) (after \(push.retries + 1) attempts)"
            end(id, with: .failure(APNsError(code: error.code, message: message)), into: &actions)
            return
        }
        if now >= push.deadline {
            end(id, with: .failure(.timeout("the push's deadline passed while retrying: \(error.message)")), into: &actions)
            return
        }
        if counts { push.retries += 1 }
        let delay = delayed ? configuration.retryDelay * push.retries : .zero
        if delay > .zero, now + delay >= push.deadline {
            end(id, with: .failure(.timeout("the next retry would come after the push's deadline: \(error.message)")),
                into: &actions)
            return
        }
        push.lossCountedOn = nil
        push.state = .queued
        push.lastConnection = staysOnConnection ? .prefer(c) : .avoid(c)
        queuedCount += 1
        if delay > .zero {
            push.notBefore = now + delay
            pushes[id] = push
            delayedRetries.append(id)
            actions.append(.wakeUp(after: delay))
        } else {
            pushes[id] = push
            retryQueue.append(id)
        }
    }

    /// Moves the delayed retries whose time has come to the retry queue.
    mutating func releaseDelayedRetries(now: Instant) {
        var waiting: [PushID] = []
        for id in delayedRetries {
            guard let push = pushes[id], push.state == .queued else { continue }
            if let at = push.notBefore, at > now { waiting.append(id); continue }
            pushes[id]!.notBefore = nil
            retryQueue.append(id)
        }
        delayedRetries = waiting
    }

    /// Sends waiting pushes while some connection has a free stream.
    mutating func dispatch(now: Instant, into actions: inout [Action]) {
        if !delayedRetries.isEmpty { releaseDelayedRetries(now: now) }
        while let (id, push, fromRetry) = peekQueued() {
            if now >= push.deadline {
                popQueued(fromRetry: fromRetry)
                end(id, with: .failure(.timeout("the push's deadline passed while it waited for a free stream")), into: &actions)
                continue
            }
            if configuration.handsOffRetries, case .avoid(let last)? = push.lastConnection,
               (bestConnection(for: push) ?? last) == last {
                // Only the connection it failed on, or none, could take it here: another machine's may.
                popQueued(fromRetry: fromRetry)
                pushes[id] = nil
                queuedCount -= 1
                actions.append(.handOff(push))
                continue
            }
            guard let c = bestConnection(for: push) else { return }
            popQueued(fromRetry: fromRetry)
            place(id, push, on: c, now: now, into: &actions)
        }
    }

    mutating func place(_ id: PushID, _ push: Push, on c: ConnectionID, now: Instant, into actions: inout [Action]) {
        var push = push
        let isRetry = push.sent
        push.state = .inFlight(c)
        push.sent = true
        pushes[id] = push
        queuedCount -= 1
        // One lookup, and the connection changed where it is stored (see `streamCompleted`).
        let index = connections.index(forKey: c)!
        let streamsOpened = connections.values[index].openStream(id)
        actions.append(.send(push.request, on: c, isRetry: isRetry))
        if streamsOpened >= configuration.maxStreamsPerConnection {
            // Its stream ids would run out: drain it while its replacement opens. Planned, so
            // its slot does not back off even when a low budget makes it short-lived.
            retire(c, planned: true, now: now, into: &actions)
        }
    }

    /// The next push that is really still queued, skipping entries left by ended or moved pushes;
    /// with the push itself, found in the same lookup.
    mutating func peekQueued() -> (PushID, Push, Bool)? {
        while retryHead < retryQueue.count {
            let id = retryQueue[retryHead]
            if let push = pushes[id], push.state == .queued { return (id, push, true) }
            retryHead += 1
        }
        if retryHead > 0 { retryQueue.removeAll(keepingCapacity: true); retryHead = 0 }
        while queueHead < queue.count {
            let id = queue[queueHead]
            if let push = pushes[id], push.state == .queued { return (id, push, false) }
            queueHead += 1
        }
        if queueHead > 0 { queue.removeAll(keepingCapacity: true); queueHead = 0 }
        return nil
    }

    mutating func popQueued(fromRetry: Bool) {
        if fromRetry { retryHead += 1 } else { queueHead += 1 }
        // Compact now and then so skipped entries cannot pile up (the queue stays bounded).
        if queueHead > 64, queueHead * 2 > queue.count {
            queue.removeFirst(queueHead)
            queueHead = 0
        }
        if retryHead > 64, retryHead * 2 > retryQueue.count {
            retryQueue.removeFirst(retryHead)
            retryHead = 0
        }
    }

    /// The ready connection with room and the lightest load: the fewest open streams relative
    /// to its limit, then the fewest streams so far, then the lowest id. So a new connection
    /// (limit 1 until its first answer) gets that first stream instead of the busiest one taking
    /// everything, and light traffic takes turns. A retry prefers a connection other than its
    /// last one, but takes that one rather than wait when it alone has room; one that stays on
    /// its connection takes it whenever it has room.
    func bestConnection(for push: Push?) -> ConnectionID? {
        var avoided: ConnectionID?
        switch push?.lastConnection {
        case .prefer(let c)?:
            if let connection = connections[c], connection.free > 0 { return c }
        case .avoid(let c)?:
            avoided = c
        case nil:
            break
        }
        var best: (id: ConnectionID, open: Int, limit: Int, opened: Int)?
        var fallback: ConnectionID?
        for index in connections.values.indices {
            let id = connections.keys[index], connection = connections.values[index]
            guard connection.free > 0 else { continue }
            if id == avoided { fallback = id; continue }
            let open = connection.streams.count, limit = connection.limit
            if let current = best {
                // open / limit against current.open / current.limit, without division.
                let mine = open * current.limit, theirs = current.open * limit
                if mine > theirs { continue }
                if mine == theirs, (connection.streamsOpened, id) > (current.opened, current.id) { continue }
            }
            best = (id, open, limit, connection.streamsOpened)
        }
        return best?.id ?? fallback
    }

    // MARK: Streams

    mutating func streamCompleted(_ c: ConnectionID, _ id: PushID, _ outcome: StreamOutcome,
                                  now: Instant, into actions: inout [Action]) {
        if case .notSent(let error) = outcome { return notSent(c, id, error, now: now, into: &actions) }
        // Changed where it is stored: a copy taken out and written back shared its `streams`
        // with the stored one, so removing the stream copied the whole table, once per answer.
        guard let index = connections.index(forKey: c),
              let draining = connections.values[index].endStream(id, answered: outcome.answered) else { return }

        // The push may have ended already (deadline); the stream's answer then only frees the slot.
        if let push = pushes[id], push.state == .inFlight(c) {
            switch outcome {
            case .final(let response) where response.status == 429 && response.reason != .tooManyProviderTokenUpdates
                && configuration.retriesTooManyRequests:
                pushes[id]!.lastAnswer = response
                retryOrFail(id, .unavailable("APNs answered 429 TooManyRequests; try again later"), from: c, counts: true,
                            delayed: true, now: now, into: &actions)
            case .success(let response), .final(let response):
                end(id, with: .success(response), into: &actions)
            case .retryable(let error):
                retryOrFail(id, error, from: c, counts: true, now: now, into: &actions)
            case .retryableAnswer(let response):
                pushes[id]!.lastAnswer = response
                retryOrFail(id, StreamOutcome.unavailable(response), from: c, counts: true, delayed: true,
                            now: now, into: &actions)
            case .expiredProviderToken(let response):
                if push.tokenRetried {
                    end(id, with: .success(response), into: &actions)
                } else {
                    // The token is a request header: the retry goes out with the newer one, on
                    // this connection (another only when this one has no room), and uses no retry.
                    pushes[id]!.tokenRetried = true
                    retryOrFail(id, .unavailable("APNs said the provider token expired"), from: c, counts: false,
                                staysOnConnection: true, now: now, into: &actions)
                }
            case .notSent, .late:
                break
            }
        }

        // No answer retires a connection: the provider token is shared and a request header.
        if draining { closeIfDrained(c, into: &actions) }
    }

    /// The push never reached the wire: requeue it as if untried, and stop using the connection
    /// (closing, going away or out of stream ids, it can only refuse the next one too).
    mutating func notSent(_ c: ConnectionID, _ id: PushID, _ error: APNsError, now: Instant, into actions: inout [Action]) {
        if let push = pushes[id] {
            if push.state == .inFlight(c), connections[c]?.streams.removeValue(forKey: id) != nil {
                retryOrFail(id, error, from: c, counts: false, now: now, into: &actions)
            } else if push.lossCountedOn == c {
                // Its connection was lost before the push reached it: that retry was not used.
                pushes[id]!.retries -= 1
                pushes[id]!.lossCountedOn = nil
            }
        } else {
            connections[c]?.streams[id] = nil
        }
        retire(c, now: now, into: &actions)
    }
}
