import Testing
import Foundation
import OpenSSLSupport
import Transport
import CertificateSupport
import MockAPNs
import TestWaits

// Every way the emulator plays Apple out of reach (MockAPNsServer+Outages.swift), over real
// TLS + HTTP/2 on loopback through the harness in WireHarness.swift.

@Suite("MockAPNsServer outages", .serialized)
struct OutageTests {
    @Test("takeAway cuts open connections and refuses connects on the same port; bringBack serves again")
    func takeAwayAndBringBack() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server, port = server.port
        let first = Client()
        let connection = try await harness.connect(first).get()
        _ = try #require(try await first.result(try await push(connection))).get()

        server.takeAway()
        #expect(!server.isServing)
        #expect(try await first.wait { $0.closed }, "an open connection outlived takeAway")
        guard case .failure(let error) = try await harness.connect(Client()) else {
            Issue.record("connected while taken away")
            return
        }
        #expect(error.code == .connectFailed)

        try server.bringBack()
        #expect(server.isServing)
        #expect(server.port == port)
        let second = Client()
        let again = try await harness.connect(second).get()
        #expect(try #require(try await second.result(try await push(again))).get().status == 200)
    }

    @Test("takeAway(for:) comes back by itself; a later takeAway is not undone by an earlier timer")
    func takeAwayForAWhile() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        server.takeAway(for: .milliseconds(200))
        guard case .failure = try await harness.connect(Client()) else {
            Issue.record("connected while taken away")
            return
        }
        #expect(try await eventually { (try? await harness.connect(Client()).get()) != nil })

        // A timed comeback scheduled earlier must not end a later outage.
        server.takeAway(for: .milliseconds(100))
        server.takeAway()
        let started = ContinuousClock.now
        #expect(try await eventually(within: .seconds(1)) { ContinuousClock.now - started > .milliseconds(400) && !server.isServing })
        guard case .failure = try await harness.connect(Client()) else {
            Issue.record("an earlier timer brought the emulator back")
            return
        }
    }

    @Test("goSilent accepts TCP and never speaks TLS: the client's handshake times out; bringBack serves again")
    func silent() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        let first = Client()
        let connection = try await harness.connect(first).get()
        _ = try #require(try await first.result(try await push(connection))).get()

        try server.goSilent()
        #expect(try await first.wait { $0.closed }, "an open connection outlived goSilent")
        let result = try await harness.connect(Client(), timeout: .milliseconds(500))
        guard case .failure(let error) = result else {
            Issue.record("a TLS handshake finished while silent")
            return
        }
        #expect(error.code == .timedOut, "\(error)")
        if case .timedOut(let step, _)? = error.cause { #expect(step == .tlsHandshake) } else { Issue.record("no step: \(error)") }
        #expect(server.silentConnectionCount == 1, "the TCP connect was not accepted")
        #expect(server.connectionCount == 1, "a silent connection reached the HTTP/2 side")

        try server.bringBack()
        let second = Client()
        let again = try await harness.connect(second).get()
        #expect(try #require(try await second.result(try await push(again))).get().status == 200)
    }

    @Test("bringBack cuts a handshake held silent, so the client learns at once")
    func silentHandshakeCutOnComeback() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        try server.goSilent(for: .milliseconds(300))
        // The client would wait 20 s; the comeback closes its connection long before.
        let started = ContinuousClock.now
        let result = try await harness.connect(Client(), timeout: .seconds(20))
        guard case .failure(let error) = result else {
            Issue.record("a TLS handshake finished while silent")
            return
        }
        #expect(error.code != .timedOut, "\(error)")
        #expect(ContinuousClock.now - started < .seconds(15))
        #expect(try await eventually { (try? await harness.connect(Client()).get()) != nil })
    }

    @Test("presentCertificate: another CA's certificate fails verification for a client trusting the old CA, passes for one given the new CA; presentOwnCertificate returns")
    func otherCA() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        let first = Client()
        let connection = try await harness.connect(first).get()
        _ = try #require(try await first.result(try await push(connection))).get()

        let other = try TestCertificates.make(caName: "Other Root CA for the emulator")
        try server.presentCertificate(other)
        #expect(server.presentedCertificates.caPEM == other.caPEM)
        #expect(try await first.wait { $0.closed }, "a connection made with the old certificate stayed open")
        guard case .failure(let error) = try await harness.connect(Client()) else {
            Issue.record("a client trusting only the old CA accepted the other CA's certificate")
            return
        }
        guard case .tls(let tlsError)? = error.cause else {
            Issue.record("not a TLS failure: \(error)")
            return
        }
        #expect(tlsError.code == .certificateVerificationFailed)
        #expect(tlsError.verifyResult == 20, "the other CA is unknown (unable to get local issuer), \(tlsError)")

        let trustsOther = try TLSContext.client(trustSystemStore: false, extraCAPEM: other.caPEM)
        let second = Client()
        let onOther = try await harness.connect(second, tls: trustsOther).get()
        #expect(try #require(try await second.result(try await push(onOther))).get().status == 200)

        try server.presentOwnCertificate()
        #expect(try await second.wait { $0.closed })
        let third = Client()
        let back = try await harness.connect(third).get()
        #expect(try #require(try await third.result(try await push(back))).get().status == 200)
    }

    @Test("a certificate presented while taken away is the one served at the comeback")
    func certificateAcrossComeback() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        server.takeAway()
        let other = try TestCertificates.make(caName: "Other Root CA for the emulator")
        try server.presentCertificate(other)
        #expect(!server.isServing)
        try server.bringBack()
        guard case .failure = try await harness.connect(Client()) else {
            Issue.record("the old CA's trust accepted the certificate presented while away")
            return
        }
        let client = Client()
        let connection = try await harness.connect(client, tls: try TLSContext.client(trustSystemStore: false, extraCAPEM: other.caPEM)).get()
        #expect(try #require(try await client.result(try await push(connection))).get().status == 200)
    }

    @Test("answerUnavailable answers every push 503 ServiceUnavailable on the same connection, then 200 after answerNormally")
    func unavailable() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        let client = Client()
        let connection = try await harness.connect(client).get()
        _ = try #require(try await client.result(try await push(connection))).get()

        server.answerUnavailable()
        for token in [Wire.token(), Wire.token(MockFaults.Prefix.unregistered)] {
            let response = try #require(try await client.result(try await push(connection, token: token))).get()
            #expect(response.status == 503)
            #expect(reason(response) == "ServiceUnavailable")
            #expect(response.body == Array(#"{"reason":"ServiceUnavailable"}"#.utf8))
        }
        // The checks still come first: a malformed push gets its own answer.
        let bad = try #require(try await client.result(try await push(connection, token: "zz"))).get()
        #expect(bad.status == 400)

        server.answerNormally()
        #expect(try #require(try await client.result(try await push(connection))).get().status == 200)
        #expect(server.connectionCount == 1)
        #expect(server.records.map(\.status) == [200, 503, 503, 400, 200])
    }

    @Test("answerUnavailable(for:) ends by itself; a later call's window is not cut short by an earlier timer")
    func unavailableForAWhile() async throws {
        let harness = try Harness()
        defer { harness.shutdown() }
        let server = harness.server
        let client = Client()
        let connection = try await harness.connect(client).get()
        server.answerUnavailable(for: .milliseconds(200))
        #expect(try #require(try await client.result(try await push(connection))).get().status == 503)
        #expect(try await eventually { server.rules.faults.everyPush == nil })
        #expect(try #require(try await client.result(try await push(connection))).get().status == 200)

        server.answerUnavailable(for: .milliseconds(100))
        server.answerUnavailable()
        let started = ContinuousClock.now
        #expect(try await eventually(within: .seconds(1)) { ContinuousClock.now - started > .milliseconds(400) && server.rules.faults.everyPush != nil })
        #expect(try #require(try await client.result(try await push(connection))).get().status == 503)
    }
}
