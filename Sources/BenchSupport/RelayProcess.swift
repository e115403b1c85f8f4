// The relay under test as a child process, what the kernel says about it, and plain loopback
// HTTP probes of it.
import Foundation
import Synchronization

/// The relay's pid while it runs, so an interrupted benchmark does not leave it behind.
package let runningRelayPID = Atomic<Int32>(0)

/// On SIGINT/SIGTERM: stop the relay too, then leave (only async-signal-safe calls).
package func installInterruptHandlers() {
    for sig in [SIGINT, SIGTERM] {
        signal(sig) { received in
            let pid = runningRelayPID.load(ordering: .relaxed)
            if pid > 0 { kill(pid, SIGTERM) }
            _exit(128 + received)
        }
    }
}

/// `apns-relay serve` started with a configuration in its environment (and `arguments`, e.g.
/// `--env-file`); its stderr goes to a file so a noisy relay cannot flood the caller's table.
package final class RelayProcess {
    package let process = Process()
    package let port: Int
    package let logURL: URL

    package init(binary: URL, arguments: [String] = ["serve"], environment: [String: String], port: Int, logURL: URL) throws {
        self.port = port
        self.logURL = logURL
        _ = FileManager.default.createFile(atPath: logURL.path, contents: nil)
        let log = try FileHandle(forWritingTo: logURL)
        process.executableURL = binary
        process.arguments = arguments
        process.environment = environment
        process.standardOutput = log
        process.standardError = log
        process.standardInput = FileHandle.nullDevice
        try process.run()
        runningRelayPID.store(process.processIdentifier, ordering: .relaxed)
    }

    package var pid: Int32 { process.processIdentifier }

    /// Polls `GET /health` until it answers 200; fails early when the relay exits.
    package func waitUntilHealthy(timeout: Double) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var last = "no answer"
        while Date() < deadline {
            guard process.isRunning else {
                throw BenchError("the relay exited with status \(process.terminationStatus) before it was healthy; its log: \(logTail())")
            }
            switch httpGetStatus(port: port, path: "/health") {
            case .success(200): return
            case .success(let status): last = "status \(status)"
            case .failure(let error): last = error.message
            }
            usleep(100_000)
        }
        throw BenchError("the relay did not answer GET /health with 200 within \(Int(timeout)) s (last: \(last)); its log: \(logTail())")
    }

    /// utime + stime so far, in seconds.
    package func cpuSeconds() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = text.lastIndex(of: ")") else { return nil }
        // Fields after "(comm)": state is field 3, utime 14, stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Peak resident set (VmHWM), in KiB.
    package func peakRSSKiB() -> Int? { statusField("VmHWM:") }

    /// Resident set now (VmRSS), in KiB.
    package func rssKiB() -> Int? { statusField("VmRSS:") }

    /// The anonymous part of the resident set now (RssAnon: heap, stacks, buffers), in KiB: the
    /// memory the relay itself costs.
    package func rssAnonKiB() -> Int? { statusField("RssAnon:") }

    /// The file-backed part of the resident set now (RssFile: the binary's own pages, read-only
    /// and shared with every other process mapping the file), in KiB.
    package func rssFileKiB() -> Int? { statusField("RssFile:") }

    /// Open file descriptors now (entries of /proc/PID/fd).
    package func openFileDescriptors() -> Int? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }

    /// What each open file descriptor refers to now ("/path", "socket:[…]", "anon_inode:[eventfd]").
    package func openFileDescriptorTargets() -> [String]? {
        let directory = "/proc/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        return entries.map { (try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + $0)) ?? "?" }
    }

    private func statusField(_ name: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name) {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        }
        return nil
    }

    /// Sends SIGTERM and waits up to `timeout` seconds; returns the exit status, or nil if it
    /// had to be killed.
    package func terminate(timeout: Double) -> Int32? {
        defer { runningRelayPID.store(0, ordering: .relaxed) }
        guard process.isRunning else { return process.terminationStatus }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning {
            kill(pid, SIGKILL)
            process.waitUntilExit()
            return nil
        }
        return process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus
    }

    /// The relay's log lines, and the last few of them for error messages.
    package func logLines() -> [Substring] {
        guard let text = try? String(contentsOf: logURL, encoding: .utf8) else { return [] }
        return text.split(separator: "\n")
    }

    package func logTail(_ count: Int = 5) -> String {
        let lines = logLines()
        return lines.isEmpty ? "(empty)" : lines.suffix(count).joined(separator: " | ")
    }
}

/// A port on 127.0.0.1 that was free a moment ago (bound to 0, read back, released).
package func freeLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw BenchError("could not open a socket to find a free port (errno \(errno))") }
    defer { close(fd) }
    var address = loopbackAddress(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw BenchError("could not bind 127.0.0.1:0 to find a free port (errno \(errno))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func loopbackAddress(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
    return address
}

/// A blocking TCP socket connected to 127.0.0.1:`port`, with `timeoutSeconds` on every send and
/// receive; the caller closes it.
package func connectLoopback(port: Int, timeoutSeconds: Int = 2) -> Result<Int32, BenchError> {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return .failure(BenchError("socket failed (errno \(errno))")) }
    var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = loopbackAddress(port: port)
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else {
        let error = errno
        close(fd)
        return .failure(BenchError("connect to 127.0.0.1:\(port) failed (errno \(error))"))
    }
    return .success(fd)
}

/// Writes all of `bytes`; false when the peer is gone or the send timed out.
package func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var sent = 0
    while sent < bytes.count {
        let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { return false }
        sent += n
    }
    return true
}

/// One blocking `GET` with `Connection: close` (2 s timeouts); the status and body of the answer.
package func httpGet(port: Int, path: String) -> Result<(status: Int, body: [UInt8]), BenchError> {
    let fd: Int32
    switch connectLoopback(port: port) {
    case .success(let socket): fd = socket
    case .failure(let error): return .failure(error)
    }
    defer { close(fd) }
    guard sendAll(fd, Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)) else {
        return .failure(BenchError("sending GET \(path) failed (errno \(errno))"))
    }
    var input: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 16384)
    while input.count < 4 << 20 {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { break }
        guard n > 0 else {
            if input.count >= 12 { break }
            let error = errno
            return .failure(BenchError(error == EAGAIN || error == EWOULDBLOCK ? "no answer to GET \(path) within 2 s"
                                       : "GET \(path): the connection failed (errno \(error))"))
        }
        input.append(contentsOf: buffer[0..<n])
    }
    guard !input.isEmpty else { return .failure(BenchError("GET \(path): the connection closed without an answer")) }
    guard input.count >= 12, let status = Int(String(decoding: input[9..<12], as: UTF8.self)) else {
        return .failure(BenchError("GET \(path) answered something that is not HTTP"))
    }
    let separator: [UInt8] = [13, 10, 13, 10]
    let bodyStart = (0..<max(0, input.count - 3)).first { Array(input[$0..<$0 + 4]) == separator }.map { $0 + 4 } ?? input.count
    return .success((status, Array(input[bodyStart...])))
}

/// `httpGet`'s status alone.
package func httpGetStatus(port: Int, path: String) -> Result<Int, BenchError> {
    httpGet(port: port, path: path).map(\.status)
}
