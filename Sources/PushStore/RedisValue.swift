/// One Redis reply (RESP2, what hiredis 0.14 decodes), copied out of hiredis's memory so the
/// decoding of replies into pushes is plain Swift, tested without a server.
package enum RedisValue: Sendable, Equatable {
    case bulk([UInt8])
    case status(String)
    case integer(Int64)
    case array([RedisValue])
    case null
    /// An error reply: its code (the first word, as Redis defines it: `ERR`, `OOM`, `NOSCRIPT`…)
    /// apart from the whole line, so decisions read the code and only people read the line.
    case error(code: String, line: String)

    /// An error reply from the line Redis sent.
    package static func error(line: String) -> RedisValue {
        .error(code: String(line.prefix { $0 != " " }), line: line)
    }

    /// The text of a bulk or status reply.
    package var text: String? {
        switch self {
        case .bulk(let bytes): String(decoding: bytes, as: UTF8.self)
        case .status(let text): text
        default: nil
        }
    }

    /// An integer reply, or a bulk one holding decimal digits (Lua numbers come back as integers).
    package var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .bulk: text.flatMap { Int64($0) }
        default: nil
        }
    }

    package var array: [RedisValue]? {
        if case .array(let values) = self { return values }
        return nil
    }
}

/// A command's arguments, binary-safe.
package typealias RedisCommand = [[UInt8]]

extension Array where Element == [UInt8] {
    /// A command from its words: `.command("XACK", key, group, id)`.
    static func command(_ words: String...) -> RedisCommand { words.map { [UInt8]($0.utf8) } }
}
