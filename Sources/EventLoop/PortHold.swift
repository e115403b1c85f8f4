#if canImport(Glibc)
import Glibc
#endif
internal import CLinux

/// A port kept taken while nothing listens on it: a socket bound to it (SO_REUSEADDR, as the
/// listeners are, so connections still open on the port do not stop it) that never listens, so
/// a connect to it is refused at once and no other socket is given the port meanwhile — a
/// server that is taken away and brought back on the same port finds it still its own.
/// The socket closes in `deinit`.
package final class PortHold: Sendable {
    private let fd: Int32

    /// Blocking (it resolves `host`): call it off the event-loop threads.
    package init(host: String, port: Int) throws(SocketError) {
        let address = try SocketAddress.resolve(host: host, port: port, passive: true).get()[0]
        let fd = clinux_socket(address.family)
        guard fd >= 0 else { throw SocketError.fromErrno(errno, "socket for \(address)") }
        _ = clinux_set_reuseaddr(fd)
        if address.withSockAddr({ Glibc.bind(fd, $0, $1) }) != 0 {
            let e = errno
            Glibc.close(fd)
            throw SocketError.fromErrno(e, "bind to \(address)")
        }
        self.fd = fd
    }

    deinit {
        Glibc.close(fd)
    }
}
