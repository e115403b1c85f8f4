import OpenSSLSupport

extension TLSSession {
    /// Every ciphertext byte waiting to be sent, taken out of the session (the tests' way;
    /// the channel sends from raw memory of its own).
    func takeAllCiphertext() -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: 16) { chunk in
            while true {
                let got = takeCiphertext(into: chunk)
                bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
                if got < chunk.count { return }
            }
        }
        return bytes
    }
}

/// Moves every pending ciphertext byte from one session into the other; returns how many.
@discardableResult
func transfer(from source: TLSSession, to destination: TLSSession) -> Int {
    let bytes = source.takeAllCiphertext()
    bytes.withUnsafeBytes { destination.feed($0) }
    return bytes.count
}

/// Where one side's handshake ended: still running, established, or failed.
enum Side {
    case running
    case established
    case failed(TLSError)

    var error: TLSError? {
        if case .failed(let error) = self { return error }
        return nil
    }
    var isRunning: Bool {
        if case .running = self { return true }
        return false
    }
    var isEstablished: Bool {
        if case .established = self { return true }
        return false
    }
}

/// Runs a client and a server handshake against each other in memory, for a bounded
/// number of rounds, and reports how each side ended.
func runHandshake(client: TLSSession, server: TLSSession, rounds: Int = 50) -> (client: Side, server: Side) {
    var clientSide = Side.running
    var serverSide = Side.running
    func step(_ session: TLSSession, _ side: inout Side) {
        guard case .running = side else { return }
        do {
            if try session.handshake() { side = .established }
        } catch let error as TLSError {
            side = .failed(error)
        } catch {
            side = .failed(TLSError(.handshakeFailed, "unexpected error \(error)"))
        }
    }
    for _ in 0..<rounds {
        step(client, &clientSide)
        let sent = transfer(from: client, to: server)
        step(server, &serverSide)
        let received = transfer(from: server, to: client)
        let bothDone = !clientSide.isRunning && !serverSide.isRunning
        if bothDone || (sent == 0 && received == 0) { break }  // finished, or stuck for good
    }
    return (clientSide, serverSide)
}

/// Reads from `session` until `count` bytes arrived, feeding it from `peer` as needed.
func receive(_ count: Int, on session: TLSSession, from peer: TLSSession, rounds: Int = 1_000) throws -> [UInt8] {
    var received: [UInt8] = []
    for _ in 0..<rounds where received.count < count {
        transfer(from: peer, to: session)
        _ = try session.readPlaintext(into: &received)
        transfer(from: session, to: peer)  // TLS 1.3 may answer (key updates, tickets)
    }
    return received
}
