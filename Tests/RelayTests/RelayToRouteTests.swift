import Testing
@testable import Relay

private let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
private let badToken = "device token is not an even number of hex digits, 64 to 200 long"

private func production(_ t: String = token, extra: String? = nil) -> RouteMatch {
    .relayTo(RelayToRoute(deviceToken: t, sandbox: false, extra: extra))
}

private func development(_ t: String = token, extra: String? = nil) -> RouteMatch {
    .relayTo(RelayToRoute(deviceToken: t, sandbox: true, extra: extra))
}

@Suite("relay-to route")
struct RelayToRouteTests {
    static let table: [(String, RouteMatch)] = [
        ("/relay-to/production/\(token)", production()),
        ("/relay-to/development/\(token)", development()),
        ("/relay-to/production/\(token)/", production()),
        ("/relay-to/production/\(token.uppercased())", production(token.uppercased())),
        ("/relay-to/production/\(token)/a", production(extra: "a")),
        ("/relay-to/development/\(token)/a/b/c", development(extra: "a/b/c")),
        ("/relay-to/production/\(token)/a/b/", production(extra: "a/b/")),
        ("/relay-to/production/\(token)//a", production(extra: "/a")),
        ("/relay-to/production/\(token)/a%20b%2Fc/%F0%9F%98%80", production(extra: "a b/c/😀")),
        ("/relay-to/production/\(token)/a+b", production(extra: "a+b")),
        ("/relay-to/staging/\(token)", .notFound),
        ("/relay-to/Production/\(token)", .notFound),
        ("/relay-to/sandbox/\(token)", .notFound),
        ("/relay-to//\(token)", .notFound),
        ("/relay-to/production", .notFound),
        ("/relay-to/production/", .notFound),
        ("/relay-to/production//a", .notFound),
        ("/relay-to/", .notFound),
        ("/relay-to", .notFound),
        ("/relay-tox/production/\(token)", .notFound),
        ("/push/\(token)/42", .notFound),
        ("/relay-to/production/\(token.dropLast())", .badRequest(reason: badToken)),
        ("/relay-to/development/nothex/a", .badRequest(reason: badToken)),
        ("/relay-to/production/\(token)/a%2", .badRequest(reason: "extra path has a malformed percent-escape")),
        ("/relay-to/production/\(token)/%FF", .badRequest(reason: "extra path is not UTF-8 once percent-decoded")),
    ]

    @Test("paths map to a route, a 404 or a 400", arguments: table)
    func match(_ path: String, _ expected: RouteMatch) {
        #expect(RelayToRoute.match(path: path) == expected)
    }

    @Test("an extra path over the id limit is refused; at the limit it passes")
    func extraLimit() {
        let atLimit = String(repeating: "%41", count: PushRoute.maxIDBytes)
        #expect(RelayToRoute.match(path: "/relay-to/production/\(token)/\(atLimit)")
                == production(extra: String(repeating: "A", count: PushRoute.maxIDBytes)))
        let over = String(repeating: "a/", count: PushRoute.maxIDBytes / 2) + "a"
        #expect(RelayToRoute.match(path: "/relay-to/production/\(token)/\(over)")
                == .badRequest(reason: "extra path is 513 bytes, over the 512-byte limit"))
    }
}
