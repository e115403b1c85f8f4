#if canImport(Glibc)
import Glibc
#endif

/// A port kept taken while nothing listens on it: a socket bound to it (SO_REUSEADDR, as the
/// listeners are, so connections still open on the port do not stop it) that never listens, so
/// a connect to it is refused at once and no other socket is given the port meanwhile — a
/// server that is taken away and brought back on the same port finds it still its own.
/// The socket closes in `deinit`.
package final class PortHold: Sendable {
    private let fd: Int32

    /// Blocking (it resolves `host`): call it off the event-loop threads.
    package init(host: String, port: Int) throws(SocketError) {
        fd = try TCPListener.boundSocket(host: host, port: port).fd
    }

    deinit {
        Glibc.close(fd)
    }
}
