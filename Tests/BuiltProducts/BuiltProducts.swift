import Foundation

/// What the end-to-end suites run as a user would: the `apns-relay` executable they spawn, and
/// the build configuration of the scratch package they build against the APNs product.
///
/// `make test` runs those suites twice: against the debug build `swift build --build-tests`
/// made, then, with these variables set, against the binary that ships (`make ship`: -O, static
/// PIE), since an -O build can fail where the debug build passes.
public enum BuiltProducts {
    /// The directory of the executables to run (`.build/ship`, where make ship puts them). Unset: the
    /// build directory the test bundle is in.
    public static let binDirectoryVariable = "APNS_RELAY_BIN_DIR"
    /// `debug` (unset) or `release`: how the scratch package that uses the APNs product is built.
    public static let configurationVariable = "APNS_PRODUCT_CONFIGURATION"

    /// APNS_RELAY_BIN_DIR's directory, when it is set and not empty.
    public static let namedDirectory: URL? = {
        guard let path = ProcessInfo.processInfo.environment[binDirectoryVariable], !path.isEmpty else { return nil }
        return URL(fileURLWithPath: path, isDirectory: true)
    }()

    /// The executable `name`: in APNS_RELAY_BIN_DIR when it is set (nil when it is not there,
    /// never one from another build), else next to the test bundle or up to two directories
    /// above it (where SwiftPM puts a build's products).
    public static func executable(_ name: String) -> URL? {
        if let namedDirectory {
            let candidate = namedDirectory.appendingPathComponent(name)
            return FileManager.default.isExecutableFile(atPath: candidate.path) ? candidate : nil
        }
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<3 {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return nil
    }

    /// The `apns-relay` executable the suites spawn.
    public static let relay: URL? = executable("apns-relay")

    /// Whether the suites that spawn `apns-relay` run: it was found, or APNS_RELAY_BIN_DIR names
    /// a directory (where a missing binary then fails them rather than skipping them).
    public static var runsRelay: Bool { relay != nil || namedDirectory != nil }

    /// `relay`, or an error saying where it was looked for.
    public static func relayExecutable() throws -> URL {
        if let relay { return relay }
        if let namedDirectory {
            throw Missing(description: "no apns-relay in \(binDirectoryVariable)=\(namedDirectory.path) (make ship builds it)")
        }
        throw Missing(description: "no apns-relay next to the test bundle: build it first (swift build --build-tests builds it)")
    }

    public struct Missing: Error, CustomStringConvertible {
        public let description: String
    }

    /// APNS_PRODUCT_CONFIGURATION: `release` or, by default, `debug`.
    public static let configuration: String = {
        let value = ProcessInfo.processInfo.environment[configurationVariable] ?? ""
        return value.isEmpty ? "debug" : value
    }()
}
