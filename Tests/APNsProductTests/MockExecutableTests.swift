import Foundation
import Testing
import BuiltProducts
import TestWaits

/// `apns-mock` as an app developer runs it: the emulator on its own, a relay or any server pointed at it.
@Suite("apns-mock executable", .serialized, .enabled(if: BuiltProducts.executable("apns-mock") != nil && BuiltProducts.relay != nil))
struct MockExecutableTests {
    @Test("--record writes each request and its answer as a JSON line; SIGTERM removes the folder with the generated key")
    func recordAndCleanUp() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recordFile = directory.appendingPathComponent("requests.jsonl")
        let (mock, banner) = try await startMock(["--port", "0", "--record", recordFile.path])
        defer { if mock.isRunning { mock.terminate() } }
        func field(_ name: String) -> String? {
            banner.split(separator: " ").first { $0.hasPrefix(name + "=") }.map { String($0.dropFirst(name.count + 1)).trimmingCharacters(in: .whitespacesAndNewlines) }
        }
        let port = try #require(banner.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }.map { $0.dropFirst("127.0.0.1:".count) })
        let keyFile = try #require(field("private-key")), ca = try #require(field("ca"))
        let keyFolder = URL(fileURLWithPath: keyFile).deletingLastPathComponent()
        #expect(FileManager.default.fileExists(atPath: keyFile))

        let device = token("", 0x51)
        let send = try await runProcess(BuiltProducts.relay!, ["send", "--token", device, "--title", "Hi", "--data", #"{"k":"v/1"}"#], environment: [
            "APNS_KEY": try String(contentsOfFile: keyFile, encoding: .utf8), "APNS_KEY_ID": try #require(field("key")),
            "APNS_TEAM_ID": try #require(field("team")), "APNS_TOPIC": "com.example.app",
            "APNS_HOST": "127.0.0.1:\(port)", "APNS_CA_FILE": ca, "PATH": "/usr/bin:/bin",
        ])
        #expect(send.status == 0, "\(send.stdout) \(send.stderr)")

        mock.terminate()
        let status = try await onOwnThread {
            mock.waitUntilExit()
            return mock.terminationStatus
        }
        #expect(status == 0)
        #expect(!FileManager.default.fileExists(atPath: keyFolder.path), "the generated key outlived the emulator")

        let lines = try String(contentsOf: recordFile, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Any])
        #expect(object["path"] as? String == "/3/device/" + device)
        #expect(object["method"] as? String == "POST")
        #expect(object["status"] as? Int == 200)
        let headers = try #require(object["headers"] as? [[String]])
        #expect(headers.contains(["apns-topic", "com.example.app"]))
        #expect(headers.contains { $0.first == "authorization" })
        #expect(object["apns_id"] as? String == headers.first { $0.first == "apns-id" }?.last)
        #expect(object["payload"] as? String == #"{"aps":{"alert":{"title":"Hi"}},"k":"v/1"}"#)
        #expect(object["topic"] as? String == "com.example.app")
        let auth = try #require(object["auth"] as? [String: String])
        #expect(auth == ["kind": "token", "team": try #require(field("team")), "key": try #require(field("key"))])
    }

    @Test("--client-cert-out writes an Apple-like push certificate, its key and a .p12; curl presenting it needs no token")
    func clientCertificate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-mock-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let recordFile = directory.appendingPathComponent("requests.jsonl")
        let (mock, banner) = try await startMock(
            ["--port", "0", "--team-id", "CERTTEAM01", "--record", recordFile.path, "--ca-out", directory.path + "/ca.pem",
             "--client-cert-out", directory.path, "--client-cert-topic", "com.example.certapp", "--client-cert-password", "pw"])
        defer { if mock.isRunning { mock.terminate() } }
        let port = try #require(banner.split(separator: " ").first { $0.hasPrefix("127.0.0.1:") }.map { $0.dropFirst("127.0.0.1:".count) })
        let (cert, key, p12) = (directory.path + "/push-cert.pem", directory.path + "/push-key.pem", directory.path + "/push.p12")
        #expect(banner.contains("client-cert=\(cert)") && banner.contains("client-p12=\(p12)"), "\(banner)")
        let keyMode = try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int
        #expect(keyMode == 0o600)

        let subject = try await runProcess(URL(fileURLWithPath: "/usr/bin/openssl"), ["x509", "-in", cert, "-noout", "-subject"], environment: [:])
        #expect(subject.stdout.contains("UID = com.example.certapp, CN = Apple Push Services: com.example.certapp, OU = CERTTEAM01"), "\(subject.stdout)")
        let inP12 = try await runProcess(URL(fileURLWithPath: "/usr/bin/openssl"),
                                         ["pkcs12", "-in", p12, "-passin", "pass:pw", "-nokeys", "-clcerts"], environment: [:])
        #expect(inP12.stdout.contains(try String(contentsOfFile: cert, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))

        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/curl") else { return }
        let device = token("", 0x52)
        let push = try await runProcess(URL(fileURLWithPath: "/usr/bin/curl"), [
            "-s", "--http2", "--cacert", directory.path + "/ca.pem", "--cert", cert, "--key", key,
            "-H", "apns-push-type: alert", "-d", #"{"aps":{}}"#, "-w", "%{http_code}", "https://127.0.0.1:\(port)/3/device/\(device)",
        ], environment: [:])
        #expect(push.stdout == "200", "\(push.stdout) \(push.stderr)")
        mock.terminate()
        _ = try await onOwnThread { mock.waitUntilExit() }
        let line = try String(contentsOf: recordFile, encoding: .utf8).split(separator: "\n").first ?? ""
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["topic"] as? String == "com.example.certapp")
        #expect(object["auth"] as? [String: String] == ["kind": "certificate", "topic": "com.example.certapp", "team": "CERTTEAM01"])
    }

    /// apns-mock started with `arguments`, and its banner ("apns-mock listening on
    /// 127.0.0.1:PORT ca=… team=… key=… private-key=…"), read within 10 s.
    private func startMock(_ arguments: [String]) async throws -> (Process, String) {
        let mock = Process()
        mock.executableURL = BuiltProducts.executable("apns-mock")!
        mock.arguments = arguments
        let out = Pipe()
        mock.standardOutput = out
        try mock.run()
        let output = out.fileHandleForReading
        let banner = try await onOwnThread {
            var banner = ""
            let started = ContinuousClock.now + .seconds(10)
            while !banner.contains("\n"), ContinuousClock.now < started {
                banner += String(decoding: output.availableData, as: UTF8.self)
            }
            return banner
        }
        return (mock, banner)
    }
}
