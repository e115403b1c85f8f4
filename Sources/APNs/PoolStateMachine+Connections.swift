/// The pool's connections and time: opening, backoff, retiring, GOAWAY, losses, stalls, shutdown.
extension PoolStateMachine {

    mutating func open(slot index: Int, now: Instant, into actions: inout [Action]) {
        let id = ConnectionID(UInt64(configuration.shard) + 1 + opened * UInt64(configuration.shards))
        opened += 1
        connections[id] = Connection(state: .connecting, slot: index)
        slots[index].connection = id
        slots[index].reconnectAt = nil
        slots[index].lastConnectAt = now
        actions.append(.createConnection(id))
    }

    /// Exponential backoff with jitter: half the delay fixed, half random, so reconnects of
    /// many relays after an Apple outage spread out.
    mutating func backoffDelay(failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        var delay = configuration.backoffBase * (1 << exponent)
        if delay > configuration.backoffMax { delay = configuration.backoffMax }
        // 53 random bits as a fraction in [0, 1): no rejection loop, so any injected source works.
        let jitter = Double(random.next() >> 11) / Double(UInt64(1) << 53)
        return delay / 2 + (delay / 2) * jitter
    }

    /// Gives a slot whose connection ended its next one. At once when the old connection carried
    /// work (Apple answered on it, or took streams before its GOAWAY), whatever ended it, or when
    /// we retired it as `planned` (its stream budget); after the exponential backoff when it
    /// failed to connect or ended without carrying work, growing with each such connection in a
    /// row; and never sooner than `minimumConnectInterval` after the slot's last connect, so no
    /// mix of events can make a slot connect in a loop.
    mutating func replace(slot index: Int, carriedWork: Bool, planned: Bool = false, id c: ConnectionID,
                                  now: Instant, into actions: inout [Action]) {
        slots[index].connection = nil
        guard !isShuttingDown else { return }
        var delay = Duration.zero
        if carriedWork {
            slots[index].failures = 0
        } else if !planned {
            slots[index].failures += 1
            delay = backoffDelay(failures: slots[index].failures)
        }
        if let last = slots[index].lastConnectAt {
            delay = max(delay, last + configuration.minimumConnectInterval - now)
        }
        guard delay > .zero else {
            open(slot: index, now: now, into: &actions)
            return
        }
        slots[index].reconnectAt = now + delay
        actions.append(.scheduleReconnect(c, after: delay))
    }

    /// Takes a connection out of service: no new streams, a replacement for its slot (at once or
    /// after backoff, see `replace`), and a close once its streams have finished. `tookStreams`:
    /// Apple kept streams of it (a GOAWAY's last_stream_id), which counts as carrying work.
    mutating func retire(_ c: ConnectionID, planned: Bool = false, tookStreams: Bool = false, now: Instant,
                                 into actions: inout [Action]) {
        guard var connection = connections[c] else { return }
        let slot = connection.slot
        connection.state = .draining
        connection.slot = nil
        connections[c] = connection
        if let slot {
            replace(slot: slot, carriedWork: connection.answered || tookStreams, planned: planned, id: c, now: now, into: &actions)
        }
        closeIfDrained(c, into: &actions)
    }

    mutating func closeIfDrained(_ c: ConnectionID, into actions: inout [Action]) {
        guard let connection = connections[c], connection.state == .draining, connection.streams.isEmpty else { return }
        connections[c] = nil
        actions.append(.closeConnection(c))
    }

    mutating func goAway(_ c: ConnectionID, unprocessed: [PushID], now: Instant, into actions: inout [Action]) {
        guard var connection = connections[c] else { return }
        for id in unprocessed where connection.streams.removeValue(forKey: id) != nil {
            if pushes[id]?.state == .inFlight(c) {
                // Apple never saw these: another connection may take them without using a retry.
                connections[c] = connection
                retryOrFail(id, .unavailable("APNs sent GOAWAY before processing the push"), from: c, counts: false,
                            now: now, into: &actions)
            }
        }
        connections[c] = connection
        // Streams left after removing the unprocessed ones are at or below last_stream_id: Apple
        // took them, so the connection carried work, like one Apple answered on, and its
        // replacement opens at once (Apple recycles healthy connections with a graceful GOAWAY,
        // often before its answers). Only a GOAWAY that took nothing, on a connection never
        // answered, looks like one that cannot work: its slot backs off.
        retire(c, tookStreams: !connection.streams.isEmpty, now: now, into: &actions)
    }

