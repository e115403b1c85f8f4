#if canImport(Glibc)
import Glibc
#endif
import CertificateSupport
import Foundation
import OpenSSLSupport
import Testing
@testable import HTTPServer

/// A certificate made by the test CA, written where an HTTPS server reads it.
struct CertificateFiles {
    let directory: URL
    let certificates: TestCertificates

    var certificatePath: String { directory.appendingPathComponent("cert.pem").path }
    var keyPath: String { directory.appendingPathComponent("key.pem").path }
    var caPath: String { directory.appendingPathComponent("ca.pem").path }

    /// A fresh CA and leaf (for localhost and 127.0.0.1) in a new directory.
    static func make() throws -> CertificateFiles {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("https-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let files = CertificateFiles(directory: directory, certificates: try TestCertificates.make())
        try files.write(files.certificates)
        return files
    }

    /// Writes `certificates` over the files (the renewal a certificate tool does).
    func write(_ certificates: TestCertificates) throws {
        try certificates.certificatePEM.write(toFile: certificatePath, atomically: true, encoding: .utf8)
        try certificates.privateKeyPEM.write(toFile: keyPath, atomically: true, encoding: .utf8)
        try certificates.caPEM.write(toFile: caPath, atomically: true, encoding: .utf8)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    /// A plain test configuration serving these files.
    func configuration(_ base: HTTPServerConfiguration = testConfiguration()) throws -> HTTPServerConfiguration {
        var configuration = base
        configuration.tls = try HTTPServerTLS(certificatePath: certificatePath, keyPath: keyPath)
        return configuration
    }
}

/// Starts an HTTPS server on fresh certificate files, runs `body`, stops it and removes the files.
func withHTTPSServer(
    _ base: HTTPServerConfiguration = testConfiguration(),
    responder: any HTTPResponder = EchoResponder(),
    _ body: (HTTPServer, CertificateFiles) async throws -> Void
) async throws {
    let files = try CertificateFiles.make()
    defer { files.remove() }
    try await withServer(try files.configuration(base), responder: responder) { server in
        try await body(server, files)
    }
}

/// A blocking TLS client over `TestClient`: our own `TLSSession` pumped by hand, so a test can
/// stop a handshake half-way or send what it likes.
final class TLSTestClient: @unchecked Sendable {
    let raw: TestClient
    let session: TLSSession
    private var plaintext: [UInt8] = []
    private var ciphertext = [UInt8](repeating: 0, count: 64 * 1024)

    /// Connects (no handshake yet), trusting `caPEM`, for the name localhost.
    init(port: Int, caPEM: String, timeout: Double = 5) throws {
        raw = try TestClient(port: port, timeout: timeout)
        let context = try TLSContext.client(alpn: ["http/1.1"], trustSystemStore: false, extraCAPEM: caPEM)
        session = try TLSSession(context: context, serverName: "localhost")
    }

    /// The ciphertext the session has to send now.
    func pendingCiphertext() -> [UInt8] {
        var out: [UInt8] = []
        while true {
            let got = ciphertext.withUnsafeMutableBytes { session.takeCiphertext(into: $0) }
            out += ciphertext[..<got]
            if got < ciphertext.count { return out }
        }
    }

    /// The first ClientHello flight, unsent.
    func clientHello() throws -> [UInt8] {
        _ = try session.handshake()
        return pendingCiphertext()
    }

    /// Runs the handshake to its end.
    func handshake() throws {
        while true {
            let done = try session.handshake()
            let out = pendingCiphertext()
            if !out.isEmpty { raw.send(out) }
            if done { return }
            guard let bytes = raw.receive() else { throw ClientError(description: "the server closed during the handshake") }
            bytes.withUnsafeBytes { session.feed($0) }
        }
    }

    func send(_ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { try session.writePlaintext($0) }
        raw.send(pendingCiphertext())
    }

    /// The next response; nil when the connection closed or timed out first.
    func readResponse() -> WireResponse? {
        readWireResponse(&plaintext) { buffer in
            guard let bytes = raw.receive() else { return false }
            bytes.withUnsafeBytes { session.feed($0) }
            do {
                let before = buffer.count
                let result = try session.readPlaintext(into: &buffer)
                return buffer.count > before || result == .ok
            } catch {
                return false
            }
        }
    }
}

/// Runs a program to its end; its standard output and error, and its exit status.
func run(_ executable: String, _ arguments: [String], input: String? = nil) throws -> (out: String, err: String, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let out = Pipe(), err = Pipe(), stdin = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(Data(input.utf8)) }
    try stdin.fileHandleForWriting.close()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    let errData = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self), process.terminationStatus)
}

/// A certificate's serial number in upper-case hex, as Python's `getpeercert()` writes it.
func serialNumber(ofCertificateAt path: String) throws -> String {
    let result = try run("openssl", ["x509", "-noout", "-serial", "-in", path])
    return result.out.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "serial=", with: "").uppercased()
}
