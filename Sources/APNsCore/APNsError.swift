internal import Basics

/// A failure to get a push to Apple, or a push we refused before sending it.
///
/// A struct with a code rather than a public enum, so new failure kinds do not break
/// callers' `switch`es; equality is on the code alone (as for every `CodedError` here, written
/// out because it is public), so tests and callers compare kinds without depending on message
/// wording.
public struct APNsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable enough to branch on (the relay maps each code to an HTTP status).
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        let raw: String
        init(_ raw: String) { self.raw = raw }
        public var description: String { raw }

        /// No answer before the push's deadline: the sender should retry later (relay answers 504).
        public static let timeout = Code("timeout")
        /// Our bounded queue is full: shed load at once instead of growing memory (relay answers 503).
        public static let overloaded = Code("overloaded")
        /// Apple could not be reached (connect, TLS, a lost connection past the retries); Apple's
        /// own 500/503 after the retries is an answer, not this error (relay answers 503).
        public static let unavailable = Code("unavailable")
        /// The notification breaks one of Apple's rules; sending it could only fail (the relay answers 502: our request is wrong, never the subscription).
        public static let invalidNotification = Code("invalidNotification")
        /// The signing key could not make a provider token; no push can succeed until it is fixed.
        public static let badKey = Code("badKey")
        /// The pool is shutting down and takes no more pushes.
        public static let shuttingDown = Code("shuttingDown")
        /// A setting (an environment variable, a CA file, a host) is wrong; the message names it.
        public static let badConfiguration = Code("badConfiguration")
    }

    /// The kind of failure, what callers branch on.
    public let code: Code
    /// One line that says what happened and what to do about it.
    public let message: String
    /// Why Apple could not be reached, as a value, when an `unavailable` or `timeout` push came
    /// after a failed connect: decide on its `code`, not on the message's words.
    package let connectFailure: APNsConnectFailure?
    /// A `timeout` for a push written to a connection and not answered: Apple may have it. False
    /// for every other failure, a timeout of a push still waiting to be written among them.
    package let wasWritten: Bool

    /// For layers above (transport, relay) that report failures in the same shape.
    public init(code: Code, message: String) {
        self.init(code: code, message: message, connectFailure: nil)
    }

    package init(code: Code, message: String, connectFailure: APNsConnectFailure?, wasWritten: Bool = false) {
        self.code = code
        self.message = message
        self.connectFailure = connectFailure
        self.wasWritten = wasWritten
    }

    public var description: String { "\(code): \(message)" }

    public static func == (lhs: APNsError, rhs: APNsError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    package static func badConfiguration(_ message: String) -> APNsError { .init(code: .badConfiguration, message: message) }
    package static func timeout(_ message: String) -> APNsError { .init(code: .timeout, message: message) }
    /// The push was written and Apple did not answer it before its deadline.
    package static func unanswered(_ message: String) -> APNsError {
        .init(code: .timeout, message: message, connectFailure: nil, wasWritten: true)
    }
    package static func overloaded(_ message: String) -> APNsError { .init(code: .overloaded, message: message) }
    package static func unavailable(_ message: String) -> APNsError { .init(code: .unavailable, message: message) }
    package static func invalid(_ message: String) -> APNsError { .init(code: .invalidNotification, message: message) }
    package static func badKey(_ message: String) -> APNsError { .init(code: .badKey, message: message) }
    package static func shuttingDown(_ message: String) -> APNsError { .init(code: .shuttingDown, message: message) }
}

extension APNsError: CodedError {}
