/// Where a Redis store is and how to log in: `STORE_URL=redis://[user:password@]host:port[/db]`.
/// Parsing only (no I/O), so every refusal is one line naming what is wrong, and the password is
/// never part of a description or an error.
package struct RedisAddress: Sendable, Equatable {
    package let host: String
    package let port: Int
    package let database: Int
    package let user: String?
    package let password: String?

    package init(host: String, port: Int = 6379, database: Int = 0, user: String? = nil, password: String? = nil) {
        self.host = host
        self.port = port
        self.database = database
        self.user = user
        self.password = password
    }

    /// The URL without its credentials (`redis://host:port/db`): what logs and `/health` show.
    package var description: String {
        let shownHost = host.contains(Character(":")) ? "[\(host)]" : host
        return "redis://\(shownHost):\(port)/\(database)"
    }

    /// Reads `url`; the error is one line, never containing the password.
    package static func parse(_ url: String) -> Result<RedisAddress, PushStoreError> {
        func refuse(_ why: String) -> Result<RedisAddress, PushStoreError> { .failure(PushStoreError(.cannotOpen, why)) }
        guard let colon = url.firstIndex(of: ":"), url[colon...].hasPrefix("://") else {
            return refuse("not a URL: it must start with redis://")
        }
        let scheme = url[..<colon].lowercased()
        if scheme == "rediss" {
            return refuse("rediss:// (Redis over TLS) is not supported: this build's hiredis (0.14) has no TLS; use redis:// on a private network or a TLS tunnel")
        }
        guard scheme == "redis" else { return refuse("the scheme is \(scheme)://; only redis:// is supported") }
        var rest = url[url.index(colon, offsetBy: 3)...]
        if rest.contains(Character("?")) || rest.contains(Character("#")) { return refuse("a query or fragment is not supported (the database is the path: /db)") }
        var user: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                let name = String(credentials[..<colon])
                user = name.isEmpty ? nil : name
                password = String(credentials[credentials.index(after: colon)...])
            } else {
                password = String(credentials)
            }
            guard let decodedUser = percentDecoded(user), let decodedPassword = percentDecoded(password) else {
                return refuse("the user or password has a bad %-escape")
            }
            user = decodedUser
            password = decodedPassword
            if password?.isEmpty == true { password = nil }
        }
        var database = 0
        if let slash = rest.firstIndex(of: "/") {
            let path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !path.isEmpty {
                guard let number = Int(path), (0...15_999).contains(number) else {
                    return refuse("the database (the path) must be a number, as in redis://host:6379/0; it is \(path)")
                }
                database = number
            }
        }
        var host = Substring(rest)
        var port = 6379
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return refuse("an IPv6 host's [ is not closed") }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()), (1...65_535).contains(number) else {
                    return refuse("the port must be a number from 1 to 65535")
                }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = Int(host[host.index(after: colon)...]), (1...65_535).contains(number) else {
                return refuse("the port must be a number from 1 to 65535")
            }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty else { return refuse("no host: it must be redis://host:port") }
        guard !host.contains(where: { $0 == " " || $0 == "/" }) else { return refuse("the host \(host) is not a host name or address") }
        return .success(RedisAddress(host: String(host), port: port, database: database, user: user, password: password))
    }

    /// `%XX` escapes decoded (a password may hold `@` or `:` that way); nil when one is malformed.
    private static func percentDecoded(_ text: String?) -> String?? {
        guard let text else { return .some(nil) }
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return .some(String(decoding: bytes, as: UTF8.self))
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
