// swift-tools-version:6.0
import PackageDescription

// Arrows point down only:
//   apns-relay → Relay → {APNs, WebPush, HTTPServer}
//   APNs → {APNsCore (models, payloads, reasons, provider tokens, JSON; no I/O), Transport}
//   APNs, MockAPNs → Transport → {HTTP2, EventLoop, OpenSSLSupport}
//   WebPushCrypto → CryptoSupport → OpenSSLSupport; MockAPNs → CertificateSupport → OpenSSLSupport
//   HTTPServer → EventLoop
//   EventLoop → Observability (each loop writes its log lines in batches)
//   Observability (logs, metrics) is imported by any module above the C layer; it imports nothing.
// Only the *Support modules over OpenSSL, HTTP2 and EventLoop import the C targets.
// The APNs product holds APNs, APNsCore and what they need: never the WebPush crypto or the
// test certificates.
let package = Package(
    name: "apns-relay",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "apns-relay", targets: ["apns-relay"]),
        .executable(name: "apns-mock", targets: ["apns-mock"]),
        .library(name: "APNs", targets: ["APNs"]),
        .library(name: "MockAPNs", targets: ["MockAPNs"]),
    ],
    targets: [
        // C libraries from Debian, seen through module maps.
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // GNU-only calls (epoll, eventfd, accept4) live in a .c file, never in a module-map header.
        .target(name: "CLinux"),

        .target(name: "Observability"),
        .target(name: "OpenSSLSupport", dependencies: ["COpenSSL"]),
        .target(name: "EventLoop", dependencies: ["CLinux", "Observability"]),
        .target(name: "HTTP2", dependencies: ["CNghttp2"]),
        .target(name: "Transport", dependencies: ["EventLoop", "OpenSSLSupport", "HTTP2"]),
        .target(name: "CryptoSupport", dependencies: ["COpenSSL", "OpenSSLSupport"]),
        .target(name: "CertificateSupport", dependencies: ["COpenSSL", "OpenSSLSupport"]),
        .target(name: "APNsCore"),
        .target(name: "APNs", dependencies: ["APNsCore", "Transport", "OpenSSLSupport", "EventLoop", "HTTP2"]),
        .target(name: "WebPush"),
        .target(name: "WebPushCrypto", dependencies: ["CryptoSupport"]),
        .target(name: "HTTPServer", dependencies: ["EventLoop", "Observability"]),
        .target(name: "Relay", dependencies: ["APNs", "WebPush", "HTTPServer", "Observability", "EventLoop", "OpenSSLSupport"]),
        .target(name: "MockAPNs", dependencies: ["Transport", "OpenSSLSupport", "CertificateSupport", "Observability"]),
        .executableTarget(name: "apns-mock", dependencies: ["MockAPNs"]),
        .executableTarget(name: "apns-relay", dependencies: ["Relay", "MockAPNs", "APNs", "HTTPServer", "Observability", "OpenSSLSupport", "EventLoop", "WebPush", "WebPushCrypto"]),
        // What relay-bench and relay-soak share: the relay as a child process, loopback probes, the pushes.
        .target(name: "BenchSupport", dependencies: ["OpenSSLSupport", "CryptoSupport", "WebPushCrypto"]),
        .executableTarget(name: "relay-bench", dependencies: ["BenchSupport", "MockAPNs", "OpenSSLSupport", "CertificateSupport", "Transport", "EventLoop"]),
        .executableTarget(name: "relay-soak", dependencies: ["BenchSupport", "MockAPNs", "OpenSSLSupport", "CertificateSupport"]),

        .testTarget(name: "ObservabilityTests", dependencies: ["Observability"]),
        .testTarget(name: "OpenSSLSupportTests", dependencies: ["OpenSSLSupport", "CryptoSupport", "CertificateSupport", "COpenSSL"]),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop"]),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2"]),
        .testTarget(name: "TransportTests", dependencies: ["Transport", "CertificateSupport"]),
        .testTarget(name: "MockAPNsTests", dependencies: ["MockAPNs", "Transport", "OpenSSLSupport"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "APNsCore", "MockAPNs", "Transport", "EventLoop", "OpenSSLSupport", "CertificateSupport"]),
        .testTarget(name: "WebPushTests", dependencies: ["WebPush"]),
        .testTarget(name: "WebPushCryptoTests", dependencies: ["WebPushCrypto", "CryptoSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer"]),
        // The APNs product and the CLI as a user meets them: the built executable, a scratch package.
        .testTarget(name: "APNsProductTests", dependencies: ["MockAPNs", "OpenSSLSupport"]),
        .testTarget(name: "RelayTests", dependencies: ["Relay", "MockAPNs", "APNs", "HTTPServer", "WebPush", "Observability", "OpenSSLSupport", "CertificateSupport", "EventLoop", "WebPushCrypto"]),
    ],
    swiftLanguageModes: [.v6]
)
