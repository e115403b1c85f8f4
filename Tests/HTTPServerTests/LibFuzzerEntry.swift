// The libFuzzer entry for `make fuzz`; empty in the test target.
#if HTTPPARSER_FUZZ
/// The first byte picks the limits and seeds the cuts; the rest is the input. Any breach
/// of the parser's contract (see `checkParserContract`) aborts so libFuzzer saves the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data, size > 0 else { return 0 }
    let selector = data[0]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let limits = selector & 1 == 0 ? HTTPParserLimits() : tinyLimits
    var rng = SplitMix64(seed: UInt64(selector) &* 0x9E37_79B9 &+ UInt64(input.count))
    let cuts = selector & 2 == 0 ? Array(0..<input.count) : randomCuts(input.count, using: &rng)
    if let breach = checkParserContract(input, limits: limits, cuts: cuts) {
        fatalError(breach)
    }
    return 0
}
#endif
