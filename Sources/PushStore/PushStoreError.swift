import Basics

/// Why a store could not do what it was asked. Callers branch on `code` (the relay answers 503
/// for any of them: never a 4xx); `message` is one line for the log.
package struct PushStoreError: CodedError {
    package enum Code: String, NamedCode {
        /// The put would take the store over its count or byte cap: nothing of it was stored.
        case capReached
        /// The store's space is full (the disk, the file's size limit, Redis at its `maxmemory`):
        /// nothing of the put was stored; later puts succeed once space comes back.
        case diskFull
        /// The store's server (Redis) did not answer: it is down, out of reach, or too slow. The
        /// call's outcome is unknown (a put may have been stored); the store reconnects by itself.
        case unreachable
        /// Any other failure to read or write the store (I/O, corruption, a bug's SQL).
        case storeFailed
        /// The store could not be opened or set up at the path given.
        case cannotOpen
        /// Another process has the store open (one relay per store file).
        case inUse
        /// The store was closed before this call.
        case closed
    }

    package let code: Code
    package let message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
