#if canImport(Glibc)
import Glibc
#endif
import CertificateSupport
import Foundation
import OpenSSLSupport
import Testing
@testable import HTTPServer

@Suite("HTTPS server on loopback: clients, certificates, renewal", .serialized)
struct HTTPSServerTests {
    @Test("curl verifies the certificate against the CA by its name, and keeps one connection for two requests")
    func curlKeepAlive() async throws {
        try await withHTTPSServer { server, files in
            let port = server.port
            let url = "https://localhost:\(port)"
            let result = try await blocking {
                try run("curl", ["-sS", "--http1.1", "--max-time", "10", "--cacert", files.caPath,
                                 "--resolve", "localhost:\(port):127.0.0.1",
                                 "-w", "\n%{http_code} %{num_connects} %{ssl_verify_result}\n",
                                 "\(url)/one", "\(url)/two"])
            }
            #expect(result.status == 0, "curl: \(result.err)")
            let lines = result.out.split(separator: "\n").map(String.init)
            #expect(lines == ["GET /one ", "200 1 0", "GET /two ", "200 0 0"], "the second request made no new connection")
        }
    }

    @Test("Python's http.client, as Mastodon's sender connects: a verifying ssl context, SNI, several POSTs on one connection")
    func pythonKeepAlivePosts() async throws {
        let script = """
            import http.client, socket, ssl, sys
            port, ca = int(sys.argv[1]), sys.argv[2]
            context = ssl.create_default_context(cafile=ca)
            connection = http.client.HTTPSConnection("localhost", port, context=context, timeout=5)
            connection.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
            ports = set()
            for i in range(5):
                connection.request("POST", "/push/%d" % i, body=b"x" * (100 * i), headers={"Content-Encoding": "aes128gcm", "TTL": "60"})
                response = connection.getresponse()
                body = response.read()
                ports.add(connection.sock.getsockname()[1])
                print(response.status, len(body), body[:8].decode())
            print("connections", len(ports), connection.sock.version())
            """
        try await withHTTPSServer { server, files in
            let port = server.port
            let result = try await blocking { try run("python3", ["-c", script, "\(port)", files.caPath]) }
            #expect(result.status == 0, "python: \(result.err)")
            let lines = result.out.split(separator: "\n").map(String.init)
            #expect(lines.count == 6)
            for i in 0..<5 where i < lines.count {
                let expectedBody = "POST /push/\(i) ".utf8.count + 100 * i
                #expect(lines[i] == "200 \(expectedBody) POST /pu")
            }
            #expect(lines.last?.hasPrefix("connections 1 TLSv1.") == true, "\(lines.last ?? "")")
        }
    }