    /// The connection is gone (a failed connect, or a close): its open streams are retried
    /// elsewhere, its slot reconnects.
    mutating func lose(_ c: ConnectionID, now: Instant, into actions: inout [Action]) {
        guard let connection = connections.removeValue(forKey: c) else { return }
        lostStreams(of: connection, c, "the connection to APNs was lost", now: now, into: &actions)
        guard let slot = connection.slot else { return }
        replace(slot: slot, carriedWork: connection.answered, id: c, now: now, into: &actions)
    }

    /// Retries the pushes on a connection that is gone; each uses a retry, given back if the
    /// connection later says the push never left (`.notSent`).
    mutating func lostStreams(of connection: Connection, _ c: ConnectionID, _ why: String,
                                      now: Instant, into actions: inout [Action]) {
        for id in connection.streams.sortedKeys where pushes[id]?.state == .inFlight(c) {
            retryOrFail(id, .unavailable(why), from: c, counts: true, now: now, into: &actions)
            if pushes[id]?.state == .queued { pushes[id]!.lossCountedOn = c }
        }
    }

    /// When no connection is up or coming up before a queued push's deadline (every slot in
    /// backoff past it), fail it now with `unavailable` (the sender retries) instead of holding
    /// it until it times out. A push enqueued then is answered at once. Before any connection
    /// was ever established (a wrong host, nothing listening, an untrusted certificate), every
    /// slot's failed connect fails the waiting pushes at once, whatever their deadline: the
    /// owner adds why the connect failed.
    mutating func failHopeless(now: Instant, into actions: inout [Action]) {
        guard started, !isShuttingDown, queuedCount > 0 else { return }
        guard !connections.values.contains(where: { $0.state != .draining }) else { return }
        guard let earliest = slots.compactMap(\.reconnectAt).min() else { return }
        let wait = Int(((earliest - now) / .seconds(1)).rounded(.up))
        for id in queuedIDs() where !everEstablished || pushes[id]!.deadline <= earliest {
            let error = everEstablished
                ? APNsError.unavailable(
                    "every connection to APNs is failing and the next attempt, in \(wait) s, comes after the push's deadline; try again later")
                : APNsError.unavailable("no connection to APNs could be made yet; the next attempt is in \(wait) s; try again later")
            end(id, with: .failure(error), into: &actions)
        }
    }

    func queuedIDs() -> [PushID] {
        var ids: [PushID] = []
        for id in retryQueue[retryHead...] where pushes[id]?.state == .queued { ids.append(id) }
        for id in queue[queueHead...] where pushes[id]?.state == .queued { ids.append(id) }
        for id in delayedRetries where pushes[id]?.state == .queued { ids.append(id) }
        // A push can sit in both lists only after a stale entry; report it once.
        var seen = Set<PushID>()
        return ids.filter { seen.insert($0).inserted }
    }

    // MARK: Time

    mutating func timerFired(now: Instant, into actions: inout [Action]) {
        if !isShuttingDown && started {
            for index in slots.indices where slots[index].connection == nil {
                if let at = slots[index].reconnectAt, at > now { continue }
                open(slot: index, now: now, into: &actions)
            }
        }
        for id in queuedIDs() where pushes[id]!.deadline <= now {
            end(id, with: .failure(.timeout("no free stream to APNs before the push's deadline")), into: &actions)
        }
        // A stream unanswered well past its deadline means Apple stopped answering on that connection.
        let stalled = connections.keys { connection in
            connection.streams.contains { id, stream in
                switch stream {
                case .pushLive: pushes[id].map { $0.deadline + configuration.stallGrace <= now } ?? false
                case .pushEnded(let at): at + configuration.stallGrace <= now
                }
            }
        }.sorted()
        for c in stalled {
            guard let connection = connections.removeValue(forKey: c) else { continue }
            actions.append(.closeConnection(c))
            lostStreams(of: connection, c, "the connection to APNs stalled", now: now, into: &actions)
            if let slot = connection.slot {
                replace(slot: slot, carriedWork: connection.answered, id: c, now: now, into: &actions)
            }
        }
    }

    mutating func shutdown(into actions: inout [Action]) {
        guard !isShuttingDown else { return }
        isShuttingDown = true
        for id in queuedIDs() {
            end(id, with: .failure(.shuttingDown("the APNs pool is shutting down; the push was not sent")), into: &actions)
        }
        for index in slots.indices {
            slots[index].connection = nil
            slots[index].reconnectAt = nil
        }
        for c in connections.keys.sorted() {
            connections[c]!.slot = nil
            connections[c]!.state = .draining
            closeIfDrained(c, into: &actions)
        }
    }
}
