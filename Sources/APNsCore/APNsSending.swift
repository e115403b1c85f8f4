/// The seam between the relay and Apple: the relay only needs "send this, tell me how it
/// ended", so tests can inject a fake and the real client can change underneath.
///
/// A refusal from Apple is a `.success` carrying a non-ok `APNsResponse`; `.failure` means we
/// could not get an answer at all (deadline, overload, no usable connection).
package protocol APNsSending: Sendable {
    func send(_ notification: APNsNotification, environment: APNsEnvironment) async -> Result<APNsResponse, APNsError>

    /// The same without a Task, for callers on an event loop: `completion` runs exactly once, on
    /// any thread (the client's: one of its loops); keep it short. A Task per push and the hops
    /// through the cooperative pool cost more CPU than the push itself.
    func send(_ notification: APNsNotification, environment: APNsEnvironment,
              completion: @escaping @Sendable (Result<APNsResponse, APNsError>) -> Void)
}

extension APNsSending {
    /// Fakes and other senders that only implement the async form get this one for free.
    package func send(_ notification: APNsNotification, environment: APNsEnvironment,
                     completion: @escaping @Sendable (Result<APNsResponse, APNsError>) -> Void) {
        Task { completion(await send(notification, environment: environment)) }
    }
}
