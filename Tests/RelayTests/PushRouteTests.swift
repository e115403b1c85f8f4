import Testing
@testable import Relay

private let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"
private let upperToken = token.uppercased()

@Suite("push route")
struct PushRouteTests {
    static let table: [(String, String?, RouteMatch)] = [
        ("/push/\(token)/42", nil, .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42/", nil, .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "sandbox=true", .push(PushRoute(deviceToken: token, id: "42", sandbox: true))),
        ("/push/\(token)/42/", "sandbox=true", .push(PushRoute(deviceToken: token, id: "42", sandbox: true))),
        ("/push/\(token)/42", "sandbox=1", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "sandbox=TRUE", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "sandbox", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "x=1&sandbox=true&y", .push(PushRoute(deviceToken: token, id: "42", sandbox: true))),
        ("/push/\(token)/42", "sandbox=true&sandbox=false", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "&&sandbox=true&", .push(PushRoute(deviceToken: token, id: "42", sandbox: true))),
        ("/push/\(token)/42", "sandbox=true&&sandbox=", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/42", "sandboxx=true&=true", .push(PushRoute(deviceToken: token, id: "42", sandbox: false))),
        ("/push/\(token)/é+~", nil, .push(PushRoute(deviceToken: token, id: "é+~", sandbox: false))),
        ("/push/\(token)/42%2F", "sandbox=true", .push(PushRoute(deviceToken: token, id: "42/", sandbox: true))),
        ("/push/\(token)///", nil, .notFound),
        ("/push//", nil, .notFound),
        ("/push/\(upperToken)/42", nil, .push(PushRoute(deviceToken: upperToken, id: "42", sandbox: false))),
        ("/push/\(token)/a%20b%2Fc%3F%F0%9F%98%80", nil, .push(PushRoute(deviceToken: token, id: "a b/c?😀", sandbox: false))),
        ("/push/\(token)/a+b", nil, .push(PushRoute(deviceToken: token, id: "a+b", sandbox: false))),
        ("/push/\(token)", nil, .notFound),
        ("/push/\(token)/", nil, .notFound),
        ("/push/\(token)//", nil, .notFound),
        ("/push//42", nil, .notFound),
        ("/push/\(token)/42/extra", nil, .notFound),
        ("/push/\(token)/42//", nil, .notFound),
        ("/push", nil, .notFound),
        ("/push/", nil, .notFound),
        ("/pushx/\(token)/42", nil, .notFound),
        ("/PUSH/\(token)/42", nil, .notFound),
        ("/metrics", nil, .notFound),
        ("/push/\(token)/a%2", nil, .badRequest(reason: "push id has a malformed percent-escape")),
        ("/push/\(token)/a%zz", nil, .badRequest(reason: "push id has a malformed percent-escape")),
        ("/push/\(token)/%FF", nil, .badRequest(reason: "push id is not UTF-8 once percent-decoded")),
        ("/push/\(token.dropLast())/42", nil, .badRequest(reason: "device token is not an even number of hex digits, 64 to 200 long")),
        ("/push/\(token.dropLast(2))/42", nil, .badRequest(reason: "device token is not an even number of hex digits, 64 to 200 long")),
        ("/push/\(token.dropLast())g/42", nil, .badRequest(reason: "device token is not an even number of hex digits, 64 to 200 long")),
        ("/push/\(String(repeating: "ab", count: 101))/42", nil, .badRequest(reason: "device token is not an even number of hex digits, 64 to 200 long")),
        ("/push/\(String(repeating: "ab", count: 100))/42", nil, .push(PushRoute(deviceToken: String(repeating: "ab", count: 100), id: "42", sandbox: false))),
    ]

    @Test("paths and queries map to a route, a 404 or a 400", arguments: table)
    func match(_ path: String, _ query: String?, _ expected: RouteMatch) {
        #expect(PushRoute.match(path: path, query: query) == expected)
    }

    @Test("an upper-case token is kept as sent and lower-cased only for Apple")
    func tokenCase() {
        let route = PushRoute(deviceToken: upperToken, id: "1", sandbox: false)
        #expect(route.deviceToken == upperToken)
        #expect(route.device?.hex == token)
    }

    @Test("an id over the limit is refused; at the limit it passes")
    func idLimit() {
        let atLimit = String(repeating: "%41", count: PushRoute.maxIDBytes)
        #expect(PushRoute.match(path: "/push/\(token)/\(atLimit)", query: nil)
                == .push(PushRoute(deviceToken: token, id: String(repeating: "A", count: PushRoute.maxIDBytes), sandbox: false)))
        let plainAtLimit = String(repeating: "a", count: PushRoute.maxIDBytes)
        #expect(PushRoute.match(path: "/push/\(token)/\(plainAtLimit)/", query: nil)
                == .push(PushRoute(deviceToken: token, id: plainAtLimit, sandbox: false)))
        let over = String(repeating: "a", count: PushRoute.maxIDBytes + 1)
        #expect(PushRoute.match(path: "/push/\(token)/\(over)", query: nil)
                == .badRequest(reason: "push id is 513 bytes, over the 512-byte limit"))
    }
}

@Suite("push route prefix check")
struct PushRoutePrefixTests {
    @Test("the byte prefix check agrees with starts(with:) over the UTF-8, for texts and prefixes of every shape")
    func prefixes() {
        let texts = ["", "/", "/push/", "/push", "/push/ab/1", "/relay-to/production/ab", "/pushé/", "é/push/", "/PUSH/", "/push/\u{0}"]
        for text in texts {
            for prefix in ["/push/", "/relay-to/", "", "/", "é", text] {
                #expect(PushRoute.hasBytePrefix(text, prefix) == text.utf8.starts(with: prefix.utf8), "\(text) \(prefix)")
            }
            // A bridged or substring-made String may lack contiguous bytes only elsewhere; both ways agree.
            let copy = String(text[...])
            #expect(PushRoute.hasBytePrefix(copy, "/push/") == copy.utf8.starts(with: "/push/".utf8))
        }
    }
}
