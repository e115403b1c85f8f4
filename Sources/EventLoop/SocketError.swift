#if canImport(Glibc)
import Glibc
#endif
internal import Basics

/// A socket failure as a value: a stable `code` to branch on, the system's own number for it
/// (`errno`, or getaddrinfo's `resolverCode`), and a message that tells the operator what to check.
/// Equality is on the code (`CodedError`).
package struct SocketError: CodedError {
    /// Stable failure kinds; compare against these rather than against `errno`, which
    /// differs between platforms and mixes several causes into one number.
    package enum Code: String, NamedCode {
        /// Nothing listens on the port (or a firewall rejects it).
        case connectionRefused = "connection refused"
        /// The connect timeout expired, or the kernel gave up on the peer.
        case timedOut = "timed out"
        /// The peer reset the connection (RST).
        case connectionReset = "connection reset"
        /// Writing to a connection the peer already closed.
        case brokenPipe = "broken pipe"
        /// Another socket already holds the address and port.
        case addressInUse = "address in use"
        /// The host name did not resolve to any address; `resolverCode` says why.
        case hostNotFound = "host not found"
        /// The network or host is unreachable.
        case unreachable
        /// The process or system ran out of file descriptors.
        case tooManyOpenFiles = "too many open files"
        /// The event loop shut down while the socket was still open.
        case loopShutDown = "event loop shut down"
        /// Any other system error; see `errno`.
        case system = "system error"
    }

    package let code: Code
    /// The raw errno (0 when the failure did not come from a system call).
    package let errno: Int32
    /// getaddrinfo's `EAI_*` result for `.hostNotFound` (`EAI_NONAME`: no such name,
    /// `EAI_AGAIN`: the resolver did not answer); 0 otherwise.
    package let resolverCode: Int32
    package let message: String

    package init(code: Code, errno: Int32 = 0, resolverCode: Int32 = 0, message: String) {
        self.code = code
        self.errno = errno
        self.resolverCode = resolverCode
        self.message = message
    }

    package var description: String {
        errno == 0 ? "\(code): \(message)" : "\(code) (errno \(errno)): \(message)"
    }

    /// Maps an errno from `operation` (e.g. "connect to 127.0.0.1:443") to a code and a hint.
    static func fromErrno(_ err: Int32, _ operation: String) -> SocketError {
        let text = String(cString: strerror(err))
        let code: Code
        let hint: String
        switch err {
        case ECONNREFUSED:
            code = .connectionRefused; hint = "is the server running and listening on that port?"
        case ETIMEDOUT:
            code = .timedOut; hint = "check that the peer is reachable and not overloaded"
        case ECONNRESET, ECONNABORTED:
            code = .connectionReset; hint = "the peer dropped the connection; reconnect and retry"
        case EPIPE:
            code = .brokenPipe; hint = "the peer closed the connection; reconnect and retry"
        case EADDRINUSE:
            code = .addressInUse; hint = "stop the other process on that port or choose another port"
        case EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL:
            code = .unreachable; hint = "check the address and the network routes"
        case EMFILE, ENFILE:
            code = .tooManyOpenFiles; hint = "raise the file descriptor limit (ulimit -n) or lower the connection count"
        default:
            code = .system; hint = "see the errno for details"
        }
        return SocketError(code: code, errno: err, message: "\(operation) failed: \(text); \(hint)")
    }
}
