import Foundation
import Testing
import BuiltProducts

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

    /// One `contains("text")`, `replacing(_:with:)`, `firstRange(of:)` or `split(separator:)`
    /// with a string separator links _StringProcessing and its _RegexParser: 1 MB of regex
    /// engine, half of it resident in an idle relay. Encoders' `contains(text:)`,
    /// `replacing(text:with:)`, `firstRange(ofText:)` and `split(text:)` do the same with the
    /// standard library alone.
    @Test("the built binary uses nothing of _StringProcessing or _RegexParser")
    func noStringProcessingInTheBinary() throws {
        let binary = try BuiltProducts.relayExecutable()
        let bytes = try Data(contentsOf: binary)
        // A use is a mangled name in the binary: a symbol it imports from the shared library
        // (debug builds) or the module's own code and metadata (static builds). The module
        // names alone also stand in a debug build's list of libraries and its debug info.
        #expect(bytes.range(of: Data("$sSS".utf8)) != nil, "the search sees mangled names")
        for module in ["17_StringProcessing", "12_RegexParser"] {
            #expect(bytes.range(of: Data(module.utf8)) == nil, "apns-relay uses \(module.dropFirst(2)): look for the calls above in the modules it links (nm -u on their objects)")
        }
    }
}
