import Testing
@testable import HTTPServer

@Suite("HTTP server audit")
struct HTTPServerAuditTests {
    /// RFC 9110 §9.3.2: a HEAD answer has no content. A body would be read as the start of the
    /// next answer on a kept connection (a proxy's health check would garble the next push).
    @Test("a HEAD answer carries no body, so the next answer on the connection stays framed")
    func headHasNoBody() async throws {
        try await withServer { server in
            let port = server.port
            let (head, next) = try await blocking {
                let client = try TestClient(port: port)
                client.send("HEAD /h HTTP/1.1\r\nHost: r\r\n\r\nGET /g HTTP/1.1\r\nHost: r\r\n\r\n")
                return (client.readResponse(), client.readResponse())
            }
            #expect(head?.status == 200)
            #expect(head?.body == [])
            #expect(next?.status == 200)
            #expect(next?.text == "GET /g ")
        }
    }
}
