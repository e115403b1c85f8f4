import Foundation
import Testing
@testable import OpenSSLSupport
import CertificateSupport
internal import COpenSSL

@Suite("TLS sessions over memory BIOs")
struct TLSSessionTests {
    static let certificates = Result { try TestCertificates.make() }

    func certificates() throws -> TestCertificates {
        try Self.certificates.get()
    }

    func serverContext(alpn: [String] = ["h2"]) throws -> TLSContext {
        let certificates = try certificates()
        return try TLSContext.server(certificateChainPEM: certificates.certificatePEM,
                                     privateKeyPEM: certificates.privateKeyPEM, alpn: alpn)
    }

    func clientContext(alpn: [String] = ["h2"], caPEM: String? = nil) throws -> TLSContext {
        try TLSContext.client(alpn: alpn, trustSystemStore: false, extraCAPEM: caPEM ?? certificates().caPEM)
    }

    func connectedPair() throws -> (client: TLSSession, server: TLSSession) {
        let client = try TLSSession(context: clientContext(), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        try #require(result.client.isEstablished, "client: \(String(describing: result.client.error))")
        try #require(result.server.isEstablished, "server: \(String(describing: result.server.error))")
        return (client, server)
    }

    @Test("the handshake negotiates h2 on both sides")
    func handshakeNegotiatesH2() throws {
        let (client, server) = try connectedPair()
        #expect(client.negotiatedALPN == "h2")
        #expect(server.negotiatedALPN == "h2")
    }

    @Test("a certificate is verified for an IP address literal", arguments: ["127.0.0.1", "::1"])
    func ipAddressVerifies(address: String) throws {
        let client = try TLSSession(context: clientContext(), serverName: address)
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished, "\(String(describing: result.client.error))")
    }

