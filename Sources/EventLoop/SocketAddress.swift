#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address with a port, kept as raw sockaddr bytes so no C type leaks
/// into the package API while connect/bind can still hand the kernel the exact structure.
package struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// The raw `sockaddr_in` / `sockaddr_in6` bytes.
    let storage: [UInt8]

    init?(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        let family = Int32(address.pointee.sa_family)
        guard family == AF_INET || family == AF_INET6 else { return nil }
        storage = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
    }

    /// `AF_INET` or `AF_INET6`.
    var family: Int32 {
        storage.withUnsafeBytes { Int32($0.load(as: sockaddr.self).sa_family) }
    }

    /// Hands the raw structure to a C call such as connect or bind.
    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        storage.withUnsafeBytes { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(raw.count))
        }
    }

    /// The port in host byte order.
    package var port: Int {
        storage.withUnsafeBytes { raw in
            if family == AF_INET {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
        }
    }

    /// The numeric host without the port, e.g. "127.0.0.1" or "::1".
    package var host: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        storage.withUnsafeBytes { raw in
            if family == AF_INET {
                var a = raw.load(as: sockaddr_in.self).sin_addr
                _ = inet_ntop(AF_INET, &a, &text, socklen_t(text.count))
            } else {
                var a = raw.load(as: sockaddr_in6.self).sin6_addr
                _ = inet_ntop(AF_INET6, &a, &text, socklen_t(text.count))
            }
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "127.0.0.1:port" or "[::1]:port", the form logs and URLs expect.
    package var description: String {
        family == AF_INET6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// The local or peer address of a socket.
    static func of(fd: Int32, peer: Bool) -> SocketAddress? {
        var ss = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        return withUnsafeMutablePointer(to: &ss) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                let rc = peer ? getpeername(fd, sa, &len) : getsockname(fd, sa, &len)
                return rc == 0 ? SocketAddress(sa, length: len) : nil
            }
        }
    }

    /// Resolves a host name (or numeric address) with getaddrinfo. Blocking: call it off
    /// the event-loop threads.
    static func resolve(host: String, port: Int, passive: Bool) -> Result<[SocketAddress], SocketError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = passive ? AI_PASSIVE : 0
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = String(cString: gai_strerror(rc))
            return .failure(SocketError(code: .hostNotFound, resolverCode: rc, message:
                "resolving \"\(host)\" failed: \(text); check the host name and DNS"))
        }
        defer { freeaddrinfo(first) }
        var out: [SocketAddress] = []
        var cur: UnsafeMutablePointer<addrinfo>? = first
        while let ai = cur {
            if let sa = ai.pointee.ai_addr, let a = SocketAddress(sa, length: ai.pointee.ai_addrlen),
               !out.contains(a) {
                out.append(a)
            }
            cur = ai.pointee.ai_next
        }
        if out.isEmpty {
            return .failure(SocketError(code: .hostNotFound, message:
                "\"\(host)\" has no IPv4 or IPv6 address; check the host name"))
        }
        return .success(out)
    }
}
