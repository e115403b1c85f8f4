// The package's import graph, read from the files themselves: Package.swift's targets and the
// `import` lines of every Swift file, and docs/DEVELOPMENT.md's module table. No SwiftPM, no build: text
// in, mismatches out.
import Foundation
//
// Package.swift must list one target per line (name and dependencies on the same line): that
// is the shape this reader understands, and the manifest's own comment says so.

/// One target as Package.swift declares it.
struct DeclaredTarget: Equatable {
    var name: String
    var directory: String
    var dependencies: Set<String>
    /// A `.systemLibrary` or a target holding C sources: imported only with `internal import`.
    var isC: Bool
}

/// One `import` line of a Swift file.
struct ImportLine: Hashable {
    var module: String
    /// Written `internal import` (or `private`/`fileprivate`), so nothing re-exports the module.
    var isInternal: Bool
}

enum ImportGraph {
    /// Modules the package's own targets may import without declaring them.
    static let toolchainModules: Set<String> = [
        "Swift", "Foundation", "FoundationEssentials", "FoundationNetworking", "Glibc", "Musl",
        "Darwin", "Dispatch", "Synchronization", "Testing", "XCTest", "_Concurrency", "os",
    ]

    /// C targets whose name is not enough to tell (a `.target` with only C sources).
    static let cTargets: Set<String> = ["CLinux"]