    @Test("data flows both ways, small and 1 MiB")
    func dataFlowsBothWays() throws {
        let (client, server) = try connectedPair()

        let hello = Array("GET / HTTP/2 preface".utf8)
        try hello.withUnsafeBytes { try client.writePlaintext($0) }
        #expect(try receive(hello.count, on: server, from: client) == hello)

        var generator = SystemRandomNumberGenerator()
        let big = (0..<(1 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try big.withUnsafeBytes { try server.writePlaintext($0) }
        let back = try receive(big.count, on: client, from: server)
        #expect(back.count == big.count)
        #expect(back == big)
        #expect(server.takeAllCiphertext().isEmpty)

        try big.withUnsafeBytes { try client.writePlaintext($0) }
        #expect(try receive(big.count, on: server, from: client) == big)
    }

    @Test("ciphertext taken in small pieces into raw memory arrives whole and in order")
    func ciphertextInPieces() throws {
        let (client, server) = try connectedPair()
        var generator = SystemRandomNumberGenerator()
        let message = (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        try message.withUnsafeBytes { try client.writePlaintext($0) }
        let piece = UnsafeMutableRawBufferPointer.allocate(byteCount: 1000, alignment: 1)
        defer { piece.deallocate() }
        // No room: nothing is taken, and the ciphertext still waits (the pieces below carry all of it).
        #expect(client.takeCiphertext(into: UnsafeMutableRawBufferPointer(rebasing: piece[..<0])) == 0)
        var pieces = 0, sizes: [Int] = []
        while true {
            let got = client.takeCiphertext(into: piece)
            sizes.append(got)
            server.feed(UnsafeRawBufferPointer(rebasing: piece[..<got]))
            pieces += 1
            if got < piece.count { break }
        }
        #expect(pieces > 50)
        #expect(sizes.dropLast().allSatisfy { $0 == 1000 })
        #expect(client.takeCiphertext(into: piece) == 0)
        var received: [UInt8] = []
        #expect(try server.readPlaintext(into: &received) == .ok)
        #expect(received == message)
    }

    @Test("close_notify is reported as .closed")
    func closeNotifyIsClosed() throws {
        let (client, server) = try connectedPair()
        var plaintext: [UInt8] = []
        transfer(from: server, to: client)
        #expect(try client.readPlaintext(into: &plaintext) == .ok)
        let last = Array("bye".utf8)
        try last.withUnsafeBytes { try client.writePlaintext($0) }
        client.shutdown()
        #expect(transfer(from: client, to: server) > 0)
        var received: [UInt8] = []
        #expect(try server.readPlaintext(into: &received) == .closed)
        #expect(received == last)
        #expect(try server.readPlaintext(into: &received) == .closed)
    }

    /// Leaves an entry on this thread's OpenSSL error queue, as a failed parse elsewhere would.
    func leaveStaleError() throws {
        let garbage: [UInt8] = [0x30, 0x82, 0xFF]
        garbage.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            #expect(d2i_X509(nil, &cursor, buffer.count) == nil)
        }
        try #require(ERR_peek_error() != 0, "the failed parse queued no error")
    }

    @Test("an error left on the thread's queue does not fail later reads and writes, and clearQueue empties it")
    func staleErrorIsCleared() throws {
        let (client, server) = try connectedPair()
        var plaintext: [UInt8] = []
        // Nothing was fed: SSL_read wants more input, which a stale entry would turn into a failure.
        try leaveStaleError()
        #expect(try client.readPlaintext(into: &plaintext) == .ok)
        try leaveStaleError()
        let hello = Array("hello".utf8)
        try hello.withUnsafeBytes { try client.writePlaintext($0) }
        #expect(try receive(hello.count, on: server, from: client) == hello)

        try leaveStaleError()
        OpenSSLErrorQueue.clearQueue()
        #expect(ERR_peek_error() == 0)
        OpenSSLErrorQueue.clearQueue()
        #expect(ERR_peek_error() == 0)
    }

    @Test("a client trusting a different CA fails with certificateVerificationFailed")
    func wrongCAFails() throws {
        let other = try TestCertificates.make()
        let client = try TLSSession(context: clientContext(caPEM: other.caPEM), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        let error = try #require(result.client.error)
        #expect(error.code == .certificateVerificationFailed)
        #expect(error.verifyResult == Int(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY))
        #expect(error.message.contains("unable to get local issuer certificate"))
        // The layer that knows the settings (APNs's APNsConnectFailure) names them; this one only says what failed.
        #expect(error.message.contains("the CA that issued it is not trusted") && !error.message.contains("APNS_CA_FILE"))
        #expect(result.server.error != nil, "the server hears the client's alert")
        #expect(throws: TLSError.self) { try client.handshake() }
    }

    @Test("a client trusting only the system store refuses the throw-away CA")
    func systemStoreRefusesTestCA() throws {
        let client = try TLSSession(context: TLSContext.client(), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        #expect(result.client.error?.code == .certificateVerificationFailed)
    }

    @Test("a wrong host name or IP address fails with hostnameMismatch", arguments: ["api.push.apple.com", "127.0.0.2"])
    func wrongHostFails(name: String) throws {
        let client = try TLSSession(context: clientContext(), serverName: name)
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        let error = try #require(result.client.error)
        #expect(error.code == .hostnameMismatch)
        #expect([Int(X509_V_ERR_HOSTNAME_MISMATCH), Int(X509_V_ERR_IP_ADDRESS_MISMATCH)].contains(error.verifyResult))
        #expect(error.message.contains(name))
    }

    @Test("a server without ALPN leaves the client with noALPN")
    func serverWithoutALPN() throws {
        let client = try TLSSession(context: clientContext(), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext(alpn: []))
        let result = runHandshake(client: client, server: server)
        let error = try #require(result.client.error)
        #expect(error.code == .noALPN)
        #expect(error.verifyResult == 0, "the certificate verified; only the protocol is missing")
        #expect(error.message.contains("did not offer h2"))
        #expect(throws: TLSError.self) { try client.writePlaintext(UnsafeRawBufferPointer(start: nil, count: 0)) }
    }

    @Test("a server speaking only http/1.1 refuses an h2 client: both see noALPN")
    func serverWithOtherALPN() throws {
        let client = try TLSSession(context: clientContext(), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext(alpn: ["http/1.1"]))
        let result = runHandshake(client: client, server: server)
        #expect(result.client.error?.code == .noALPN)
        #expect(result.server.error?.code == .noALPN)
    }

    @Test("a client offering no ALPN connects to an h2 server with no protocol chosen")
    func clientWithoutALPN() throws {
        let client = try TLSSession(context: clientContext(alpn: []), serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished)
        #expect(result.server.isEstablished)
        #expect(server.negotiatedALPN == nil)
    }

    @Test("writing before the handshake is refused with notEstablished")
    func writeBeforeHandshake() throws {
        let client = try TLSSession(context: clientContext(), serverName: "localhost")
        let bytes: [UInt8] = [1, 2, 3]
        let error = try #require(throws: TLSError.self) { try bytes.withUnsafeBytes { try client.writePlaintext($0) } }
        #expect(error.code == .notEstablished)
    }

    @Test("garbage from the network fails the server's handshake")
    func garbageFailsHandshake() throws {
        let server = try TLSSession(serverContext: serverContext())
        let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        garbage.withUnsafeBytes { server.feed($0) }
        let error = try #require(throws: TLSError.self) { try server.handshake() }
        #expect(error.code == .handshakeFailed)
    }

    @Test("sessions refuse a context of the wrong role")
    func wrongRole() throws {
        #expect(throws: TLSError.self) { try TLSSession(serverContext: clientContext()) }
        #expect(throws: TLSError.self) { try TLSSession(context: serverContext(), serverName: "localhost") }
    }

    @Test("a CA file (as APNS_CA_FILE names it) is trusted")
    func caFileIsTrusted() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-support-ca-\(UInt64.random(in: 0...UInt64.max)).pem")
        try certificates().caPEM.write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        let context = try TLSContext.client(trustSystemStore: false, extraCAFile: url.path)
        let client = try TLSSession(context: context, serverName: "localhost")
        let server = try TLSSession(serverContext: serverContext())
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished, "\(String(describing: result.client.error))")
    }

    @Test("Debian's trust store is read root by root as handshakes need them, not parsed whole into each context")
    func systemStoreIsNotPreloaded() throws {
        // No SSL_CERT_FILE or SSL_CERT_DIR: the store where Debian keeps it.
        let context = try TLSContext.client(trustSystemStore: true, systemStoreEnvironment: [:])
        #expect(context.trustStoreCount == 0)
    }

    @Test("SSL_CERT_FILE, when set, is trusted whole, as OpenSSL's defaults trust it")
    func certFileIsTrusted() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-support-bundle-\(UInt64.random(in: 0...UInt64.max)).pem")
        try certificates().caPEM.write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        let context = try TLSContext.client(trustSystemStore: true, systemStoreEnvironment: ["SSL_CERT_FILE": url.path])
        #expect(context.trustStoreCount == 1)
        let result = runHandshake(client: try TLSSession(context: context, serverName: "localhost"),
                                  server: try TLSSession(serverContext: serverContext()))
        #expect(result.client.isEstablished, "\(String(describing: result.client.error))")
    }

    @Test("a directory without hash links (only a bundle copied in) falls back to the default bundle, read whole")
    func directoryWithoutLinksFallsBack() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-support-nolinks-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        try certificates().caPEM.write(to: directory.appendingPathComponent("ca-certificates.crt"), atomically: true, encoding: .utf8)
        #expect(!TLSContext.holdsHashLinks(directory.path))
        let bundle = try String(contentsOfFile: String(cString: X509_get_default_cert_file()), encoding: .utf8)
        let roots = bundle.components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
        try #require(roots > 0, "the machine has Debian's bundle (ca-certificates)")
        let context = try TLSContext.client(trustSystemStore: true, systemStoreEnvironment: ["SSL_CERT_DIR": directory.path])
        #expect(context.trustStoreCount == roots)
    }

