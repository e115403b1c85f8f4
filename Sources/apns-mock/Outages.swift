// apns-mock's outages: Apple out of reach in each way MockAPNsServer can play it, begun and
// ended by signals (SIGUSR1, SIGUSR2) or by time (--outage-after, --outage-for), so a shell
// script drives them without a client library.
import Foundation
import CertificateSupport
import MockAPNs

/// One way Apple goes out of reach, as named by `--outage`.
enum OutageKind: String, CaseIterable {
    /// Connections cut, connects refused on the same port.
    case away
    /// Connects accepted, never a TLS byte back.
    case silent
    /// A server certificate from another CA (the one `--other-ca-out` writes), connections cut.
    case otherCA = "other-ca"
    /// Every push answered 503 ServiceUnavailable.
    case unavailable

    /// "away,unavailable" → [.away, .unavailable]; a word that is no outage fails with it.
    static func list(_ text: String) -> Result<[OutageKind], NotAnOutage> {
        var kinds: [OutageKind] = []
        for word in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kind = OutageKind(rawValue: String(word)) else { return .failure(NotAnOutage(word: String(word))) }
            kinds.append(kind)
        }
        return .success(kinds)
    }

    struct NotAnOutage: Error {
        let word: String
    }
}

/// Begins and ends the outages of `--outage` in turn. `@unchecked Sendable`: every call happens
/// on the main queue (the signal sources' and timers' queue), so no two overlap.
final class OutageDriver: @unchecked Sendable {
    private let server: MockAPNsServer
    private let kinds: [OutageKind]
    private let lasting: Int?
    private let otherCA: TestCertificates?
    private var next = 0
    private var current: OutageKind?
    /// Bumped by every begin and end, so a timer set for an outage since ended does nothing.
    private var generation = 0

    /// - Parameters:
    ///   - lasting: seconds an outage lasts before it ends by itself; nil: until `end`.
    ///   - otherCA: the certificates `other-ca` presents (needed when `kinds` holds it).
    init(server: MockAPNsServer, kinds: [OutageKind], lasting: Int?, otherCA: TestCertificates?) {
        self.server = server
        self.kinds = kinds
        self.lasting = lasting
        self.otherCA = otherCA
    }

    /// Ends the outage in force, if any, and begins the next of the list (after the last, the first).
    func beginNext(then: (@Sendable () -> Void)? = nil) {
        end()
        let kind = kinds[next % kinds.count]
        next += 1
        do {
            switch kind {
            case .away: server.takeAway()
            case .silent: try server.goSilent()
            case .otherCA: try server.presentCertificate(otherCA!)
            case .unavailable: server.answerUnavailable()
            }
        } catch {
            say("apns-mock: cannot begin outage \(kind.rawValue): \(error)", error: true)
            try? server.bringBack()
            return
        }
        current = kind
        generation += 1
        say("outage \(kind.rawValue) begins")
        guard let lasting else { return }
        let mine = generation
        DispatchQueue.main.asyncAfter(deadline: .now() + .seconds(lasting)) { [self] in
            guard generation == mine else { return }
            end()
            then?()
        }
    }

    /// Back to serving normally with the emulator's own certificate; nothing when no outage is in force.
    func end() {
        guard let kind = current else { return }
        current = nil
        generation += 1
        do {
            switch kind {
            case .away, .silent: try server.bringBack()
            case .otherCA: try server.presentOwnCertificate()
            case .unavailable: server.answerNormally()
            }
        } catch {
            say("apns-mock: cannot end outage \(kind.rawValue): \(error)", error: true)
            return
        }
        say("outage \(kind.rawValue) ends")
    }

    /// `--outage-after`: the first outage `after` seconds from now; with `--outage-for`, each next
    /// one `after` seconds after the previous ended, once through the list.
    func schedule(after: Int, remaining: Int? = nil) {
        let remaining = remaining ?? kinds.count
        guard remaining > 0 else { return }
        DispatchQueue.main.asyncAfter(deadline: .now() + .seconds(after)) { [self] in
            beginNext { [self] in schedule(after: after, remaining: remaining - 1) }
        }
    }

    private func say(_ line: String, error: Bool = false) {
        (error ? FileHandle.standardError : FileHandle.standardOutput).write(Data((line + "\n").utf8))
    }
}
