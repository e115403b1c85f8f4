import Foundation
import Testing
import MockAPNs
import BuiltProducts

/// `apns-relay send`, `send-many` and `clean-token` against the emulator, as an operator runs them
/// (`BuiltProducts.relay`: the debug build's, or the one in APNS_RELAY_BIN_DIR).
@Suite("apns-relay send, send-many, clean-token", .serialized, .enabled(if: BuiltProducts.runsRelay))
struct CLITests {
    func cli(_ arguments: [String], _ emulator: Emulator, extra: [String: String] = [:], input: String = "") async throws -> ProcessRun {
        try await runProcess(try BuiltProducts.relayExecutable(), arguments, environment: emulator.environment.merging(extra) { $1 },
                             input: input)
    }

    @Test("send takes every option, prints the result JSON with the caller's token and exits 0")
    func sendEveryOption() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let device = token("", 1).uppercased()
        let run = try await cli([
            "send", "--token", device, "--topic", Emulator.topic, "--push-type", "alert", "--priority", "5",
            "--expiration", "0", "--collapse-id", "thread-7", "--apns-id", "5E1B1C8E-0A8B-4C59-9B52-1D2C3E4F5A6B",
            "--timeout-ms", "5000", "--title", "T", "--body", "B", "--subtitle", "S", "--badge", "3",
            "--sound", #"{"critical":1,"name":"alarm.caf","volume":0.5}"#, "--category", "cat", "--thread-id", "th",
            "--mutable-content", "--interruption-level", "time-sensitive", "--relevance-score", "0.5",
            "--target-content-id", "tc", "--title-loc-key", "TK", "--title-loc-args", "a,b", "--loc-key", "LK",
            "--loc-args", #"["c"]"#, "--data", #"{"k":1}"#,
        ], emulator)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix(#"{"ok":true,"status":200,"apns_id":"5e1b1c8e-0a8b-4c59-9b52-1d2c3e4f5a6b""#))
        #expect(run.stdout.contains(#""device":"\#(device)""#))
        let record = try #require(emulator.records(for: device.lowercased()).first)
        #expect(record.header("apns-priority") == "5" && record.header("apns-expiration") == "0")
        #expect(record.header("apns-collapse-id") == "thread-7" && record.header("apns-push-type") == "alert")
        #expect(String(decoding: record.payload, as: UTF8.self) == #"{"aps":{"alert":{"title":"T","subtitle":"S","body":"B","title-loc-key":"TK","title-loc-args":["a","b"],"loc-key":"LK","loc-args":["c"]},"badge":3,"sound":{"critical":1,"name":"alarm.caf","volume":0.5},"category":"cat","thread-id":"th","mutable-content":1,"interruption-level":"time-sensitive","relevance-score":0.5,"target-content-id":"tc"},"k":1}"#)
    }

