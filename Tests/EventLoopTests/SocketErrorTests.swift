import Foundation
import Testing
@testable import EventLoop

@Suite("Socket errors as values")
struct SocketErrorTests {
    @Test("equality is on the code: the errno, the resolver's code and the words may differ")
    func equalityOnCode() {
        let refused = SocketError(code: .connectionRefused, errno: ECONNREFUSED, message: "connect to 127.0.0.1:1 failed")
        #expect(refused == SocketError(code: .connectionRefused, message: "another sentence"))
        #expect(refused != SocketError(code: .timedOut, errno: ECONNREFUSED, message: "connect to 127.0.0.1:1 failed"))
        #expect(SocketError(code: .hostNotFound, resolverCode: EAI_NONAME, message: "a")
                == SocketError(code: .hostNotFound, resolverCode: EAI_AGAIN, message: "b"))
    }

    @Test("an errno maps to its code and stays on the error")
    func fromErrno() {
        let error = SocketError.fromErrno(ECONNREFUSED, "connect to 127.0.0.1:1")
        #expect(error.code == .connectionRefused)
        #expect(error.errno == ECONNREFUSED)
        #expect(error.resolverCode == 0)
        #expect(SocketError.fromErrno(ENETUNREACH, "connect").code == .unreachable)
        #expect(SocketError.fromErrno(EIO, "connect").code == .system)
    }

    @Test("a name under .invalid does not resolve: hostNotFound with getaddrinfo's code")
    func unresolvableName() {
        guard case .failure(let error) = SocketAddress.resolve(host: "no-such-host.invalid", port: 443, passive: false) else {
            Issue.record("no-such-host.invalid resolved")
            return
        }
        #expect(error.code == .hostNotFound)
        // EAI_NONAME where a resolver answers, EAI_AGAIN where none can be reached.
        #expect([EAI_NONAME, EAI_AGAIN].contains(error.resolverCode), "\(error.resolverCode)")
        #expect(error.errno == 0)
    }
}
