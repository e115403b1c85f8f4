import Foundation

/// The real `openssl` program, for the files providers make with it: `openssl pkcs12 -export`
/// is how a certificate and key from Apple's portal usually become the `.p12` a relay is given.
/// Blocking (a child process): call it through `onOwnThread`.
enum OpenSSLTool {
    static let path = "/usr/bin/openssl"

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `openssl` with `arguments`; returns its standard output, throws on a non-zero exit.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let output = Pipe(), errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // Read before waiting, so a full pipe cannot stall the child.
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments.first ?? "") exited \(process.terminationStatus): \(String(decoding: err, as: UTF8.self))")
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `openssl pkcs12 -export -in cert.pem -inkey key.pem -out <name>.p12 -passout pass:<password>`
    /// in `directory`; returns the `.p12`'s path.
    static func exportPKCS12(certificatePEM: String, privateKeyPEM: String, password: String,
                             name: String = "push", in directory: URL) throws -> URL {
        let certificate = directory.appendingPathComponent("\(name)-cert.pem")
        let key = directory.appendingPathComponent("\(name)-key.pem")
        let p12 = directory.appendingPathComponent("\(name).p12")
        try certificatePEM.write(to: certificate, atomically: true, encoding: .utf8)
        try privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)
        try run(["pkcs12", "-export", "-in", certificate.path, "-inkey", key.path, "-out", p12.path,
                 "-passout", "pass:\(password)"])
        return p12
    }

    /// The certificate and the unencrypted key inside a `.p12`, as PEM texts.
    static func readPKCS12(_ p12: URL, password: String) throws -> (certificatePEM: String, privateKeyPEM: String) {
        let certificate = try run(["pkcs12", "-in", p12.path, "-passin", "pass:\(password)", "-clcerts", "-nokeys"])
        let key = try run(["pkcs12", "-in", p12.path, "-passin", "pass:\(password)", "-nocerts", "-nodes"])
        return (certificate, key)
    }

    /// A fresh private directory, removed by the caller.
    static func scratchDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mockapns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        return directory
    }
}
