import Foundation
import Testing
@testable import OpenSSLSupport

/// The hand-written DER reader for Apple's `.p8`, attacked: every truncation, trailing bytes,
/// every single-byte change. It must never crash, must refuse what is not the exact shape,
/// and whatever it refuses must still reach OpenSSL (which loads or refuses it in its words).
@Suite("the .p8 DER reader, attacked")
struct P256PKCS8Tests {
    /// Apple's layout: [0] parameters and [1] public key inside the ECPrivateKey.
    static let appleBase64 = "MIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQgYNS0M/dm3geEGEPq"
        + "UJ8qNbFyJk/44PHfCPTmDGnuPNOgCgYIKoZIzj0DAQehRANCAASKhvYcqZGX3fkF"
        + "r9jri8ftj9LD0CE93gl1egkXWkjdtTO+qrGc+YLBV8G1RwD0PfZs9dm3V9F1hRtF"
        + "BWzbLOjC"

    static var der: [UInt8] { Array(Data(base64Encoded: appleBase64)!) }

    static func pem(_ der: [UInt8]) -> String {
        let base64 = Data(der).base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
        return "-----BEGIN PRIVATE KEY-----\n" + base64 + "\n-----END PRIVATE KEY-----\n"
    }

    @Test("Apple's layout reads as its 32-byte scalar and 65-byte point")
    func reads() throws {
        let read = try #require(P256PKCS8.read(der: Self.der[...]))
        #expect(read.scalar.count == 32)
        #expect(read.publicKey?.count == 65 && read.publicKey?.first == 0x04)
        #expect(P256PKCS8.read(pem: Self.pem(Self.der)) != nil)
    }

    @Test("every truncation and any trailing byte is refused, never read past its end")
    func truncationsAndTrailing() {
        let der = Self.der
        for length in 0..<der.count {
            #expect(P256PKCS8.read(der: der[..<length]) == nil, "truncated to \(length)")
        }
        for extra: UInt8 in [0x00, 0x30, 0xFF] {
            #expect(P256PKCS8.read(der: (der + [extra])[...]) == nil, "trailing 0x\(String(extra, radix: 16))")
        }
        // A slice that does not start at index 0 reads the same (indices, not offsets).
        let shifted = [0xAA] + der
        #expect(P256PKCS8.read(der: shifted[1...])?.scalar == P256PKCS8.read(der: der[...])?.scalar)
    }

    @Test("a length in long form that is not minimal, too long or past the end is refused")
    func longFormLengths() {
        // SEQUENCE { INTEGER 0 } with its length written in each way.
        let cases: [[UInt8]] = [
            [0x30, 0x81, 0x03, 0x02, 0x01, 0x00],          // 0x81 for a length under 0x80
            [0x30, 0x82, 0x00, 0x03, 0x02, 0x01, 0x00],    // a leading zero
            [0x30, 0x83, 0x00, 0x00, 0x03, 0x02, 0x01, 0x00],
            [0x30, 0x80, 0x02, 0x01, 0x00, 0x00, 0x00],    // indefinite length
            [0x30, 0x84, 0xFF, 0xFF, 0xFF, 0xFF],           // 4 GiB
            [0x30, 0x82, 0xFF, 0xFF, 0x02, 0x01, 0x00],    // past the end
            [0x30, 0x89, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF],
        ]
        for bytes in cases {
            #expect(P256PKCS8.read(der: bytes[...]) == nil, "\(bytes)")
        }
    }

    @Test("a .p8 whose private scalar does not match the public key beside it is refused at load, not used to sign")
    func damagedScalarRefused() throws {
        var damaged = Self.der
        // Inside the 32-byte scalar (after `04 20`): one changed base64 character does this.
        let scalarStart = try #require(damaged.indices.first { damaged[$0] == 0x04 && damaged[$0 + 1] == 0x20 }) + 2
        damaged[scalarStart + 5] ^= 0x10
        let error = try #require(throws: KeyError.self) { try ES256PrivateKey(pem: Self.pem(damaged)) }
        #expect(error.code == .notAKey)
        #expect(error.message.contains("does not match"))
        // The undamaged file still loads.
        #expect(throws: Never.self) { try ES256PrivateKey(pem: Self.pem(Self.der)) }
    }

    @Test("any single changed byte is refused or still gives a key that signs and verifies; never a crash")
    func everyByteChanged() throws {
        let der = Self.der
        for index in der.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var mutated = der
                mutated[index] ^= flip
                // Through the whole loader: refused by us then by OpenSSL, or a working key.
                if let key = try? ES256PrivateKey(pem: Self.pem(mutated)) {
                    let message = Array("m".utf8)
                    let signature = try key.sign(message)
                    #expect(key.publicKey.verify(signature: signature, message: message),
                            "byte \(index) ^ 0x\(String(flip, radix: 16)) gave a key whose public half does not match")
                }
            }
        }
    }
}
