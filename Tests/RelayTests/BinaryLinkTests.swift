import Foundation
import Testing

@Suite("The apns-relay binary")
struct BinaryLinkTests {
    @Test("the built binary names no Foundation module: neither a shared library nor a type of one is in it")
    func noFoundationInTheBinary() throws {
        let binary = try #require(executable, "build apns-relay first (swift build --build-tests builds it)")
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
