// CertificateSupport — a throw-away CA, its server certificate and Apple-like push client
// certificates for the emulator, the demo and tests; not in the APNs product, which only ever
// trusts what the caller gives it.
