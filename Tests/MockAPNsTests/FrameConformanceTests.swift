import Testing
import Foundation
import Glibc
import OpenSSLSupport
import MockAPNs
import TestWaits

// The emulator's HTTP/2 server against frame sequences written by hand, the way h2spec sends
// them: a blocking socket, a TLS client session, and raw frames (no nghttp2 on this side), so the
// answers are exactly what the server put on the wire. The blocking reads run on a thread of
// their own (`onOwnThread`), never on Swift's task pool, which the other suites share.

/// One HTTP/2 frame as read off the wire.
private struct Frame: Equatable {
    var type: UInt8
    var flags: UInt8
    var stream: UInt32
    var payload: [UInt8]

    static let data: UInt8 = 0x0, headers: UInt8 = 0x1, settings: UInt8 = 0x4, ping: UInt8 = 0x6
    static let goAway: UInt8 = 0x7, windowUpdate: UInt8 = 0x8

    var bytes: [UInt8] {
        let n = payload.count
        return [UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff), type, flags] + Self.word(stream) + payload
    }

    static func word(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24 & 0xff), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)]
    }

    /// The error code of a GOAWAY (after its last-stream-id).
    var goAwayCode: UInt32? {
        guard type == Self.goAway, payload.count >= 8 else { return nil }
        return payload[4..<8].reduce(0) { $0 << 8 | UInt32($1) }
    }

    /// A request HEADERS frame (END_STREAM | END_HEADERS) in HPACK literals without indexing, so
    /// no table state is shared with the server.
    static func request(stream: UInt32) -> Frame {
        var block: [UInt8] = []
        for (name, value) in [(":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + String(repeating: "ab", count: 32)),
                              (":authority", "localhost")] {
            block.append(0x00)
            block.append(UInt8(name.utf8.count)); block += Array(name.utf8)
            block.append(UInt8(value.utf8.count)); block += Array(value.utf8)
        }
        return Frame(type: headers, flags: 0x1 | 0x4, stream: stream, payload: block)
    }
}

/// What the server did after a sequence: the frames it sent, and whether it closed the connection.
private struct Answer {
    var frames: [Frame]
    var closed: Bool
}

/// A hand-driven TLS + HTTP/2 client on a blocking loopback socket.
// @unchecked: one test drives it, one call at a time (each awaited before the next), whichever
// thread the call runs on.
private final class RawClient: @unchecked Sendable {
    private let fd: Int32
    private let tls: TLSSession
    private var plaintext: [UInt8] = []
    private(set) var closed = false

    /// Connects and makes the TLS handshake (bounded: 5 s), on a thread of its own.
    static func connect(port: Int, caPEM: String) async throws -> RawClient {
        try await onOwnThread { try RawClient(port: port, caPEM: caPEM) }
    }

    private init(port: Int, caPEM: String) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        guard fd >= 0 else { throw TLSError(.badConfiguration, "socket: errno \(errno)") }
        // Every read waits at most 200 ms, so a server that says nothing costs a bounded wait.
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { Glibc.close(fd); throw TLSError(.badConfiguration, "connect: errno \(errno)") }
        tls = try TLSSession(context: TLSContext.client(trustSystemStore: false, extraCAPEM: caPEM), serverName: "localhost")
        let deadline = Date().addingTimeInterval(5)
        while try !tls.handshake() {
            sendCiphertext()
            guard Date() < deadline, readSocket() else { throw TLSError(.handshakeFailed, "no TLS handshake within 5 s") }
        }
        sendCiphertext()
    }

    deinit { Glibc.close(fd) }

    /// The connection preface and an empty SETTINGS; then the server's SETTINGS is acknowledged.
    func start() async throws {
        try send(Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Frame(type: Frame.settings, flags: 0, stream: 0, payload: []).bytes)
        let first = try await read(until: { $0.type == Frame.settings && $0.flags & 0x1 == 0 })
        guard first.frames.contains(where: { $0.type == Frame.settings }) else {
            throw TLSError(.protocolError, "the server sent no SETTINGS")
        }
        try send(Frame(type: Frame.settings, flags: 0x1, stream: 0, payload: []).bytes)
    }

    func send(_ frames: Frame...) throws {
        try send(frames.flatMap(\.bytes))
    }

    private func send(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try tls.writePlaintext($0) }
        sendCiphertext()
    }

    /// Reads frames until one matches, the server closes, or 3 s pass, on a thread of its own.
    func read(until match: @escaping @Sendable (Frame) -> Bool) async throws -> Answer {
        try await onOwnThread { self.readBlocking(until: match) }
    }

    private func readBlocking(until match: (Frame) -> Bool) -> Answer {
        var frames: [Frame] = []
        let deadline = Date().addingTimeInterval(3)
        while true {
            while let frame = nextFrame() {
                frames.append(frame)
                if match(frame) { return Answer(frames: frames, closed: closed) }
            }
            if closed || Date() >= deadline { return Answer(frames: frames, closed: closed) }
            _ = readSocket()
        }
    }

    private func nextFrame() -> Frame? {
        guard plaintext.count >= 9 else { return nil }
        let length = Int(plaintext[0]) << 16 | Int(plaintext[1]) << 8 | Int(plaintext[2])
        guard plaintext.count >= 9 + length else { return nil }
        let stream = plaintext[5..<9].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
        let frame = Frame(type: plaintext[3], flags: plaintext[4], stream: stream, payload: Array(plaintext[9..<9 + length]))
        plaintext.removeFirst(9 + length)
        return frame
    }

    /// One socket read fed to TLS; false on a timeout. A closed socket or close_notify sets `closed`.
    private func readSocket() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { return false }
        if n <= 0 { closed = true; return false }
        buffer[..<n].withUnsafeBytes { tls.feed($0) }
        do {
            if try tls.readPlaintext(into: &plaintext) == .closed { closed = true }
        } catch {
            closed = true
        }
        return true
    }

    private func sendCiphertext() {
        withUnsafeTemporaryAllocation(byteCount: 16 * 1024, alignment: 16) { chunk in
            while true {
                let got = tls.takeCiphertext(into: chunk)
                var offset = 0
                while offset < got {
                    let n = Glibc.send(fd, chunk.baseAddress! + offset, got - offset, Int32(MSG_NOSIGNAL))
                    if n <= 0 { closed = true; return }
                    offset += n
                }
                if got < chunk.count { return }
            }
        }
    }
}

