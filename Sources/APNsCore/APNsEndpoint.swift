internal import Basics

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
    /// the host is empty or holds anything but letters, digits, `-`, `_` and `.` (white space,
    /// `user@`), a bracket is not closed, or an IPv6 literal has no brackets; the port is digits
    /// only (no sign).
    public static func parse(_ written: String) -> APNsEndpoint? {
        var rest = Substring(written.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        let lowered = rest.lowercased()
        if lowered.hasPrefix("https://") {
            rest = rest.dropFirst(8)
        } else if lowered.split(separator: ":", omittingEmptySubsequences: false).dropFirst().contains(where: { $0.hasPrefix("//") }) {
            // Another scheme: a colon followed by "//" (split on a Character, with the standard
            // library; contains(_:) with a string would link _StringProcessing).
            return nil
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.isEmpty, !rest.contains("/"), !rest.contains(where: { $0.isWhitespace }) else { return nil }
        let text = String(rest)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard !host.isEmpty, host.contains(":"), host.allSatisfy({ $0.isASCII && ($0.isHexDigit || ":.%".contains($0) || $0.isLetter || $0.isNumber) })
            else { return nil }
            if rest.isEmpty { return APNsEndpoint(host: host) }
            guard rest.hasPrefix(":"), let port = port(rest.dropFirst()) else { return nil }
            return APNsEndpoint(host: host, port: port)
        }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !parts[0].isEmpty,
              parts[0].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else { return nil }
        if parts.count == 1 { return APNsEndpoint(host: text) }
        guard let port = port(parts[1]) else { return nil }
        return APNsEndpoint(host: String(parts[0]), port: port)
    }

    /// 1 to 65535, written in digits only.
    private static func port(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text),
              (1...65535).contains(port) else { return nil }
        return port
    }

    /// What to add to the one line refusing `written`: the bracket form, when it looks like a
    /// bare IPv6 address; otherwise nothing.
    public static func hint(refusing written: String) -> String {
        written.filter({ $0 == ":" }).count > 1 && !written.contains("[")
            ? "; an IPv6 address goes in brackets, e.g. [::1]:443" : ""
    }

    /// `host:port`, an IPv6 literal in brackets so the port stays readable.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
