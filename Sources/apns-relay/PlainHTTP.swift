#if canImport(Glibc)
import Glibc
#endif
import OpenSSLSupport

/// A one-shot HTTP/1.1 client over a blocking socket, for `healthcheck` and `demo --once`.
///
/// Docker's HEALTHCHECK runs inside the container where curl may not exist; a plain socket
/// with a timeout needs nothing but libc.
enum PlainHTTP {
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends one request with `Connection: close` and reads the answer to EOF; over TLS when
    /// `tls` is given (the relay's own HTTPS port).
    static func request(method: String, host: String = "127.0.0.1", port: Int, target: String,
                        headers: [(String, String)] = [], body: [UInt8] = [],
                        timeoutSeconds: Int = 5, tls: TLSContext? = nil) throws -> Response {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        defer { close(fd) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw Failure(description: "\(host) is not an IPv4 address")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            throw Failure(description: "cannot connect to \(host):\(port): \(String(cString: strerror(errno)))")
        }

        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host):\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let out = Array(head.utf8) + body
        let socket = Socket(fd: fd, timeoutSeconds: timeoutSeconds)
        let input = try tls.map { try exchangeOverTLS(out, socket: socket, context: $0) } ?? exchange(out, socket: socket)
        return try parse(input)
    }

    /// A connected socket with the timeouts set: whole sends, and reads of what arrived.
    struct Socket {
        let fd: Int32
        let timeoutSeconds: Int

        func send(_ bytes: some Collection<UInt8>) throws {
            let bytes = Array(bytes)
            var sent = 0
            while sent < bytes.count {
                let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { throw Failure(description: "send failed: \(String(cString: strerror(errno)))") }
                sent += n
            }
        }

        /// Bytes that arrived; empty at EOF.
        func receive(into buffer: inout [UInt8]) throws -> ArraySlice<UInt8> {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard n >= 0 else { throw Failure(description: "no answer within \(timeoutSeconds) s") }
            return buffer[0..<n]
        }
    }

    private static func exchange(_ request: [UInt8], socket: Socket) throws -> [UInt8] {
        try socket.send(request)
        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while input.count < 4 << 20 {
            let got = try socket.receive(into: &buffer)
            if got.isEmpty { break }
            input.append(contentsOf: got)
        }
        return input
    }

    /// The same over a TLS session pumped by hand over the blocking socket.
    private static func exchangeOverTLS(_ request: [UInt8], socket: Socket, context: TLSContext) throws -> [UInt8] {
        let session = try TLSSession(context: context, serverName: nil)
        var scratch = [UInt8](repeating: 0, count: 16384)
        func flush() throws {
            while true {
                let n = scratch.withUnsafeMutableBytes { session.takeCiphertext(into: $0) }
                if n == 0 { return }
                try socket.send(scratch[0..<n])
            }
        }
        func receive() throws -> Bool {
            var buffer = [UInt8](repeating: 0, count: 16384)
            let got = try socket.receive(into: &buffer)
            if got.isEmpty { return false }
            got.withUnsafeBytes { session.feed($0) }
            return true
        }
        while try !session.handshake() {
            try flush()
            guard try receive() else { throw Failure(description: "the server closed the connection during the TLS handshake") }
        }
        try flush()
        try request.withUnsafeBytes { try session.writePlaintext($0) }
        try flush()
        var input: [UInt8] = []
        while input.count < 4 << 20 {
            guard try receive() else { break }
            let result = try session.readPlaintext(into: &input)
            try flush()
            if result == .closed { break }
        }
        return input
    }

    static func parse(_ input: [UInt8]) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...max(0, input.count - 4)).first(where: { input.count >= $0 + 4 && Array(input[$0..<$0 + 4]) == separator })
        else { throw Failure(description: "the answer is not HTTP (no end of head)") }
        let headText = String(decoding: input[..<end], as: UTF8.self)
        var lines = headText.split(separator: "\r\n", omittingEmptySubsequences: false).map(String.init)
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else {
            throw Failure(description: "the answer has no status line")
        }
        var headers: [(String, String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingWhitespace))
        }
        return Response(status: status, headers: headers, body: Array(input[(end + 4)...]))
    }
}