    @Test("a root in the hashed directory SSL_CERT_DIR names verifies the server, and only it is then held")
    func systemStoreDirectoryIsTrusted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("openssl-support-certs-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        let handshake = { () throws -> Bool in
            let context = try TLSContext.client(trustSystemStore: true, systemStoreEnvironment: ["SSL_CERT_DIR": directory.path])
            let result = runHandshake(client: try TLSSession(context: context, serverName: "localhost"),
                                      server: try TLSSession(serverContext: self.serverContext()))
            #expect(context.trustStoreCount == (result.client.isEstablished ? 1 : 0))
            return result.client.isEstablished
        }
        // The name OpenSSL looks a root up by: the hash of its subject, then a sequence number
        // (what Debian's update-ca-certificates writes into /etc/ssl/certs). Under another
        // root's name the CA is not found.
        let caPEM = try certificates().caPEM
        try caPEM.write(to: directory.appendingPathComponent("00000000.0"), atomically: true, encoding: .utf8)
        #expect(TLSContext.holdsHashLinks(directory.path))
        #expect(try !handshake(), "a root filed under another name is not found")
        var bytes = Array(caPEM.utf8)
        let hash = try bytes.withUnsafeMutableBytes { raw -> UInt in
            let bio = try #require(BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)))
            defer { BIO_free(bio) }
            let ca = try #require(PEM_read_bio_X509(bio, nil, nil, nil))
            defer { X509_free(ca) }
            return X509_subject_name_hash(ca)
        }
        let name = String(repeating: "0", count: 8 - String(hash, radix: 16).count) + String(hash, radix: 16) + ".0"
        try caPEM.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        #expect(try handshake())
    }

    @Test("a server chain with more than one certificate is accepted and verifies")
    func chainWithIntermediate() throws {
        let certificates = try certificates()
        let context = try TLSContext.server(certificateChainPEM: certificates.certificatePEM + certificates.caPEM,
                                            privateKeyPEM: certificates.privateKeyPEM)
        let client = try TLSSession(context: clientContext(), serverName: "localhost")
        let server = try TLSSession(serverContext: context)
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished, "\(String(describing: result.client.error))")
    }

    @Test("a missing CA file is a clear configuration error")
    func missingCAFile() throws {
        let error = try #require(throws: TLSError.self) {
            try TLSContext.client(extraCAFile: "/nonexistent/apns-ca.pem")
        }
        #expect(error.code == .badConfiguration)
        #expect(error.message.contains("/nonexistent/apns-ca.pem"))
    }

    @Test("a key that does not match the certificate is refused")
    func mismatchedKey() throws {
        let a = try TestCertificates.make()
        let b = try TestCertificates.make()
        let error = try #require(throws: TLSError.self) {
            try TLSContext.server(certificateChainPEM: a.certificatePEM, privateKeyPEM: b.privateKeyPEM)
        }
        #expect(error.code == .keyMismatch)
    }
}