    @Test("send --background and send --payload go out as given; --sandbox goes to the sandbox host")
    func backgroundAndPayload() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let background = try await cli(["send", "--token", token("", 2), "--background", "--data", #"{"x":"y"}"#], emulator)
        #expect(background.status == 0, "\(background.stderr)")
        let record = try #require(emulator.records(for: token("", 2)).first)
        #expect(record.header("apns-push-type") == "background" && record.header("apns-priority") == "5")
        let payload = try await cli(["send", "--token", token("", 3), "--sandbox", "--payload", #"{"aps":{"alert":"hi"}}"#], emulator,
                                    extra: try emulator.anotherKey().merging(["APNS_SANDBOX_HOST": "127.0.0.1:\(emulator.server.port)"]) { $1 })
        #expect(payload.status == 0, "\(payload.stderr)")
    }

    @Test("a refusal prints Apple's reason and exits 1")
    func refusal() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token(MockFaults.Prefix.unregistered, 4), "--title", "T"], emulator)
        #expect(run.status == 1)
        let result = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout)")
        #expect(result["ok"] as? Bool == false && result["status"] as? Int == 410 && result["reason"] as? String == "Unregistered")
        #expect(result["remove_token"] as? Bool == true)
        #expect(result["device"] as? String == token(MockFaults.Prefix.unregistered, 4))
    }

    @Test("no answer from Apple exits 2 and says why")
    func unreachable() async throws {
        let emulator = try Emulator()
        let port = emulator.server.port
        emulator.server.stop()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token("", 5), "--title", "T", "--timeout-ms", "1500",
                                 "--host", "127.0.0.1:\(port)"], emulator)
        #expect(run.status == 2)
        #expect(run.stdout.contains(#""error":"unavailable""#) && run.stdout.contains("connection refused"))
        #expect(run.stdout.contains(#""device":"\#(token("", 5))""#))
    }

    @Test("every refusal before sending exits 2 with one line saying what is wrong", arguments: [
        (["--payload", #"{"aps":{"alert":""# + String(repeating: "x", count: 4100) + #""}}"#], "over Apple's 4096-byte limit"),
        (["--title", "T", "--collapse-id", String(repeating: "c", count: 65)], "collapse id must be 1 to 64 bytes"),
        (["--title", "T", "--token", "xyz"], "device token"),
        (["--title", "T", "--push-type", "banner"], "use one of alert, background, voip"),
        (["--background", "--priority", "10"], "priority 5 or 1"),
        (["--payload", #"{"alert":"hi"}"#], "\"aps\" object"),
        (["--title", "T", "--data", #"{"aps":{}}"#], "may not hold an \"aps\" key"),
        (["--badge", "1"], "nothing would show"),
        (["--subtitle", ""], "nothing would show"),
        (["--loc-key", ""], "nothing would show"),
    ])
    func refusedBeforeSending(arguments: [String], says: String) async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token("", 6)] + arguments, emulator)
        #expect(run.status == 2)
        #expect(run.stderr.contains(says), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(emulator.server.records.isEmpty)
    }

    @Test("an unparsable key exits 2 with one line naming APNS_KEY")
    func badKey() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token("", 7), "--title", "T"], emulator, extra: ["APNS_KEY": "not a key"])
        #expect(run.status == 2)
        #expect(run.stderr.hasPrefix("apns-relay: APNS_KEY is not a usable .p8 key"))
        #expect(run.stderr.split(separator: "\n").count == 1)
    }

    @Test("send-many reads tokens from standard input and prints sent, failed, remove and results in order")
    func sendMany() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let tokens = [token("", 8), token(MockFaults.Prefix.badDeviceToken, 9), "not-a-token", token("", 10)]
        let run = try await cli(["send-many", "--tokens-file", "-", "--title", "T", "--priority", "5"], emulator,
                                input: tokens.joined(separator: "\n") + "\n")
        #expect(run.status == 1)
        #expect(run.stdout.hasPrefix(#"{"sent":2,"failed":2,"remove":["\#(tokens[1])"],"results":[{"ok":true"#))
        // In the caller's order: delivered, BadDeviceToken, never sent, delivered; each names its
        // device, the failures too (a caller filters for them and loses the positions).
        let results = try sendManyResults(run.stdout)
        #expect(results.map { $0["device"] as? String } == tokens)
        #expect(results.map { $0["reason"] as? String } == [nil, "BadDeviceToken", "NotSent", nil])
        #expect(emulator.records(for: tokens[0]).first?.header("apns-priority") == "5")
    }

    @Test("send-many checks the push before sending: a rule it breaks exits 2 with one line, nothing sent", arguments: [
        (["--title", "T", "--collapse-id", String(repeating: "c", count: 65)], [:], "collapse id must be 1 to 64 bytes"),
        (["--background", "--priority", "10"], [:], "priority 5 or 1"),
        (["--title", "T"], ["APNS_TOPIC": ""], "no topic"),
        (["--title", "T", "--apns-id", "5E1B1C8E-0A8B-4C59-9B52-1D2C3E4F5A6B"], [:], "unknown option --apns-id for send-many"),
    ] as [([String], [String: String], String)])
    func sendManyRefusedBeforeSending(arguments: [String], extra: [String: String], says: String) async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send-many", "--tokens-file", "-"] + arguments, emulator, extra: extra,
                                input: token("", 12) + "\n" + token("", 13) + "\n")
        #expect(run.status == 2, "\(run.stdout)")
        #expect(run.stderr.contains(says), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").count == 1)
        #expect(run.stdout.isEmpty)
        #expect(emulator.server.records.isEmpty)
    }

    @Test("send-many exits 2 when nothing could be sent because Apple could not be reached")
    func sendManyUnreachable() async throws {
        let emulator = try Emulator()
        let port = emulator.server.port
        emulator.server.stop()
        defer { emulator.stop() }
        let run = try await cli(["send-many", "--tokens-file", "-", "--title", "T", "--timeout-ms", "1500",
                                 "--host", "127.0.0.1:\(port)"], emulator, input: token("", 14) + "\n" + token("", 15) + "\n")
        #expect(run.status == 2, "\(run.stdout)")
        #expect(run.stdout.hasPrefix(#"{"sent":0,"failed":2"#), "\(run.stdout)")
        #expect(run.stdout.contains("connection refused") && run.stdout.contains("check --host"), "\(run.stdout)")
        #expect(try sendManyResults(run.stdout).map { $0["device"] as? String } == [token("", 14), token("", 15)])
    }

    @Test("-h as an option's value is that value, not a request for help")
    func dashHAsValue() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token("", 16), "--title", "-h"], emulator)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(!run.stdout.contains("usage:"))
        let record = try #require(emulator.records(for: token("", 16)).first)
        #expect(String(decoding: record.payload, as: UTF8.self) == #"{"aps":{"alert":{"title":"-h"}}}"#)
        let help = try await cli(["send", "--token", token("", 17), "-h"], emulator)
        #expect(help.status == 0 && help.stdout.contains("usage:"))
        #expect(emulator.records(for: token("", 17)).isEmpty)
    }

    @Test("APNS_HOST without APNS_SANDBOX_HOST serves --sandbox too (an emulator)")
    func hostServesSandbox() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["send", "--token", token("", 18), "--sandbox", "--title", "T"], emulator)
        #expect(run.status == 0, "\(run.stdout) \(run.stderr)")
        #expect(emulator.records(for: token("", 18)).count == 1)
    }

    @Test("clean-token prints the token as Apple wants it")
    func cleanToken() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["clean-token", "<" + token("", 11).uppercased().chunked() + ">"], emulator)
        #expect(run.status == 0)
        #expect(run.stdout == token("", 11) + "\n")
    }

    @Test("clean-token cleans without checking, as the library's DeviceToken.cleaned does; send still checks the token")
    func cleanTokenDoesNotValidate() async throws {
        let emulator = try Emulator()
        defer { emulator.stop() }
        let run = try await cli(["clean-token", "<ABCD 1234>"], emulator)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout == "abcd1234\n")
        #expect(run.stderr.isEmpty)
        let send = try await cli(["send", "--token", "<ABCD 1234>", "--title", "T"], emulator)
        #expect(send.status == 2)
        #expect(send.stderr.contains("device token must be 64 to 200 hex digits"), "\(send.stderr)")
        #expect(emulator.server.records.isEmpty)
    }
}

/// send-many's `results`, each a JSON object.
private func sendManyResults(_ stdout: String) throws -> [[String: Any]] {
    let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as? [String: Any]
    return try #require(object?["results"] as? [[String: Any]], "\(stdout)")
}

extension String {
    /// Groups of 8 characters separated by spaces, as an old iOS app's token description reads.
    func chunked() -> String {
        var out = ""
        for (i, c) in enumerated() {
            if i > 0 && i % 8 == 0 { out.append(" ") }
            out.append(c)
        }
        return out
    }
}
