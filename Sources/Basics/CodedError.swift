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

extension CodedError where Self: Hashable {
    /// Hashed as it is compared: on the code alone.
    package func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// The one shape of a package-internal code: an enum whose raw value is its name (what logs,
/// metrics and descriptions print). Adding a case breaks our own switches, which is the point:
/// only the public `APNsError.Code` and `KeyError.Code` stay structs, for outside callers' room.
package protocol NamedCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible where RawValue == String {}

extension NamedCode {
    package var description: String { rawValue }
}
