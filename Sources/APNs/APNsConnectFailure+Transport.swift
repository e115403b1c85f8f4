import Transport
import EventLoop
import OpenSSLSupport

extension APNsConnectFailure {
    /// What the operator must check after `error`, decided on the transport's cause (the socket's,
    /// TLS's or the step that timed out), never on its words: refused, DNS, untrusted certificate
    /// (naming the CA setting), no h2 in ALPN, TLS handshake or connect timeout, or anything else
    /// as Transport said it. The transport's own line ends the sentence, in parentheses.
    /// - Parameter hostSetting: the variable (or flag) that chose the host; nil for Apple's default.
    init(_ error: TransportError, endpoint: APNsEndpoint, caSetting: String?, hostSetting: String? = nil) {
        let code = Self.code(of: error)
        let text = error.detail
        let target = "\(endpoint.host):\(endpoint.port)"
        let checkHost = hostSetting.map { "check \($0)" } ?? "the host is Apple's default; check the network"
        let message: String
        switch code {
        case .tlsHandshakeTimeout:
            message = "TLS handshake timeout with \(target): it accepted the connection but never completed TLS (\(text))"
        case .connectTimeout:
            message = "timeout connecting to \(target) (\(text))"
        case .refused:
            message = "connection refused by \(target): nothing listens there; \(checkHost) (\(text))"
        case .hostNotFound:
            message = "DNS: cannot resolve \(endpoint.host); \(checkHost) and the resolver (\(text))"
        case .untrustedCertificate:
            let fix = caSetting.map { "the CA in \($0) did not sign it" }
                ?? "set APNS_CA_FILE (or APNS_CA) to the CA that signed it, e.g. the emulator's"
            message = "untrusted certificate from \(target): \(fix) (\(text))"
        case .noHTTP2:
            message = "no h2 in ALPN from \(target): it is not an HTTP/2 (APNs) server (\(text))"
        default:
            message = "cannot connect to \(target): \(error)"
        }
        self.init(code: code, message: message)
    }

    /// The kind of failure, from the cause's value alone.
    static func code(of error: TransportError) -> Code {
        switch error.cause {
        case .timedOut(.tlsHandshake, _)?:
            return .tlsHandshakeTimeout
        case .timedOut(.settings, _)?:
            return .connectTimeout
        case .socket(let socket)?:
            switch socket.code {
            case .connectionRefused: return .refused
            case .hostNotFound: return .hostNotFound
            case .timedOut: return .connectTimeout
            default: return .other
            }
        case .tls(let tls)?:
            switch tls.code {
            case .certificateVerificationFailed, .hostnameMismatch: return .untrustedCertificate
            case .noALPN: return .noHTTP2
            default: return .other
            }
        case .http2?, nil:
            return .other
        }
    }
}
