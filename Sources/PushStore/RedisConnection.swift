internal import CHiredis
import Basics
#if canImport(Glibc)
import Glibc
#endif

/// One connection to Redis through hiredis's blocking API, used by one thread (the store's
/// worker). It owns its `redisContext` from `connect` on and frees it once, in `deinit`: an
/// object exists only once the connect succeeded, so no half-built one frees anything. Every
/// wait is bounded: the connect by `timeout`, each reply by the same (SO_RCVTIMEO); a
/// connection that timed out or failed is never used again (hiredis keeps its error).
final class RedisConnection {
    private let context: UnsafeMutablePointer<redisContext>

    private init(context: UnsafeMutablePointer<redisContext>) {
        self.context = context
    }

    deinit { redisFree(context) }

    /// Connects to `address` within `timeout`, logs in and selects its database.
    static func connect(_ address: RedisAddress, timeout: Duration) -> Result<RedisConnection, PushStoreError> {
        let wait = timeval(timeout)
        guard let raw = redisConnectWithTimeout(address.host, Int32(address.port), wait) else {
            return .failure(PushStoreError(.unreachable, "cannot connect to \(address.description): out of memory"))
        }
        if raw.pointee.err != 0 {
            let why = errorText(raw)
            redisFree(raw)
            return .failure(PushStoreError(.unreachable, "cannot connect to \(address.description): \(why)"))
        }
        guard redisSetTimeout(raw, wait) == REDIS_OK else {
            redisFree(raw)
            return .failure(PushStoreError(.unreachable, "cannot set the reply timeout for \(address.description)"))
        }
        let connection = RedisConnection(context: raw)
        var setup: [RedisCommand] = []
        if let password = address.password {
            setup.append(address.user.map { [Array("AUTH".utf8), Array($0.utf8), Array(password.utf8)] }
                         ?? [Array("AUTH".utf8), Array(password.utf8)])
        }
        if address.database != 0 { setup.append(.command("SELECT", String(address.database))) }
        guard !setup.isEmpty else { return .success(connection) }
        switch connection.pipeline(setup) {
        case .failure(let error): return .failure(error)
        case .success(let replies):
            for (index, reply) in replies.enumerated() {
                guard case .error(_, let message) = reply else { continue }
                // The AUTH command's own words are never repeated: only Redis's answer.
                let what = index == 0 && address.password != nil ? "logging in" : "selecting database \(address.database)"
                return .failure(PushStoreError(.cannotOpen, "\(address.description) refused \(what): \(message)"))
            }
            return .success(connection)
        }
    }

    /// Sends every command in one write and reads their replies in order. A failure (closed,
    /// timed out) is `unreachable` and leaves the connection unusable.
    func pipeline(_ commands: [RedisCommand]) -> Result<[RedisValue], PushStoreError> {
        for command in commands {
            var lengths = command.map { $0.count }
            let status: Int32 = withArgv(command) { argv in
                redisAppendCommandArgv(context, Int32(command.count), argv, &lengths)
            }
            guard status == REDIS_OK else { return .failure(failure("cannot send a command")) }
        }
        var replies: [RedisValue] = []
        replies.reserveCapacity(commands.count)
        for _ in commands {
            var raw: UnsafeMutableRawPointer?
            guard redisGetReply(context, &raw) == REDIS_OK, let raw else { return .failure(failure("no reply")) }
            let reply = raw.assumingMemoryBound(to: redisReply.self)
            replies.append(Self.value(of: reply))
            freeReplyObject(raw)
        }
        return .success(replies)
    }

    private func failure(_ what: String) -> PushStoreError {
        PushStoreError(.unreachable, "Redis: \(what): \(Self.errorText(context))")
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        // hiredis says "Resource temporarily unavailable" for a read that timed out.
        return StringBytes.contains(text, "temporarily unavailable") ? "timed out" : (text.isEmpty ? "connection lost" : text)
    }

    private static func value(of reply: UnsafeMutablePointer<redisReply>) -> RedisValue {
        let node = reply.pointee
        func bytes() -> [UInt8] {
            guard let str = node.str, node.len > 0 else { return [] }
            return Array(UnsafeRawBufferPointer(start: str, count: Int(node.len)))
        }
        switch node.type {
        case REDIS_REPLY_STRING: return .bulk(bytes())
        case REDIS_REPLY_STATUS: return .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(line: String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_INTEGER: return .integer(node.integer)
        case REDIS_REPLY_ARRAY:
            guard let elements = node.element else { return .array([]) }
            return .array((0..<Int(node.elements)).map { index in elements[index].map(value(of:)) ?? .null })
        default: return .null
        }
    }
}

private func timeval(_ duration: Duration) -> timeval {
    let microseconds = duration / .microseconds(1)
    let whole = Int(microseconds.rounded(.down))
    return Glibc.timeval(tv_sec: whole / 1_000_000, tv_usec: whole % 1_000_000)
}

/// Runs `body` with C strings pointing at `command`'s words (binary: lengths are passed apart).
private func withArgv<T>(_ command: RedisCommand, _ body: (UnsafeMutablePointer<UnsafePointer<CChar>?>) -> T) -> T {
    let buffers = command.map { word -> UnsafeMutablePointer<CChar> in
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: max(word.count, 1))
        word.withUnsafeBytes { raw in
            if let base = raw.baseAddress { UnsafeMutableRawPointer(buffer).copyMemory(from: base, byteCount: word.count) }
        }
        return buffer
    }
    defer { for buffer in buffers { buffer.deallocate() } }
    var argv: [UnsafePointer<CChar>?] = buffers.map { UnsafePointer($0) }
    return argv.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
}
