// swift-tools-version:6.0
import PackageDescription

// Arrows point down only (each target's list below is exactly what its files import; the
// PackageGraphTests suite reads this file one target per line, so keep each target on one line):
//   apns-relay → Relay → {APNs, WebPush, HTTPServer}
//   APNs → {APNsCore (models, payloads, reasons, provider tokens; no I/O), Transport, HTTP2, EventLoop, Basics}
//   APNs, MockAPNs → Transport → {HTTP2, EventLoop, OpenSSLSupport}
//   WebPushCrypto → OpenSSLSupport; MockAPNs → CertificateSupport → OpenSSLSupport
//   HTTPServer → EventLoop → Observability (logs, metrics; each loop writes its log lines in batches)
//   HTTPServer → OpenSSLSupport (HTTPS: the server's own certificate, TLS over its TCP streams)
//   PushStore → {CSQLite, CHiredis, EventLoop (its writer thread), Basics} (pushes held on disk or in Redis)
//   Basics (what every layer shares: base64url, hex, JSON strings, UUIDs, the wall clock, random bytes, the
//   one shape of errors) is the leaf every layer may import; it imports
//   nothing of ours. MockAPNs shares no code with APNs, APNsCore or Basics: it keeps its own
//   decoders on purpose, so a bug in ours cannot hide behind the same bug in the emulator.
// Only OpenSSLSupport, WebPushCrypto, CertificateSupport, HTTP2, EventLoop and PushStore import
// the C targets, always with `internal import`.
// The APNs product holds APNs, APNsCore, Basics and what they need: never the WebPush crypto or
// the test certificates.
let package = Package(
    name: "apns-relay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "apns-relay", targets: ["apns-relay"]),
        .executable(name: "apns-mock", targets: ["apns-mock"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "APNsCore", targets: ["APNsCore"]),
        .library(name: "MockAPNs", targets: ["MockAPNs"]),
    ],
    targets: [
        // C libraries from Debian, seen through module maps.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CHiredis", providers: [.apt(["libhiredis-dev"])]),
        // GNU-only calls (epoll, eventfd, accept4) live in a .c file, never in a module-map header.
        .target(name: "CLinux"),

        .target(name: "Basics"),
        .target(name: "Observability", dependencies: ["Basics"]),
        .target(name: "OpenSSLSupport", dependencies: ["COpenSSL", "Basics"]),
        .target(name: "EventLoop", dependencies: ["CLinux", "Observability", "Basics"]),
        .target(name: "HTTP2", dependencies: ["CNghttp2", "Basics"]),
        .target(name: "Transport", dependencies: ["EventLoop", "OpenSSLSupport", "HTTP2", "Basics"]),
        .target(name: "CertificateSupport", dependencies: ["COpenSSL", "OpenSSLSupport"]),
        .target(name: "APNsCore", dependencies: ["Basics"]),
        .target(name: "APNs", dependencies: ["APNsCore", "Transport", "OpenSSLSupport", "EventLoop", "HTTP2", "Basics"]),
        .target(name: "WebPush", dependencies: ["Basics"]),
        .target(name: "WebPushCrypto", dependencies: ["COpenSSL", "OpenSSLSupport", "WebPush", "Basics"]),
        .target(name: "HTTPServer", dependencies: ["EventLoop", "OpenSSLSupport", "Basics"]),
        // Pushes held while Apple is out of reach: the store's protocol and its engines (SQLite, Redis).
        .target(name: "PushStore", dependencies: ["CSQLite", "CHiredis", "EventLoop", "Basics"]),
        .target(name: "Relay", dependencies: ["APNs", "WebPush", "HTTPServer", "Basics", "Observability", "EventLoop", "OpenSSLSupport", "PushStore"]),
        .target(name: "MockAPNs", dependencies: ["Transport", "HTTP2", "EventLoop", "OpenSSLSupport", "CertificateSupport"]),
        .executableTarget(name: "apns-mock", dependencies: ["MockAPNs", "OpenSSLSupport", "CertificateSupport"]),
        .executableTarget(name: "apns-relay", dependencies: ["Relay", "MockAPNs", "APNs", "Observability", "OpenSSLSupport", "EventLoop", "WebPushCrypto", "Basics"]),
        // What relay-bench and relay-soak share: the relay as a child process, loopback probes, the pushes.
        .target(name: "BenchSupport", dependencies: ["OpenSSLSupport", "WebPushCrypto", "Basics"]),
        .executableTarget(name: "relay-bench", dependencies: ["BenchSupport", "MockAPNs", "OpenSSLSupport", "CertificateSupport", "Transport", "HTTP2", "EventLoop", "Basics"]),
        .executableTarget(name: "relay-soak", dependencies: ["BenchSupport", "MockAPNs", "OpenSSLSupport", "CertificateSupport"]),

        .testTarget(name: "BasicsTests", dependencies: ["Basics"]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "Basics", "ObservabilityTestSupport"]),
        .testTarget(name: "OpenSSLSupportTests", dependencies: ["OpenSSLSupport", "CertificateSupport", "COpenSSL"]),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "TestWaits"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "Basics"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "HTTP2", "EventLoop", "OpenSSLSupport", "CertificateSupport", "TestWaits"]),
        .testTarget(name: "MockAPNsTests", dependencies: ["MockAPNs", "Transport", "HTTP2", "EventLoop", "OpenSSLSupport", "CertificateSupport", "TestWaits"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsCore", "Basics", "MockAPNs", "Transport", "EventLoop", "OpenSSLSupport", "CertificateSupport", "TestWaits"]),
        .testTarget(name: "WebPushTests", dependencies: ["WebPush"]),
        .testTarget(name: "WebPushCryptoTests", dependencies: ["WebPushCrypto", "OpenSSLSupport", "Basics"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "EventLoop", "OpenSSLSupport", "CertificateSupport", "TestWaits"]),
        // The store put from a child process the crash tests kill -9, and its group-commit figures.
        .executableTarget(name: "push-store-probe", dependencies: ["PushStore"], path: "Tests/push-store-probe"),
        .testTarget(name: "PushStoreTests", dependencies: ["PushStore", "BuiltProducts", "TestWaits"]),
        // Where the suites that run the built apns-relay find it (APNS_RELAY_BIN_DIR: make test's
        // second pass points it at the shipped binary) and how the scratch package is built.
        .target(name: "BuiltProducts", path: "Tests/BuiltProducts"),
        // A log sink that keeps records in memory, for the suites that assert on what was logged.
        .target(name: "ObservabilityTestSupport", dependencies: ["Observability"], path: "Tests/ObservabilityTestSupport"),
        // How the suites wait: a bounded poll of a condition, and blocking work on a thread of its own.
        .target(name: "TestWaits", path: "Tests/TestWaits"),
        // The APNs product and the CLI as a user meets them: the built executable, a scratch package.
        .testTarget(name: "APNsProductTests", dependencies: ["MockAPNs", "OpenSSLSupport", "BuiltProducts", "TestWaits"]),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "MockAPNs", "APNs", "HTTPServer", "WebPush", "Observability", "OpenSSLSupport", "CertificateSupport", "WebPushCrypto", "Basics", "EventLoop", "BuiltProducts", "ObservabilityTestSupport", "TestWaits", "PushStore"]),
        // Package.swift against the import lines: the arrows above are exactly what the code imports.
        .testTarget(name: "PackageGraphTests"),
    ],
    swiftLanguageModes: [.v6]
)
