import Testing
import OpenSSLSupport

/// Every error type here compares on its code: callers and tests branch on the kind of failure,
/// never on the wording, which may be improved at any time.
@Suite("TLS, key and crypto errors are equal when their codes are")
struct ErrorEqualityTests {
    @Test("TLSError: same code, different words and verify results, equal; another code, not")
    func tlsError() {
        let untrusted = TLSError(.certificateVerificationFailed, "certificate verification failed: one", verifyResult: 20)
        #expect(untrusted == TLSError(.certificateVerificationFailed, "another sentence", verifyResult: 19))
        #expect(untrusted != TLSError(.hostnameMismatch, "certificate verification failed: one", verifyResult: 20))
        #expect("\(untrusted)" == "TLS certificateVerificationFailed: certificate verification failed: one")
    }

    @Test("KeyError, public: same code equal, another code not")
    func keyError() {
        #expect(KeyError(.notAKey, "one") == KeyError(.notAKey, "two"))
        #expect(KeyError(.notAKey, "one") != KeyError(.wrongKeyType, "one"))
    }
}
