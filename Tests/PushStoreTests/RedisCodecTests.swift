import Testing
import PushStore

/// The Redis store's protocol logic without a server: `STORE_URL`, the put's arguments, the
/// replies decoded into pushes, Redis's errors mapped.
@Suite("Redis URL and codec")
struct RedisCodecTests {
    @Test("STORE_URL forms", arguments: [
        ("redis://localhost", RedisAddress(host: "localhost")),
        ("redis://10.0.0.5:6380", RedisAddress(host: "10.0.0.5", port: 6380)),
        ("redis://redis:6379/3", RedisAddress(host: "redis", port: 6379, database: 3)),
        ("redis://:s3cret@redis:6379/0", RedisAddress(host: "redis", password: "s3cret")),
        ("redis://relay:p%40ss%3Aw@redis:7000/1", RedisAddress(host: "redis", port: 7000, database: 1, user: "relay", password: "p@ss:w")),
        ("redis://[::1]:6379/2", RedisAddress(host: "::1", database: 2)),
        ("REDIS://h/", RedisAddress(host: "h")),
    ])
    func parses(url: String, expected: RedisAddress) throws {
        #expect(try RedisAddress.parse(url).get() == expected)
    }

    @Test("a bad STORE_URL is one line naming what is wrong, never the password", arguments: [
        ("rediss://:hunter2@h:6379", "no TLS"),
        ("http://h", "only redis://"),
        ("h:6379", "must start with redis://"),
        ("redis://:hunter2@h:99999", "port"),
        ("redis://:hunter2@h:6379/x", "database"),
        ("redis://:hunter2@:6379", "no host"),
        ("redis://h:6379?db=1", "query"),
        ("redis://:hun%zzter2@h", "%-escape"),
    ])
    func refuses(url: String, naming what: String) {
        guard case .failure(let error) = RedisAddress.parse(url) else {
            Issue.record("\(url) was accepted")
            return
        }
        #expect(error.message.contains(what), "\(error.message)")
        #expect(!error.message.contains("hunter2"))
        #expect(!error.message.contains("\n"))
    }

    @Test("the description never holds the credentials")
    func descriptionHidesPassword() throws {
        let address = try RedisAddress.parse("redis://relay:hunter2@redis.internal:6380/4").get()
        #expect(address.description == "redis://redis.internal:6380/4")
    }

    @Test("a push goes out as the put script's arguments and comes back the same from a stream entry's fields")
    func pushRoundTrip() throws {
        for n in 0..<8 {
            let push = samplePush(n, device: n, payloadBytes: n * 7)
            let words = RedisCodec.putArguments([[push]], limits: .generous)
            #expect(words.count == 5 + RedisCodec.pushArity)
            let values = Array(words.dropFirst(5))
            // The fields as the script writes them (XADD), as XRANGE would answer them.
            var fields: [RedisValue] = []
            let names = ["r", "e", "a", "d", "t", "i", "p", "", "", "y", "u", "at", "ttl", "x", "b", "pl"]
            for (index, name) in names.enumerated() where !name.isEmpty {
                fields += [.bulk(Array(name.utf8)), .bulk(values[index])]
            }
            if values[7] == Array("1".utf8) { fields += [.bulk(Array("c".utf8)), .bulk(values[8])] }
            let reply = RedisValue.array([.array([.bulk(Array("1700000000123-\(n)".utf8)), .array(fields)])])
            let decoded = try RedisCodec.pushes(reply).get()
            #expect(decoded == [StoredPush(id: HeldPushID(high: 1_700_000_000_123, low: UInt64(n)), push: push)])
        }
    }

    @Test("stream ids are (ms, seq), and back")
    func ids() {
        #expect(RedisCodec.id("1700000000000-42") == HeldPushID(high: 1_700_000_000_000, low: 42))
        #expect(RedisCodec.idText(HeldPushID(high: 5, low: 6)) == "5-6")
        #expect(RedisCodec.id("nope") == nil)
        #expect(RedisCodec.id("1-") == nil)
    }

    @Test("the put script's answers: ids and drops, or the cap")
    func receipts() throws {
        let ok = RedisValue.array([.integer(1), .integer(2), .bulk(Array("9-0".utf8)), .bulk(Array("9-1".utf8))])
        #expect(try RedisCodec.receipt(ok, expecting: 2).get() == PutReceipt(ids: [HeldPushID(high: 9, low: 0), HeldPushID(high: 9, low: 1)], droppedForDeviceCap: 2))
        let cap = RedisValue.array([.integer(0), .bulk(Array("the store holds 3 pushes; its cap is 3".utf8))])
        guard case .failure(let error) = RedisCodec.receipt(cap, expecting: 1) else { Issue.record("accepted"); return }
        #expect(error.code == .capReached)
        #expect(error.message == "the store holds 3 pushes; its cap is 3")
        guard case .failure(let short) = RedisCodec.receipt(ok, expecting: 3) else { Issue.record("accepted"); return }
        #expect(short.code == .storeFailed)
    }

    @Test("counts, with and without an oldest push")
    func counts() throws {
        #expect(try RedisCodec.counts(.array([.integer(3), .integer(300), .integer(17), .integer(1)])).get()
                == HeldCounts(entries: 3, bytes: 300, oldestArrivalMs: 17, leased: 1))
        #expect(try RedisCodec.counts(.array([.integer(0), .integer(0), .integer(-1), .integer(0)])).get()
                == HeldCounts(entries: 0, bytes: 0, oldestArrivalMs: nil, leased: 0))
    }

    @Test("Redis's errors: maxmemory and a disk that refuses the log are full; others fail the call")
    func errors() {
        func mapped(_ line: String) -> PushStoreError.Code? {
            guard case .error(let code, let line) = RedisValue.error(line: line) else { return nil }
            return RedisCodec.error(code: code, line: line, doing: "a put").code
        }
        #expect(mapped("OOM command not allowed when used memory > 'maxmemory'.") == .diskFull)
        #expect(mapped("MISCONF Errors writing to the AOF file: No space left on device") == .diskFull)
        #expect(mapped("ERR unknown command") == .storeFailed)
        #expect(RedisValue.error(line: "NOSCRIPT No matching script.") == .error(code: "NOSCRIPT", line: "NOSCRIPT No matching script."))
    }
}
