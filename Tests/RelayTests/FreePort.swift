#if canImport(Glibc)
import Glibc
#endif
import TestWaits

/// A port on 127.0.0.1 for a program a test starts and must tell its port before it binds.
///
/// A port the kernel gave a moment ago (bind to 0, then close) can be given again to anyone
/// before the program binds it, and a test then spoke to another test's relay (a fresh clone's
/// make test, its listening line missing from its own log). So the port comes from below the
/// kernel's ephemeral range (32768-60999 on Debian), which no bind to 0 and no outgoing
/// connection takes, and is reserved with a lock file (the one `lockPort` uses) that every test
/// process on this machine respects; the reservation lasts as long as this process.
func freePort() throws -> Int {
    for _ in 0..<500 {
        let port = Int.random(in: 20_000..<32_000)
        let fd = open("/tmp/apns-relay-tests-port-\(port).lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o666)
        guard fd >= 0 else { continue }
        if flock(fd, LOCK_EX | LOCK_NB) == 0, try portIsFree(port) {
            // Kept open: the lock goes with the process.
            return port
        }
        close(fd)
    }
    throw TestHTTP.Failure(description: "no free port on 127.0.0.1 between 20000 and 32000")
}

/// True when nothing on 127.0.0.1 holds `port` (a test that must use a program's fixed default).
func portIsFree(_ port: Int) throws -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// Holds a lock on `port` shared by every test process on this machine (a file under /tmp, locked
/// with flock), for a test that must use a program's fixed default port: two `make test` runs side
/// by side take turns instead of one finding the port taken. The lock goes with the returned
/// descriptor (`releasePortLock`) or with the process.
func lockPort(_ port: Int) async throws -> Int32 {
    let fd = open("/tmp/apns-relay-tests-port-\(port).lock", O_CREAT | O_RDWR | O_CLOEXEC, 0o666)
    guard fd >= 0 else { throw TestHTTP.Failure(description: "cannot open the lock file for port \(port)") }
    // Blocking: on a thread of its own, never on the tests' cooperative pool. A signal may end
    // the wait without the lock (EINTR): wait again, and fail on anything else.
    let result = try await onOwnThread { () -> Int32 in
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { return errno }
        }
        return 0
    }
    guard result == 0 else {
        close(fd)
        throw TestHTTP.Failure(description: "cannot lock port \(port): errno \(result)")
    }
    return fd
}

func releasePortLock(_ fd: Int32) {
    flock(fd, LOCK_UN)
    close(fd)
}
