#if canImport(Glibc)
import Glibc
#endif

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

    /// Sends one request with `Connection: close` and reads the answer to EOF.
    static func request(method: String, host: String = "127.0.0.1", port: Int, target: String,
                        headers: [(String, String)] = [], body: [UInt8] = [],
                        timeoutSeconds: Int = 5) throws -> Response {
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
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw Failure(description: "send failed: \(String(cString: strerror(errno)))") }
            sent += n
        }

        var input: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16384)
        while input.count < 4 << 20 {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else { throw Failure(description: "no answer within \(timeoutSeconds) s") }
            input.append(contentsOf: buffer[0..<n])
        }
        return try parse(input)
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
