import Foundation
import Testing

// `make test` fails when Package.swift and the code disagree about who imports whom: an import
// that is not declared (it builds only because SwiftPM happens to put a transitive dependency's
// module on the search path) or a declared arrow that no file uses (a map that lies).
@Suite("Import graph")
struct ImportGraphTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func swiftImports(under directory: String) -> Set<ImportLine>? {
        let base = root.appendingPathComponent(directory)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: nil) else {
            return nil
        }
        var imports: Set<ImportLine> = []
        var sawSwift = false
        for case let file as URL in walker where file.pathExtension == "swift" {
            sawSwift = true
            let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
            imports.formUnion(ImportGraph.imports(source: text))
        }
        return sawSwift ? imports : nil
    }

    @Test("every import a target makes is declared in Package.swift, and every declared arrow is used")
    func packageDeclaresExactlyWhatIsImported() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let targets = ImportGraph.targets(manifest: manifest)
        #expect(targets.count > 10, "Package.swift lists its targets one per line")
        let problems = ImportGraph.mismatches(targets: targets) { Self.swiftImports(under: $0.directory) }
        #expect(problems.isEmpty, Comment(rawValue: "\n" + problems.joined(separator: "\n")))
    }

    @Test("docs/DEVELOPMENT.md's module table lists every source target with exactly the imports Package.swift declares")
    func readmeTableMatches() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let readme = try String(contentsOf: Self.root.appendingPathComponent("docs/DEVELOPMENT.md"), encoding: .utf8)
        let table = ImportGraph.moduleTable(readme: readme)
        #expect(table.count > 10, "docs/DEVELOPMENT.md has its module table")
        for target in ImportGraph.targets(manifest: manifest) where !target.directory.hasPrefix("Tests/") {
            let row = table[target.name]
            #expect(row == target.dependencies, "docs/DEVELOPMENT.md's row for \(target.name): \(row.map { $0.sorted() } ?? []) vs Package.swift \(target.dependencies.sorted())")
        }
    }

    @Test("the emulator shares no code with the client: MockAPNs never imports APNs, APNsCore or Basics")
    func emulatorKeepsItsOwnCode() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let mock = try #require(ImportGraph.targets(manifest: manifest).first { $0.name == "MockAPNs" })
        let imported = Set((Self.swiftImports(under: mock.directory) ?? []).map(\.module))
        #expect(imported.isDisjoint(with: ["APNs", "APNsCore", "Basics"]))
        #expect(mock.dependencies.isDisjoint(with: ["APNs", "APNsCore", "Basics"]))
    }

    @Test("no module linked into the apns-relay executable imports Foundation: the standard library and Glibc do")
    func relayBinaryHasNoFoundation() throws {
        let manifest = try String(contentsOf: Self.root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let targets = ImportGraph.targets(manifest: manifest)
        let roots = ImportGraph.productTargets(manifest: manifest, product: "apns-relay")
        #expect(roots == ["apns-relay"])
        let linked = ImportGraph.closure(of: roots, in: targets)
        // The relay, the emulator it embeds for `demo`, the client, and the C targets below them.
        #expect(Set(linked.map(\.name)).isSuperset(of: ["apns-relay", "Relay", "MockAPNs", "APNs", "APNsCore", "Basics",
                                                        "Observability", "WebPush", "HTTPServer", "EventLoop", "CNghttp2"]))
        #expect(!linked.contains { $0.name == "BenchSupport" || $0.directory.hasPrefix("Tests/") })
        let problems = ImportGraph.foundationImports(in: linked) { Self.swiftImports(under: $0.directory) }
        #expect(problems.isEmpty, Comment(rawValue: "\n" + problems.joined(separator: "\n")))
    }

    @Test("a Foundation import anywhere below a product is reported, one beside it is not")
    func foundationBelowAProductIsFound() {
        let manifest = """
            .executable(name: "tool", targets: ["Tool"]),
            .target(name: "Leaf"),
            .target(name: "Mid", dependencies: ["Leaf"]),
            .target(name: "Beside"),
            .executableTarget(name: "Tool", dependencies: ["Mid"]),
        """
        let targets = ImportGraph.targets(manifest: manifest)
        let sources: [String: String] = [
            "Leaf": "#if canImport(FoundationEssentials)\nimport FoundationEssentials\n#else\nimport Foundation\n#endif\n",
            "Mid": "import Leaf\n// import FoundationInternationalization\n",
            "Beside": "import Foundation\n",
            "Tool": "import Mid\nimport Glibc\n",
        ]
        let linked = ImportGraph.closure(of: ImportGraph.productTargets(manifest: manifest, product: "tool"), in: targets)
        #expect(linked.map(\.name).sorted() == ["Leaf", "Mid", "Tool"])
        let problems = ImportGraph.foundationImports(in: linked) { ImportGraph.imports(source: sources[$0.name]!) }
        #expect(problems == ["Leaf imports Foundation", "Leaf imports FoundationEssentials"])
    }

    @Test("an undeclared import and an unused declaration are both reported")
    func mismatchesAreFoundBothWays() {
        let manifest = """
            .target(name: "Low"),
            .target(name: "Mid", dependencies: ["Low"]),
            .target(name: "Top", dependencies: ["Mid", "Low"]),
        """
        let targets = ImportGraph.targets(manifest: manifest)
        let sources: [String: String] = [
            "Low": "import Foundation\n",
            "Mid": "internal import Low\n// import Top\n",
            "Top": "@testable import Mid\nimport struct Low.Thing\nimport Elsewhere\n@Test(\"an import of nothing\")\n",
        ]
        let problems = ImportGraph.mismatches(targets: targets) { ImportGraph.imports(source: sources[$0.name]!) }
        #expect(problems == ["Top imports Elsewhere, which is neither a target nor a toolchain module"])

        let drifted = ImportGraph.targets(manifest: manifest.replacingOccurrences(of: "[\"Mid\", \"Low\"]", with: "[\"Mid\"]")
            .replacingOccurrences(of: "[\"Low\"]", with: "[\"Low\", \"Top\"]"))
        let drift = ImportGraph.mismatches(targets: drifted) { ImportGraph.imports(source: sources[$0.name]!) }
        #expect(drift.contains("Top imports Low but Package.swift does not declare it"))
        #expect(drift.contains("Mid declares Top in Package.swift but never imports it"))
    }

    @Test("a C module imported without internal is reported, and a manifest inside a string is not read")
    func cModulesAreInternalAndStringsAreText() {
        let manifest = """
            .systemLibrary(name: "CLow", pkgConfig: "low"),
            .target(name: "Wrapper", dependencies: ["CLow"]),
            .target(name: "Leaky", dependencies: ["CLow"]),
        """
        let targets = ImportGraph.targets(manifest: manifest)
        let sources: [String: String] = [
            "Wrapper": "internal import CLow\nlet scratch = \"\"\"\n    import PackageDescription\n    \"\"\"\n",
            "Leaky": "import CLow\n",
        ]
        let problems = ImportGraph.mismatches(targets: targets) { sources[$0.name].map(ImportGraph.imports(source:)) }
        #expect(problems == ["Leaky imports the C module CLow without `internal import`"])
    }
}
