#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Where a pool connects. Custom hosts point the client at the emulator in tests and the demo.
public struct APNsEndpoint: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The name the certificate must carry (and SNI); nil means `host`.
    public var serverName: String?

    public init(host: String, port: Int = 443, serverName: String? = nil) {
        self.host = host
        self.port = port
        self.serverName = serverName
    }

    public static let production = APNsEndpoint(host: "api.push.apple.com")
    public static let sandbox = APNsEndpoint(host: "api.sandbox.push.apple.com")

    /// Reads `host`, `host:port` or `[v6]` / `[v6]:port` (APNS_HOST style), also written as a URL,
    /// `https://host[:port]` with or without a trailing `/`; surrounding white space is ignored.
    /// The one parser of every APNs host setting (the library's and the relay's). Nil when the
    /// port is not a number from 1 to 65535, the scheme is not https, a path follows the host,
    /// the host is empty or holds white space, a bracket is not closed, or an IPv6 literal has
    /// no brackets.
    public static func parse(_ written: String) -> APNsEndpoint? {
        var rest = Substring(written.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        let lowered = rest.lowercased()
        if lowered.hasPrefix("https://") {
            rest = rest.dropFirst(8)
        } else if lowered.contains("://") {
            return nil
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains(where: { $0.isWhitespace }) else { return nil }
        let text = String(rest)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard !host.isEmpty else { return nil }
            if rest.isEmpty { return APNsEndpoint(host: host) }
            guard rest.hasPrefix(":"), let port = Int(rest.dropFirst()), (1...65535).contains(port) else { return nil }
            return APNsEndpoint(host: host, port: port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 1 { return APNsEndpoint(host: text) }
        guard parts.count == 2, let port = Int(parts[1]), (1...65535).contains(port), !parts[0].isEmpty else { return nil }
        return APNsEndpoint(host: String(parts[0]), port: port)
    }

    /// `host:port`, an IPv6 literal in brackets so the port stays readable.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
