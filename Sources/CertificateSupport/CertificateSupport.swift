// CertificateSupport — a throw-away CA and server certificate for the emulator, the demo and
// tests; not in the APNs product, which only ever trusts what the caller gives it.
