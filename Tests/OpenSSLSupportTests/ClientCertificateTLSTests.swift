import Foundation
import Testing
import OpenSSLSupport
import CertificateSupport

/// The DER inside a one-certificate PEM text.
func derOfPEM(_ pem: String) -> [UInt8] {
    let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
    return Array(Data(base64Encoded: body) ?? Data())
}

@Suite("TLS client certificates: the server asks, verifies against its CA, and shows the peer's")
struct ClientCertificateTLSTests {
    static let certificates = Result { try TestCertificates.make() }
    static let now = Int64(Date().timeIntervalSince1970)

    func server(askingForClientCertificates: Bool = true) throws -> TLSSession {
        let certificates = try Self.certificates.get()
        let context = try TLSContext.server(certificateChainPEM: certificates.certificatePEM,
                                            privateKeyPEM: certificates.privateKeyPEM,
                                            clientCertificateCAPEM: askingForClientCertificates ? certificates.caPEM : nil)
        return try TLSSession(serverContext: context)
    }

    func client(presenting certificate: PushClientCertificate?) throws -> TLSSession {
        let caPEM = try Self.certificates.get().caPEM
        let context = try certificate.map {
            try TLSContext.client(trustSystemStore: false, extraCAPEM: caPEM, clientIdentity: .pem(certificate: $0.certificatePEM, key: $0.privateKeyPEM))
        } ?? TLSContext.client(trustSystemStore: false, extraCAPEM: caPEM)
        return try TLSSession(context: context, serverName: "localhost")
    }

    /// The handshake, then one byte each way, so a TLS 1.3 client hears the server's verdict on
    /// its certificate (sent after the client's side of the handshake is done). Returns each
    /// side's first error.
    func exchange(client: TLSSession, server: TLSSession) -> (client: TLSError?, server: TLSError?) {
        let result = runHandshake(client: client, server: server)
        var clientError = result.client.error, serverError = result.server.error
        if clientError == nil {
            do {
                try [UInt8(1)].withUnsafeBytes { try client.writePlaintext($0) }
                _ = try receive(1, on: server, from: client, rounds: 5)
            } catch let error as TLSError {
                serverError = serverError ?? error
            } catch {}
            do {
                _ = try receive(1, on: client, from: server, rounds: 5)
            } catch let error as TLSError {
                clientError = error
            } catch {}
        }
        return (clientError, serverError)
    }

    @Test("a client without a certificate still gets in, and the server sees none")
    func noCertificateIsOptional() throws {
        let (client, server) = (try client(presenting: nil), try server())
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished && result.server.isEstablished)
        #expect(server.peerCertificateDER == nil)
    }

    @Test("a certificate the CA signed is verified and its DER is what the server reads")
    func validCertificate() throws {
        let certificate = try Self.certificates.get().issuePushClientCertificate(bundleID: "com.example.app", teamID: "TEAM123456")
        let (client, server) = (try client(presenting: certificate), try server())
        #expect(server.peerCertificateDER == nil, "nothing before the handshake")
        let result = runHandshake(client: client, server: server)
        try #require(result.client.isEstablished && result.server.isEstablished, "\(String(describing: result.server.error))")
        let der = try #require(server.peerCertificateDER)
        #expect(der == derOfPEM(certificate.certificatePEM))
        #expect(client.peerCertificateDER == derOfPEM(try Self.certificates.get().certificatePEM))
    }

    @Test("a server not asking for client certificates reads none, even from a client that has one")
    func notAsked() throws {
        let certificate = try Self.certificates.get().issuePushClientCertificate(bundleID: "com.example.app", teamID: "TEAM123456")
        let (client, server) = (try client(presenting: certificate), try server(askingForClientCertificates: false))
        let result = runHandshake(client: client, server: server)
        #expect(result.client.isEstablished && result.server.isEstablished)
        #expect(server.peerCertificateDER == nil)
    }

    @Test("an expired client certificate ends the handshake with a certificate_expired alert")
    func expiredCertificate() throws {
        let certificate = try Self.certificates.get().issuePushClientCertificate(
            bundleID: "com.example.app", teamID: "TEAM123456", notBefore: Self.now - 30 * 86_400, notAfter: Self.now - 86_400)
        let (client, server) = (try client(presenting: certificate), try server())
        let (clientError, serverError) = exchange(client: client, server: server)
        let refused = try #require(serverError)
        #expect(refused.message.contains("certificate verify failed"), "\(refused.message)")
        let heard = try #require(clientError)
        #expect(heard.message.contains("certificate expired"), "\(heard.message)")
        #expect(server.peerCertificateDER == nil)
    }

    @Test("a client certificate from another CA ends the handshake with an unknown_ca alert")
    func otherCA() throws {
        let certificate = try TestCertificates.make().issuePushClientCertificate(bundleID: "com.example.app", teamID: "TEAM123456")
        let (client, server) = (try client(presenting: certificate), try server())
        let (clientError, serverError) = exchange(client: client, server: server)
        #expect(serverError != nil)
        let heard = try #require(clientError)
        #expect(heard.message.contains("unknown ca"), "\(heard.message)")
        #expect(server.peerCertificateDER == nil)
    }

    @Test("a certificate without clientAuth usage (the server's own leaf) is refused though the CA signed it")
    func serverLeafIsNoClientCertificate() throws {
        let certificates = try Self.certificates.get()
        let leaf = try TLSContext.client(trustSystemStore: false, extraCAPEM: certificates.caPEM, clientIdentity: .pem(certificate: certificates.certificatePEM, key: certificates.privateKeyPEM))
        let (client, server) = (try TLSSession(context: leaf, serverName: "localhost"), try server())
        let (clientError, serverError) = exchange(client: client, server: server)
        #expect(serverError != nil)
        #expect(clientError?.message.contains("unsupported certificate") == true, "\(String(describing: clientError))")
        #expect(server.peerCertificateDER == nil)
    }

    @Test("a client key that does not match its certificate is refused when the context is made")
    func mismatchedKey() throws {
        let certificates = try Self.certificates.get()
        let one = try certificates.issuePushClientCertificate(bundleID: "com.example.app", teamID: "TEAM123456")
        let other = try certificates.issuePushClientCertificate(bundleID: "com.example.app", teamID: "TEAM123456")
        #expect(throws: TLSError.self) {
            try TLSContext.client(clientIdentity: .pem(certificate: one.certificatePEM, key: other.privateKeyPEM))
        }
    }
}
