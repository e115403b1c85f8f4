// Shared by the unit tests and by `make fuzz`, which compiles this file together with the
// parser sources (and -D HTTPPARSER_FUZZ) into a libFuzzer binary.
#if !HTTPPARSER_FUZZ
import HTTPServer
#endif

/// What feeding some bytes produced: the events, and where the parser was left.
/// `.expectContinue` is left out: it is the one event that depends on the split.
struct ParseOutcome: Equatable, CustomStringConvertible {
    var events: [HTTPParserEvent]
    var failed: Bool
    var idle: Bool
    var buffered: Int

    var description: String {
        "\(events.map(describe)) failed=\(failed) idle=\(idle) buffered=\(buffered)"
    }
}

func describe(_ event: HTTPParserEvent) -> String {
    switch event {
    case .request(let r): return "request(\(r.method) \(r.target) body=\(r.body.count) keepAlive=\(r.keepAlive))"
    case .expectContinue: return "expectContinue"
    case .error(let e): return "error(\(e))"
    }
}

/// Feeds `bytes` cut at `cuts` (sorted offsets), collecting every event.
func parse(_ bytes: [UInt8], limits: HTTPParserLimits = HTTPParserLimits(), cuts: [Int] = []) -> (outcome: ParseOutcome, continues: Int) {
    var parser = HTTPParser(limits: limits)
    var events: [HTTPParserEvent] = []
    var start = 0
    for cut in cuts + [bytes.count] where cut >= start && cut <= bytes.count {
        events += bytes[start..<cut].withUnsafeBytes { parser.feed($0) }
        start = cut
    }
    let continues = events.filter { $0 == .expectContinue }.count
    let outcome = ParseOutcome(
        events: events.filter { $0 != .expectContinue }, failed: parser.hasFailed,
        idle: parser.isIdle, buffered: parser.bufferedByteCount)
    return (outcome, continues)
}

/// Feeds `bytes` one byte at a time.
func parseBytewise(_ bytes: [UInt8], limits: HTTPParserLimits = HTTPParserLimits()) -> ParseOutcome {
    parse(bytes, limits: limits, cuts: Array(0..<bytes.count)).outcome
}

/// The parser's contract on arbitrary bytes; returns a description of the first breach.
/// - the same events whatever the split;
/// - an error is the last event, and the parser is then failed and empty;
/// - no body over the limit; every error status is one the parser documents.
func checkParserContract(_ bytes: [UInt8], limits: HTTPParserLimits, cuts: [Int]) -> String? {
    let whole = parse(bytes, limits: limits).outcome
    let split = parse(bytes, limits: limits, cuts: cuts).outcome
    if whole != split {
        return "split \(cuts) changed the outcome:\n  whole: \(whole)\n  split: \(split)"
    }
    for (i, event) in whole.events.enumerated() {
        switch event {
        case .error(let e):
            if i != whole.events.count - 1 { return "events after an error: \(whole)" }
            if ![400, 413, 414, 417, 431, 501, 505].contains(e.status) { return "unexpected status \(e.status)" }
            if e.reason.isEmpty || e.reason.utf8.contains(0x0A) { return "reason not one line: \(e.reason)" }
            if !whole.failed || whole.buffered != 0 { return "error but parser not failed and empty: \(whole)" }
            var out: [UInt8] = []
            serialize(HTTPResponse(parseError: e), date: "Thu, 01 Jan 1970 00:00:00 GMT", close: true, into: &out)
        case .request(let r):
            if r.body.count > limits.maxBodyBytes { return "body over the limit: \(r.body.count)" }
            if r.headers.count > limits.maxHeaderCount { return "too many headers: \(r.headers.count)" }
        case .expectContinue:
            return "expectContinue not filtered"
        }
    }
    if whole.failed && !(whole.events.last.map { if case .error = $0 { true } else { false } } ?? false) {
        return "failed without an error event"
    }
    return nil
}

/// A small deterministic generator so a failing seed can be replayed exactly.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Limits small enough that random inputs reach every limit path.
let tinyLimits = HTTPParserLimits(maxRequestLineBytes: 40, maxHeaderBytes: 80, maxHeaderCount: 4, maxBodyBytes: 32)

/// Valid requests that mutations start from.
let fuzzSeeds: [String] = [
    "GET /push/abcd?sandbox=true HTTP/1.1\r\nHost: relay\r\nX-Forwarded-For: 1.2.3.4, 5.6.7.8\r\n\r\n",
    "POST /push/ab/1 HTTP/1.1\r\nHost: r\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
    "POST /p HTTP/1.1\r\nHost: r\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n1\r\n!\r\n0\r\nT: x\r\n\r\n",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.1\r\nConnection: close\r\n\r\n",
]

/// Random cut points for `count` bytes.
func randomCuts(_ count: Int, using rng: inout SplitMix64) -> [Int] {
    guard count > 1 else { return [] }
    let n = Int.random(in: 0...min(count - 1, 8), using: &rng)
    return (0..<n).map { _ in Int.random(in: 1..<count, using: &rng) }.sorted()
}

/// A random input: raw bytes, HTTP-ish fragments, or a mutated valid request.
func randomInput(using rng: inout SplitMix64) -> [UInt8] {
    switch Int.random(in: 0..<3, using: &rng) {
    case 0:
        return (0..<Int.random(in: 0...256, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
    case 1:
        let fragments = [
            "GET ", "POST ", "/", " HTTP/1.1", " HTTP/1.0", " HTTP/2.0", "\r\n", "\r", "\n", ": ", " ", "\t",
            "Host", "Content-Length", "Transfer-Encoding", "chunked", "Connection", "close", "keep-alive",
            "Expect", "100-continue", "0", "5", "ff", "-1", ";x=y", ",", "hello", "\0", "\u{16}", "PRI * ",
        ]
        var out: [UInt8] = []
        for _ in 0..<Int.random(in: 0...40, using: &rng) {
            out += Array(fragments.randomElement(using: &rng)!.utf8)
        }
        return out
    default:
        return mutate(Array(fuzzSeeds.randomElement(using: &rng)!.utf8), using: &rng)
    }
}

/// Flips, inserts, deletes or duplicates a few bytes of `input`.
func mutate(_ input: [UInt8], using rng: inout SplitMix64) -> [UInt8] {
    var bytes = input
    for _ in 0..<Int.random(in: 1...4, using: &rng) {
        let i = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &rng)
        switch Int.random(in: 0..<5, using: &rng) {
        case 0 where !bytes.isEmpty: bytes[i] = UInt8.random(in: 0...255, using: &rng)
        case 1: bytes.insert([0x0D, 0x0A, 0x20, 0x00, 0x3A, 0x3B, 0x30, 0x66].randomElement(using: &rng)!, at: i)
        case 2 where !bytes.isEmpty: bytes.remove(at: i)
        case 3 where !bytes.isEmpty:
            let j = min(bytes.count, i + Int.random(in: 1...16, using: &rng))
            bytes.insert(contentsOf: Array(bytes[i..<j]), at: j)
        default: bytes.insert(contentsOf: Array("\r\n".utf8), at: i)
        }
    }
    return bytes
}
