import Dispatch
import CertificateSupport

/// Every way Apple goes out of reach, for the tests and `apns-mock` of a client that must ride
/// it out. Each takes effect before the call returns; a `duration` ends it by itself (a later
/// call of the same kind replaces a pending end), nil leaves it until told otherwise.
///
/// | outage | a client sees | ends with |
/// | --- | --- | --- |
/// | `takeAway` | its connections cut; a connect refused (the port kept bound, not listening) | `bringBack` |
/// | `goSilent` | its connections cut; a connect accepted, then nothing: the TLS handshake waits for the client's timeout | `bringBack` |
/// | `presentCertificate` | its connections cut; a new one gets a server certificate from another CA (Apple moved APNs to a new root in 2025), refused by a client that does not trust that CA | `presentOwnCertificate` |
/// | `answerUnavailable` | connections kept; every push answered 503 `{"reason":"ServiceUnavailable"}` | `answerNormally` |
///
/// Reach (`takeAway`, `goSilent`, `bringBack`), certificate and answers are independent: the
/// certificate in force is the one presented when the emulator comes back.
extension MockAPNsServer {
    /// Apple out of reach: stops listening, keeping the port bound so a connect is refused at
    /// once, and cuts every open connection (no GOAWAY, no close_notify). Comes back after
    /// `duration`, or at `bringBack`.
    public func takeAway(for duration: Duration? = nil) {
        guard let generation = try? listener.become(.away) else { return }
        dropAllConnections()
        if let duration { listener.serve(after: duration, ifGeneration: generation) }
    }

    /// Apple's address answering TCP and nothing more: connects are accepted (counted in
    /// `silentConnectionCount`) and never spoken to, so a client's TLS handshake hangs until its
    /// own timeout; open connections are cut. Comes back after `duration`, or at `bringBack`,
    /// which closes the connections held silent.
    public func goSilent(for duration: Duration? = nil) throws {
        let generation = try listener.become(.silent)
        dropAllConnections()
        if let duration { listener.serve(after: duration, ifGeneration: generation) }
    }

    /// Serves again on the same port, after `takeAway`, `goSilent`, `refuseConnections` or
    /// `stop`, with the certificate presented now.
    public func bringBack() throws {
        try listener.become(.serving)
    }

    /// Whether the emulator serves now (false while taken away, silent, refusing or stopped).
    public var isServing: Bool { listener.reach == .serving }

    /// Connections accepted while silent, since start.
    public var silentConnectionCount: Int { shared.silentConnectionCount.load(ordering: .relaxed) }

    /// Presents `certificates`' server certificate to every new connection and cuts the open
    /// ones (which were made with the old one), as when Apple moved to another root CA: a
    /// client trusting only the old CA fails the handshake, one given `certificates.caPEM` (as an
    /// operator would, e.g. `APNS_CA_FILE` and SIGHUP) connects. Make them with another
    /// `caName`, as a new root has (`TestCertificates.make(caName:)`). Client certificates are
    /// still judged against the emulator's own CA (`certificates`).
    public func presentCertificate(_ certificates: TestCertificates) throws {
        try listener.present(certificates)
        dropAllConnections()
    }

    /// Back to the emulator's own certificate (signed by `caPEM`), cutting the open connections.
    public func presentOwnCertificate() throws {
        try presentCertificate(certificates)
    }

    /// The certificates whose server certificate new connections get now.
    public var presentedCertificates: TestCertificates { listener.presented }

    /// Answers every push that passes the checks 503 `{"reason":"ServiceUnavailable"}`
    /// (`MockFaults.everyPush`), connections kept, for `duration` or until `answerNormally`.
    public func answerUnavailable(for duration: Duration? = nil) {
        var bumped = 0
        rules.updateFaults { faults in
            bumped = shared.answerGeneration.add(1, ordering: .relaxed).newValue
            faults.everyPush = .serviceUnavailable
        }
        guard let duration else { return }
        let generation = bumped
        DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(MockListener.nanoseconds(duration))) { [weak self] in
            guard let self else { return }
            // Checked under the faults' lock, where `answerUnavailable` sets it: a later call wins.
            self.rules.updateFaults { faults in
                if self.shared.answerGeneration.load(ordering: .relaxed) == generation { faults.everyPush = nil }
            }
        }
    }

    /// Ends `answerUnavailable` (clears `MockFaults.everyPush`).
    public func answerNormally() {
        rules.updateFaults { faults in
            shared.answerGeneration.add(1, ordering: .relaxed)
            faults.everyPush = nil
        }
    }
}
