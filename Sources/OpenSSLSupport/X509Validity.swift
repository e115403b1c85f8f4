internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A certificate's validity in Unix seconds, read by OpenSSL from the loaded certificate.
enum X509Validity {
    static func notBefore(_ certificate: OpaquePointer) -> Int64? { unixTime(X509_get0_notBefore(certificate)) }
    static func notAfter(_ certificate: OpaquePointer) -> Int64? { unixTime(X509_get0_notAfter(certificate)) }

    private static func unixTime(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { return nil }
        return Int64(timegm(&parts))
    }
}
