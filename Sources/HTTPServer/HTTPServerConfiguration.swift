#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// How the server listens and how long it waits for slow peers.
package struct HTTPServerConfiguration: Sendable {
    /// "0.0.0.0" for every IPv4 address, "::" for both families, "127.0.0.1" for loopback.
    package var host: String
    /// 0 picks any free port (tests); `HTTPServer.port` tells which.
    package var port: Int
    /// Caps on request size; also bound the pipelined input a busy connection may hold.
    package var limits: HTTPParserLimits
    /// From the first byte of a request to the end of its head; beyond it the answer is 408,
    /// so a slowloris client holds a connection for a bounded time.
    package var headerTimeout: Duration
    /// Longest pause while a body arrives; beyond it the answer is 408 (which Mastodon retries).
    package var bodyTimeout: Duration
    /// From the first byte of a request to its last, head and body together: past it the
    /// answer is 408 whatever the pace, so a body trickled a byte at a time can't hold its
    /// buffer forever.
    package var requestTimeout: Duration
    /// A kept connection with no request in progress closes silently after this. Longer than
    /// Mastodon's 30 s pool idle time, so the client closes first and never sends a request
    /// onto a connection the server is closing.
    package var idleTimeout: Duration
    /// A peer that does not take our bytes for this long is cut off, so it can't pin memory.
    package var writeTimeout: Duration
    /// At most this many connections are open, so a flood can't exhaust the file descriptors
    /// needed for the connections to Apple. At the cap an idle connection or the slowest request
    /// still arriving makes room for a new one (the order is `ConnectionCap`'s); when nothing
    /// may give way, the new one is closed at once.
    package var maxConnections: Int
    /// At the cap a kept connection gives way only once idle at least this long: a client between
    /// two requests (Mastodon's workers send every few milliseconds) is never cut as it sends,
    /// while connections held idle by a flood age past it within a second.
    package var minimumIdleBeforeEviction: Duration
    /// Bytes all half-received requests may hold together. Past it the connections holding
    /// the most stop being read and the slowest senders are answered 408 (see `RequestBudget`).
    package var maxBufferedRequestBytes: Int
    /// Loops of the group the server makes when none is given.
    package var loopCount: Int
    /// The time connections are judged by; tests move one by hand.
    package var clock = ServerClock.loop
    /// Serve HTTPS with this certificate and key instead of plain HTTP; every limit above holds
    /// for TLS connections too (a handshake is held to a request head's deadlines).
    package var tls: HTTPServerTLS?

    package init(
        host: String = "0.0.0.0", port: Int = 3000, limits: HTTPParserLimits = HTTPParserLimits(),
        headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(10),
        idleTimeout: Duration = .seconds(75), writeTimeout: Duration = .seconds(10),
        maxConnections: Int = 10_000, maxBufferedRequestBytes: Int = 64 << 20,
        minimumIdleBeforeEviction: Duration = .seconds(1), loopCount: Int = System.coreCount
    ) {
        self.host = host
        self.port = port
        self.limits = limits
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.requestTimeout = requestTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.minimumIdleBeforeEviction = minimumIdleBeforeEviction
        self.maxBufferedRequestBytes = maxBufferedRequestBytes
        self.loopCount = loopCount
    }

    /// How often each loop checks its connections' deadlines: an eighth of the shortest
    /// timeout (between 5 ms and 1 s), so a deadline is met within about 12 % and the
    /// check costs nothing per request.
    var sweepInterval: Duration {
        let shortest = min(min(headerTimeout, bodyTimeout), min(min(idleTimeout, writeTimeout), requestTimeout))
        return min(max(shortest / 8, .milliseconds(5)), .seconds(1))
    }
}
