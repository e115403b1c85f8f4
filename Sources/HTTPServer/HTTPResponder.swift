#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import EventLoop
import Synchronization

/// The only thing the server knows about the application, so routing and the relay's
/// logic stay testable without sockets.
package protocol HTTPResponder: Sendable {
    /// The simple form. Through the default `respond(to:completion:)` it runs on Swift's task
    /// pool, never on an event loop, so it may await as long as it needs (the relay bounds that
    /// with its push deadline).
    func respond(to request: HTTPRequest) async -> HTTPResponse

    /// What the server calls. It runs on the connection's event loop, so it must not block;
    /// `completion` runs exactly once, from any thread. The default runs `respond(to:)` in a
    /// Task; a responder that can answer from callbacks skips the Task and the hops through
    /// the cooperative pool, which cost several thread wake-ups per request.
    func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void)
}

extension HTTPResponder {
    package func respond(to request: HTTPRequest, completion: @escaping @Sendable (HTTPResponse) -> Void) {
        Task { completion(await respond(to: request)) }
    }
}

/// Receives one line per notable server event (bind, rejected connection); the server
/// takes a closure so it needs no logging framework.
package typealias HTTPServerLogger = @Sendable (_ message: String) -> Void