@Suite("MockAPNs HTTP/2 server against hand-written frames (the h2spec cases)", .serialized)
struct FrameConformanceTests {
    static let protocolError: UInt32 = 0x1, flowControlError: UInt32 = 0x3

    private func withClient(_ body: (RawClient) async throws -> Void) async throws {
        let server = try MockAPNsServer.start(configuration: MockAPNsConfiguration(topics: ["com.example.app"], teamID: "TEAM123456", keys: [:]))
        defer { server.stop() }
        let client = try await RawClient.connect(port: server.port, caPEM: server.caPEM)
        try await client.start()
        try await body(client)
    }

    @Test("a PING after the client's GOAWAY is acknowledged or answered by a close, never ignored")
    func pingAfterGoAway() async throws {
        try await withClient { client in
            let opaque: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
            try client.send(Frame(type: Frame.goAway, flags: 0, stream: 0, payload: Frame.word(0) + Frame.word(0)),
                            Frame(type: Frame.ping, flags: 0, stream: 0, payload: opaque))
            let answer = try await client.read { $0.type == Frame.ping && $0.flags & 0x1 != 0 }
            let acked = answer.frames.contains { $0.type == Frame.ping && $0.flags & 0x1 != 0 && $0.payload == opaque }
            #expect(acked || answer.closed, "frames: \(answer.frames.map(\.type)), closed: \(answer.closed)")
        }
    }

    @Test("HEADERS or DATA on a stream id below one already used gets GOAWAY PROTOCOL_ERROR before the close",
          arguments: [Frame.headers, Frame.data])
    func lowerStreamID(type: UInt8) async throws {
        try await withClient { client in
            try client.send(Frame.request(stream: 5))
            // Stream 5 is answered (403, no provider token) before the offending frame goes out.
            _ = try await client.read { $0.type == Frame.data && $0.stream == 5 }
            let late = type == Frame.headers ? Frame.request(stream: 3) : Frame(type: Frame.data, flags: 0x1, stream: 3, payload: [1, 2, 3])
            try client.send(late)
            let answer = try await client.read { $0.type == Frame.goAway }
            #expect(answer.frames.last?.goAwayCode == Self.protocolError, "frames: \(answer.frames.map(\.type)), closed: \(answer.closed)")
            #expect(try await client.read { _ in false }.closed)
        }
    }

    @Test("a connection window pushed past 2^31-1 gets GOAWAY FLOW_CONTROL_ERROR before the close")
    func windowOverflow() async throws {
        try await withClient { client in
            let increment = Frame(type: Frame.windowUpdate, flags: 0, stream: 0, payload: Frame.word(0x7fff_ffff))
            try client.send(increment, increment)
            let answer = try await client.read { $0.type == Frame.goAway }
            #expect(answer.frames.last?.goAwayCode == Self.flowControlError, "frames: \(answer.frames.map(\.type)), closed: \(answer.closed)")
            #expect(try await client.read { _ in false }.closed)
        }
    }
}
