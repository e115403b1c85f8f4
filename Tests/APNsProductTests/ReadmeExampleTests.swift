import Foundation
import Testing
import MockAPNs
import BuiltProducts

/// The repository, found from this file: Tests/APNsProductTests/ReadmeExampleTests.swift.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// `swift` on the PATH, which the scratch package is built with.
let swiftExecutable: URL? = {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let candidate = URL(fileURLWithPath: String(dir)).appendingPathComponent("swift")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    return nil
}()

/// The first ```swift block after docs/LIBRARY.md's "## Use as a library" heading (the library's
/// page, which README links to).
func readmeLibraryBlock() throws -> String {
    let readme = try String(contentsOf: repositoryRoot.appendingPathComponent("docs/LIBRARY.md"), encoding: .utf8)
    let section = try #require(readme.range(of: "\n## Use as a library\n"), "docs/LIBRARY.md has no \"Use as a library\" section")
    let rest = readme[section.upperBound...]
    let open = try #require(rest.range(of: "```swift\n"))
    let close = try #require(rest[open.upperBound...].range(of: "\n```"))
    return String(rest[open.upperBound..<close.lowerBound]) + "\n"
}

@Suite("docs/LIBRARY.md: Use as a library", .serialized)
struct ReadmeExampleTests {
    @Test("the library page's block, in a package that depends only on the APNs product, sends an alert to the emulator",
          .enabled(if: swiftExecutable != nil), .timeLimit(.minutes(30)))
    func readmeBlockRuns() async throws {
        let block = try readmeLibraryBlock()
        let package = FileManager.default.temporaryDirectory.appendingPathComponent("readme-example-\(UUID().uuidString)")
        let sources = package.appendingPathComponent("Sources/ReadmeExample")
        try FileManager.default.createDirectory(at: sources, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: package) }
        try """
            // swift-tools-version:6.0
            import PackageDescription

            let package = Package(
                name: "ReadmeExample",
                platforms: [.macOS(.v15)],
                dependencies: [.package(path: \(String(reflecting: repositoryRoot.path)))],
                targets: [
                    .executableTarget(name: "ReadmeExample", dependencies: [.product(name: "APNs", package: "\(repositoryRoot.lastPathComponent)")]),
                ]
            )

            """.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try block.write(to: sources.appendingPathComponent("main.swift"), atomically: true, encoding: .utf8)

        // Kept under the repository's .build so a rerun rebuilds only the example itself; built
        // -c debug, or as APNS_PRODUCT_CONFIGURATION says (make test's second pass: release).
        let scratch = repositoryRoot.appendingPathComponent(".build/readme-example")
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFTPM_ENABLE_PLUGINS"] = nil
        let configuration = BuiltProducts.configuration
        let build = try await runProcess(swiftExecutable!, ["build", "-c", configuration, "--package-path", package.path,
                                                            "--scratch-path", scratch.path],
                                         environment: environment, limit: 1500)
        #expect(build.status == 0, "\(build.stdout)\n\(build.stderr)")
        guard build.status == 0 else { return }
        let binary = scratch.appendingPathComponent("\(configuration)/ReadmeExample")

        let emulator = try Emulator()
        defer { emulator.stop() }
        let device = token("", 12)
        let run = try await runProcess(binary, [device], environment: emulator.environment, limit: 30)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.hasPrefix(#"{"ok":true,"status":200,"apns_id":""#), "\(run.stdout)")
        #expect(run.stdout.contains(#""device":"\#(device)""#))
        let record = try #require(emulator.records(for: device).first)
        #expect(String(decoding: record.payload, as: UTF8.self) == #"{"aps":{"alert":{"title":"Hello","body":"Sent with the APNs library"}}}"#)
    }

    @Test("APNsCore is a product of its own, usable without the transport (like APNSwift's APNSCore)")
    func coreIsAProduct() throws {
        let manifest = try String(contentsOf: repositoryRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        #expect(manifest.contains(#".library(name: "APNsCore", targets: ["APNsCore"])"#))
    }

    @Test("the library page's block is at most 6 lines")
    func short() throws {
        #expect(try readmeLibraryBlock().split(separator: "\n", omittingEmptySubsequences: false).count - 1 <= 6)
    }
}