    @Test("a renewed certificate serves new connections after reload; a connection already open keeps working")
    func renewal() async throws {
        let script = """
            import http.client, socket, ssl, sys
            port, ca = int(sys.argv[1]), sys.argv[2]
            context = ssl.create_default_context(cafile=ca)
            def connect():
                c = http.client.HTTPSConnection("localhost", port, context=context, timeout=5)
                c.sock = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
                return c
            def get(c, path):
                c.request("GET", path)
                r = c.getresponse()
                r.read()
                return r.status
            a = connect()
            print("old", a.sock.getpeercert()["serialNumber"], get(a, "/a1"), flush=True)
            print(int(ssl.cert_time_to_seconds(a.sock.getpeercert()["notAfter"])), flush=True)
            sys.stdin.readline()
            b = connect()
            print("new", b.sock.getpeercert()["serialNumber"], get(b, "/b1"), flush=True)
            print("old-again", a.sock.getpeercert()["serialNumber"], get(a, "/a2"), flush=True)
            """
        try await withHTTPSServer { server, files in
            let port = server.port
            let renewed = try TestCertificates.make()
            let bothCAs = files.directory.appendingPathComponent("both-cas.pem").path
            try (files.certificates.caPEM + renewed.caPEM).write(toFile: bothCAs, atomically: true, encoding: .utf8)
            let oldSerial = try serialNumber(ofCertificateAt: files.certificatePath)

            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script, "\(port)", bothCAs]
            let output = Pipe(), input = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardInput = input
            process.standardError = errors
            try process.run()
            defer { if process.isRunning { process.terminate() } }
            let first = try await blocking { readLine(output.fileHandleForReading) }
            #expect(first == "old \(oldSerial) 200")
            let notAfter = try await blocking { readLine(output.fileHandleForReading) }
            #expect(server.tls?.certificateNotAfter.map(String.init) == notAfter, "the notAfter the client saw")

            try files.write(renewed)
            try #require(server.tls).reload()
            let newSerial = try serialNumber(ofCertificateAt: files.certificatePath)
            #expect(newSerial != oldSerial)
            input.fileHandleForWriting.write(Data("go\n".utf8))
            let rest = try await blocking { () -> String in
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                return String(decoding: data, as: UTF8.self)
            }
            let problems = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus == 0, "python: \(problems)")
            #expect(rest.split(separator: "\n").map(String.init) == ["new \(newSerial) 200", "old-again \(oldSerial) 200"])
            #expect(server.tls?.certificateNotAfter != nil)
        }
    }

    @Test("a reload with a key that does not match throws and keeps serving the old certificate")
    func brokenReload() async throws {
        try await withHTTPSServer { server, files in
            let port = server.port
            let tls = try #require(server.tls)
            let other = try TestCertificates.make()
            try other.privateKeyPEM.write(toFile: files.keyPath, atomically: true, encoding: .utf8)
            #expect(throws: HTTPServerTLSError(.keyMismatch, "")) { try tls.reload() }
            try "not a key".write(toFile: files.keyPath, atomically: true, encoding: .utf8)
            #expect(throws: HTTPServerTLSError(.notPEM, "")) { try tls.reload() }

            let caPEM = files.certificates.caPEM
            let response = try await blocking {
                let client = try TLSTestClient(port: port, caPEM: caPEM)
                try client.handshake()
                try client.send("GET /still HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return client.readResponse()
            }
            #expect(response?.text == "GET /still ", "the old certificate, which the old CA verifies, is still served")

            // Fixed files load, and the old CA no longer verifies what new connections get.
            try files.write(other)
            try tls.reload()
            let (oldCA, newCA) = try await blocking { () -> (Bool, WireResponse?) in
                let stale = try TLSTestClient(port: port, caPEM: caPEM)
                let staleFails = (try? stale.handshake()) == nil
                let fresh = try TLSTestClient(port: port, caPEM: other.caPEM)
                try fresh.handshake()
                try fresh.send("GET /renewed HTTP/1.1\r\nHost: localhost\r\n\r\n")
                return (staleFails, fresh.readResponse())
            }
            #expect(oldCA)
            #expect(newCA?.text == "GET /renewed ")
        }
    }

    @Test("loading errors are one line naming the file and what is wrong")
    func loadingErrors() throws {
        let files = try CertificateFiles.make()
        defer { files.remove() }
        let missing = files.directory.appendingPathComponent("missing.pem").path
        func failure(_ certificate: String, _ key: String) -> HTTPServerTLSError? {
            do {
                _ = try HTTPServerTLS(certificatePath: certificate, keyPath: key)
                return nil
            } catch {
                return error
            }
        }
        let unreadable = failure(missing, files.keyPath)
        #expect(unreadable?.code == .unreadable)
        #expect(unreadable?.message == "cannot read the TLS certificate file \(missing): No such file or directory")
        let swapped = failure(files.keyPath, files.certificatePath)
        #expect(swapped?.code == .notPEM)
        #expect(swapped?.message.contains("the TLS certificate file \(files.keyPath) is not a PEM certificate") == true)
        #expect(swapped?.message.contains("swapped") == true)
        let directory = failure(files.certificatePath, files.directory.path)
        #expect(directory?.code == .unreadable)

        let other = try TestCertificates.make()
        let otherKey = files.directory.appendingPathComponent("other-key.pem").path
        try other.privateKeyPEM.write(toFile: otherKey, atomically: true, encoding: .utf8)
        let mismatch = failure(files.certificatePath, otherKey)
        #expect(mismatch?.code == .keyMismatch)
        #expect(mismatch?.message.hasPrefix("the TLS key file \(otherKey) does not match the certificate in \(files.certificatePath)") == true)

        let chain = files.directory.appendingPathComponent("chain.pem").path
        try (files.certificates.certificatePEM + files.certificates.caPEM).write(toFile: chain, atomically: true, encoding: .utf8)
        #expect(failure(chain, files.keyPath) == nil, "a chain, leaf first, loads")
        for error in [unreadable, swapped, directory, mismatch] {
            #expect(error.map { !$0.message.contains("\n") } == true)
        }
    }
}

/// One line from `handle` (without its line feed); what was read when it ended first.
func readLine(_ handle: FileHandle) -> String {
    var line: [UInt8] = []
    while true {
        let byte = handle.readData(ofLength: 1)
        guard let first = byte.first, first != 10 else { break }
        line.append(first)
    }
    return String(decoding: line, as: UTF8.self)
}
