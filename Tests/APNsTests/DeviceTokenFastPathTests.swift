import Testing
@testable import APNsCore
@testable import APNs

/// A deterministic generator, so a failing case can be replayed.
private struct TokenRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// What a token check said: the lower-case hex, or the refusal's message.
private enum Verdict: Equatable {
    case success(String)
    case failure(String)
}

/// The token rule as first written, a switch per character: what the classified scan must say.
private func referenceToken(_ text: String) -> Verdict {
    let utf8 = text.utf8
    guard utf8.count >= 64, utf8.count <= 200 else {
        return .failure("device token must be 64 to 200 hex digits; got \(utf8.count) characters")
    }
    guard utf8.count % 2 == 0 else {
        return .failure("device token must have an even number of hex digits; got \(utf8.count)")
    }
    var lower: [UInt8] = []
    for byte in utf8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): lower.append(byte)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): lower.append(byte | 0x20)
        default: return .failure("device token must be hex digits only (0-9, a-f); found another character")
        }
    }
    return .success(String(decoding: lower, as: UTF8.self))
}

@Suite("Device token and topic checks agree with their definitions")
struct DeviceTokenFastPathTests {
    @Test("the token check accepts, lower-cases and refuses exactly as the per-character rule does")
    func tokens() {
        var rng = TokenRandom(state: 64)
        // Hex of both cases and the bytes just outside each range.
        let alphabet = Array("0123456789abcdefABCDEF".utf8) + Array("/:`g@G ".utf8) + [0x00, 0x7F, 0xC3, 0xA9]
        for _ in 0 ..< 2000 {
            let count = [62, 63, 64, 65, 66, 100, 200, 201].randomElement(using: &rng)!
            var bytes = (0 ..< count).map { _ in alphabet[Int.random(in: 0 ..< 22, using: &rng)] }
            if Int.random(in: 0 ..< 3, using: &rng) == 0 {
                bytes[Int.random(in: 0 ..< count, using: &rng)] = alphabet.randomElement(using: &rng)!
            }
            let text = String(decoding: bytes, as: UTF8.self)
            let got: Verdict
            do throws(APNsError) { got = .success(try DeviceToken(text).hex) } catch { got = .failure(error.message) }
            #expect(got == referenceToken(text), "\(text)")
        }
    }

    @Test("a topic is refused exactly when a byte is outside visible ASCII")
    func topics() throws {
        let token = try DeviceToken(String(repeating: "ab", count: 32))
        let payload = APNsPayload(builtAlert: Array(#"{"aps":{"alert":"x"}}"#.utf8))
        for topic in ["com.example.app", "com.example app", "com.exämple.app", "com.example.app\u{7F}", "~!", "a\tb", "\u{1}"] {
            let visible = topic.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
            let made = (try? APNsNotification(token: token, topic: topic, payload: payload, pushType: .alert)) != nil
            #expect(made == visible, "\(topic)")
        }
    }
}