    /// Every `.target`, `.executableTarget`, `.testTarget` and `.systemLibrary` of a manifest
    /// written one target per line, with its string dependencies.
    static func targets(manifest: String) -> [DeclaredTarget] {
        var found: [DeclaredTarget] = []
        for rawLine in manifest.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.drop(while: { $0 == " " })
            guard !line.hasPrefix("//") else { continue }
            let kinds = [".target(", ".executableTarget(", ".testTarget(", ".systemLibrary("]
            guard let kind = kinds.first(where: { line.hasPrefix($0) }) else { continue }
            guard let name = quoted(after: "name:", in: line) else { continue }
            let root = kind == ".testTarget(" ? "Tests" : "Sources"
            let directory = quoted(after: "path:", in: line) ?? "\(root)/\(name)"
            var dependencies: Set<String> = []
            if let open = line.range(of: "dependencies: [") {
                let list = line[open.upperBound...].prefix(while: { $0 != "]" })
                var inside = false
                var current = ""
                for character in list {
                    if character == "\"" {
                        if inside { dependencies.insert(current); current = "" }
                        inside.toggle()
                    } else if inside {
                        current.append(character)
                    }
                }
            }
            let isC = kind == ".systemLibrary(" || cTargets.contains(name)
            found.append(DeclaredTarget(name: name, directory: directory, dependencies: dependencies, isC: isC))
        }
        return found
    }

    /// The imports of a Swift file (`import X`, `@testable import X`, `internal import X`,
    /// `@preconcurrency import X`, `import struct X.Y`, ...). Comments and multi-line string
    /// literals (a test's scratch manifest, say) are skipped.
    static func imports(source: String) -> Set<ImportLine> {
        var found: Set<ImportLine> = []
        var inBlockComment = false
        var inMultilineString = false
        for rawLine in source.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = Substring(rawLine.drop(while: { $0 == " " || $0 == "\t" }))
            if inMultilineString {
                if line.hasPrefix("\"\"\"") { inMultilineString = false }
                continue
            }
            if line.contains("\"\"\""), !line.hasPrefix("//") {
                // An opening `"""` ends its line; the literal's text starts on the next one.
                if line.components(separatedBy: "\"\"\"").count == 2 { inMultilineString = true }
                continue
            }
            if inBlockComment {
                if line.contains("*/") { inBlockComment = false }
                continue
            }
            if line.hasPrefix("/*") { if !line.contains("*/") { inBlockComment = true }; continue }
            if line.hasPrefix("//") || line.hasPrefix("#") { continue }
            var words = line.split(separator: " ", omittingEmptySubsequences: true)
            var isInternal = false
            // Attributes (`@testable`, `@preconcurrency`: bare words, unlike `@Test("…")`) and
            // access levels come first.
            while let first = words.first,
                  (first.hasPrefix("@") && first.dropFirst().allSatisfy { $0.isLetter || $0 == "_" })
                    || ["public", "package", "internal", "fileprivate", "private"].contains(first) {
                if ["internal", "fileprivate", "private"].contains(first) { isInternal = true }
                words.removeFirst()
            }
            guard words.first == "import", words.count >= 2 else { continue }
            var moduleWord = words[1]
            if ["struct", "class", "enum", "protocol", "func", "var", "let", "typealias"].contains(moduleWord),
               words.count >= 3 {
                moduleWord = words[2]
            }
            let module = moduleWord.prefix(while: { $0 != "." && $0 != ";" })
            if !module.isEmpty { found.insert(ImportLine(module: String(module), isInternal: isInternal)) }
        }
        return found
    }

    /// The targets a product is made of, from its `.executable(` or `.library(` line of the manifest.
    static func productTargets(manifest: String, product: String) -> [String] {
        for rawLine in manifest.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.drop(while: { $0 == " " })
            guard line.hasPrefix(".executable(") || line.hasPrefix(".library("),
                  quoted(after: "name:", in: line) == product,
                  let open = line.range(of: "targets: [") else { continue }
            return line[open.upperBound...].prefix(while: { $0 != "]" })
                .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }
        }
        return []
    }

    /// `roots` and every target they depend on, directly or not: what is linked into a product.
    static func closure(of roots: [String], in targets: [DeclaredTarget]) -> [DeclaredTarget] {
        let byName = Dictionary(targets.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        var seen: Set<String> = []
        var pending = roots
        while let name = pending.popLast() {
            guard seen.insert(name).inserted, let target = byName[name] else { continue }
            pending.append(contentsOf: target.dependencies)
        }
        return targets.filter { seen.contains($0.name) }
    }

    /// The toolchain's Foundation modules: the relay's binary links none of them.
    static let foundationModules: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
    ]

    /// One line per target of `targets` that imports a Foundation module.
    static func foundationImports(in targets: [DeclaredTarget], importsOf: (DeclaredTarget) -> Set<ImportLine>?) -> [String] {
        targets.flatMap { target in
            let modules = Set((importsOf(target) ?? []).map(\.module)).intersection(foundationModules)
            return modules.sorted().map { "\(target.name) imports \($0)" }
        }
    }

    /// One line per arrow that is imported but not declared, declared but never imported, or a
    /// C module imported without `internal`. `importsOf` gives the union of a target's Swift
    /// imports (nil for a target without Swift sources, whose declarations are not checked).
    static func mismatches(targets: [DeclaredTarget], importsOf: (DeclaredTarget) -> Set<ImportLine>?) -> [String] {
        let names = Set(targets.map(\.name))
        let cModules = Set(targets.filter(\.isC).map(\.name))
        var problems: [String] = []
        for target in targets {
            guard let lines = importsOf(target) else { continue }
            let imported = Set(lines.map(\.module))
            let ownImports = imported.intersection(names).subtracting([target.name])
            for module in ownImports.subtracting(target.dependencies).sorted() {
                problems.append("\(target.name) imports \(module) but Package.swift does not declare it")
            }
            for module in target.dependencies.subtracting(ownImports).sorted() {
                problems.append("\(target.name) declares \(module) in Package.swift but never imports it")
            }
            for module in imported.subtracting(names).subtracting(toolchainModules).sorted() {
                problems.append("\(target.name) imports \(module), which is neither a target nor a toolchain module")
            }
            let exposed = Set(lines.filter { cModules.contains($0.module) && !$0.isInternal }.map(\.module))
            for module in exposed.sorted() {
                problems.append("\(target.name) imports the C module \(module) without `internal import`")
            }
        }
        return problems
    }

    /// docs/DEVELOPMENT.md's module table (the one whose header starts `| module | holds | imports`): each
    /// module named in a row's first cell, with the imports its last cell lists (`—` for none).
    static func moduleTable(readme: String) -> [String: Set<String>] {
        var rows: [String: Set<String>] = [:]
        var inTable = false
        for rawLine in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("| module | holds | imports") { inTable = true; continue }
            guard inTable else { continue }
            guard line.hasPrefix("|") else { break }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, !cells[1].hasPrefix("---") else { continue }
            let names = cells[1].split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
            let importsCell = cells[cells.count - 2]
            let imports = importsCell == "—" ? [] : Set(importsCell.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
            for name in names { rows[name] = imports }
        }
        return rows
    }

    private static func quoted(after label: String, in line: Substring) -> String? {
        guard let labelRange = line.range(of: label) else { return nil }
        let rest = line[labelRange.upperBound...].drop(while: { $0 == " " })
        guard rest.first == "\"" else { return nil }
        return String(rest.dropFirst().prefix(while: { $0 != "\"" }))
    }
}
