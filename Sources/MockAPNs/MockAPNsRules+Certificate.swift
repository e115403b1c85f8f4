/// Certificate-based authentication, as Apple describes it in "Establishing a certificate-based
/// connection to APNs": trust is established for the connection by the provider certificate, so
/// its requests carry no `authorization` header, and one certificate covers one app.
///
/// The TLS layer has already verified the certificate against the emulator's CA, its dates and
/// its `clientAuth` usage: an expired certificate or one from another CA never gets a connection
/// (the handshake fails with a `certificate_expired` or `unknown_ca` alert, as APNs ends the
/// handshake of an expired provider certificate). These checks judge what the handshake cannot:
///
/// | check | answer |
/// | --- | --- |
/// | no subject UID (no topic), or dates the emulator cannot read | 403 `BadCertificate` |
/// | not valid at the emulator's clock (it expired while the connection stayed open, or a test moved the clock) | 403 `BadCertificate` (Apple does not document this case; its table's "the certificate was bad" is the nearest reason) |
/// | a development certificate on production, or a production one on the sandbox | 403 `BadCertificateEnvironment` |
///
/// A request that does carry `authorization` is judged by its provider token, certificate or not.
extension MockAPNsRules {
    func checkCertificate(_ certificate: MockClientCertificate, connection: inout MockConnectionState,
                          now: Int64) throws(Rejection) -> MockAuth {
        guard let topic = certificate.uid, !topic.isEmpty,
              let notBefore = certificate.notBefore, let notAfter = certificate.notAfter else {
            throw Rejection(403, "BadCertificate")
        }
        guard notBefore <= now, now <= notAfter else { throw Rejection(403, "BadCertificate") }
        switch certificate.environment {
        case .sandboxOnly where !configuration.sandbox, .productionOnly where configuration.sandbox:
            throw Rejection(403, "BadCertificateEnvironment")
        default:
            break
        }
        connection.authenticated = true
        return .certificate(topic: topic, teamID: certificate.organizationalUnit)
    }
}
