import Transport
internal import Encoders

/// Why a connection to Apple could not be made, in words that say what to check: the pushes
/// that could not go out carry it, so "APNs is unreachable" always comes with its cause.
enum ConnectFailure {
    /// One of: refused, DNS, untrusted certificate (naming the CA setting), no h2 in ALPN,
    /// handshake or connect timeout; anything else as Transport said it.
    /// - Parameter hostSetting: the variable (or flag) that chose the host; nil for Apple's default.
    static func explain(_ error: TransportError, endpoint: APNsEndpoint, caSetting: String?,
                        hostSetting: String? = nil) -> String {
        let text = error.message
        let lower = text.lowercased()
        // Literal text, byte by byte with the standard library: contains(_:) with a string would
        // link _StringProcessing, a regex engine of 2 MB the relay never runs.
        func mentions(_ words: String) -> Bool { lower.utf8.indices.contains { lower.utf8[$0...].starts(with: words.utf8) } }
        let target = "\(endpoint.host):\(endpoint.port)"
        let checkHost = hostSetting.map { "check \($0)" } ?? "the host is Apple's default; check the network"
        if error.code == .timedOut {
            return mentions("handshake") || mentions("tls")
                ? "TLS handshake timeout with \(target): it accepted the connection but never completed TLS (\(text))"
                : "timeout connecting to \(target) (\(text))"
        }
        if mentions("refused") {
            return "connection refused by \(target): nothing listens there; \(checkHost) (\(text))"
        }
        if mentions("host not found") || mentions("resolve") || mentions("getaddrinfo")
            || mentions("name or service") {
            return "DNS: cannot resolve \(endpoint.host); \(checkHost) and the resolver (\(text))"
        }
        if mentions("certificate verification failed") || mentions("not valid for") {
            let fix = caSetting.map { "the CA in \($0) did not sign it" }
                ?? "set APNS_CA_FILE (or APNS_CA) to the CA that signed it, e.g. the emulator's"
            return "untrusted certificate from \(target): \(fix) (\(text))"
        }
        if mentions("alpn") {
            return "no h2 in ALPN from \(target): it is not an HTTP/2 (APNs) server (\(text))"
        }
        return "cannot connect to \(target): \(error)"
    }
}
