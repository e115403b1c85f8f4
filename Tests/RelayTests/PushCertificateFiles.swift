import Foundation

/// Push certificates as operators hold them, made with the `openssl` command line: a key, a
/// certificate whose subject carries the bundle id as `UID` (as Apple's do), and a `.p12`
/// exported from them with `openssl pkcs12 -export`. Self-signed unless a CA is given.
struct PushCertificateFiles {
    let directory: String
    var p12: String { directory + "/cert.p12" }
    var certificate: String { directory + "/cert.pem" }
    var key: String { directory + "/key.pem" }
    var p12Base64: String { (try? Data(contentsOf: URL(fileURLWithPath: p12)).base64EncodedString()) ?? "" }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// - Parameters:
    ///   - uid: the bundle id in the subject; nil leaves `UID` out.
    ///   - days: validity from now.
    ///   - ca: a PEM certificate and key to sign with (the emulator's test CA); nil: self-signed.
    init(uid: String?, team: String = "TEAM123456", days: Int = 365, password: String = "secret",
         ca: (certificate: String, key: String)? = nil) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-cert-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let subject = (uid.map { "/UID=\($0)" } ?? "") + "/CN=Apple Push Services: \(uid ?? "none")/OU=\(team)/O=Example/C=US"
        try Self.openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key])
        if let ca {
            try ca.certificate.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            try ca.key.write(toFile: directory + "/ca.key", atomically: true, encoding: .utf8)
            try "extendedKeyUsage=clientAuth\n".write(toFile: directory + "/ext.cnf", atomically: true, encoding: .utf8)
            try Self.openssl(["req", "-new", "-key", key, "-subj", subject, "-out", directory + "/cert.csr"])
            try Self.openssl(["x509", "-req", "-in", directory + "/cert.csr", "-CA", directory + "/ca.pem", "-CAkey", directory + "/ca.key",
                              "-CAcreateserial", "-days", String(days), "-extfile", directory + "/ext.cnf", "-out", certificate])
        } else {
            try Self.openssl(["req", "-x509", "-new", "-key", key, "-subj", subject, "-days", String(days), "-out", certificate])
        }
        try Self.openssl(["pkcs12", "-export", "-in", certificate, "-inkey", key, "-out", p12, "-passout", "pass:\(password)"])
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }

    static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }
}
