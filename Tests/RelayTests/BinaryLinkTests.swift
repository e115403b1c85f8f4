import Foundation
import Testing
import BuiltProducts

/// The relay imports no Foundation module at all, FoundationEssentials included: Foundation with
/// its ICU data made the static binary 75 MB. Debug and shipped builds alike (FootprintTests
/// bounds the shipped binary's size and memory).
@Suite("The apns-relay binary")
struct BinaryLinkTests {
    @Test("the built binary names no Foundation module: neither a shared library nor a type of one is in it")
    func noFoundationInTheBinary() throws {
        let binary = try BuiltProducts.relayExecutable()
        let bytes = try Data(contentsOf: binary)
        // Module names are in the binary as text (type metadata, a shared library's name): the
        // search sees them, as it sees the relay's own modules.
        #expect(bytes.range(of: Data("APNsCore".utf8)) != nil)
        #expect(bytes.range(of: Data("Observability".utf8)) != nil)
        for name in ["FoundationEssentials", "FoundationInternationalization", "libFoundation", "FoundationNetworking"] {
            #expect(bytes.range(of: Data(name.utf8)) == nil, "apns-relay holds \(name) (after a module dropped Foundation, an incremental build may keep its old objects' link entries: rebuild clean)")
        }
    }
}
