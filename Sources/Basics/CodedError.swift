/// The one shape of this package's errors: a `code` callers branch on and one `message` line
/// for people. Equality is on the code alone, so callers and tests compare kinds of failure
/// without depending on wording; the description is `code: message`.
///
/// An error type adopts it by declaring `code` and `message`; a type whose equality or
/// description must say more (a variable's name, a bare operator sentence) writes its own.
package protocol CodedError: Error, Sendable, Equatable, CustomStringConvertible {
    associatedtype Code: Hashable & Sendable & CustomStringConvertible
    var code: Code { get }
    var message: String { get }
}

extension CodedError {
    package static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    package var description: String { "\(code): \(message)" }
}
