#if canImport(Glibc)
import Glibc
#endif
import EventLoop
import Basics

/// Why start-up stopped. The message is one line naming the variable and what it should hold,
/// so an operator can fix the deployment from the log alone, and it is the whole description.
/// Unlike other `CodedError`s, equality is on code and variable.
package struct ConfigurationError: CodedError {
    package enum Code: String, NamedCode {
        /// A required variable is unset or empty.
        case missing
        /// A variable holds a value the relay cannot use.
        case invalid
        /// Two variables that mean the same thing disagree, or both of two exclusive ones are set.
        case conflict
        /// A file named by a variable (or `--env-file`) cannot be read.
        case unreadableFile = "unreadable-file"
        /// A line of the env file is not `KEY=VALUE`.
        case envFileSyntax = "env-file-syntax"
    }

    package let code: Code
    /// The variable at fault (or the env file's path for env-file errors).
    package let variable: String
    package let message: String

    init(_ code: Code, _ variable: String, _ message: String) {
        self.code = code
        self.variable = variable
        self.message = message
    }

    package var description: String { message }

    package static func == (lhs: ConfigurationError, rhs: ConfigurationError) -> Bool {
        lhs.code == rhs.code && lhs.variable == rhs.variable
    }
}

/// `could not read "/keys/AuthKey.p8": Permission denied (…)`: why a key or certificate file
/// could not be read, in errno's words, so a missing file and a forbidden one read differently.
/// For a permission, the fix: the image runs as uid 10001, and a secret copied in as root with
/// mode 0600 is what an operator meets first.
func couldNotRead(_ failure: LocalFile.Failure) -> String {
    var text = "could not read \(quoted(failure.path)): \(failure.reason)"
    if failure.errno == EACCES {
        let uid = getuid()
        let who = uid == 10001 ? "uid 10001 (the image's user)" : "uid \(uid)"
        text += "; the relay runs as \(who): chown \(uid) the file (mode 0600 stays), or make it group-readable (chmod 0640) for a group uid \(uid) is in, or chmod 0644, and let uid \(uid) search its directories"
    }
    return text
}
