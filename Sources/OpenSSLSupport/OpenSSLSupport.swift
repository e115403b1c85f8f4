// OpenSSLSupport — TLS over memory BIOs (no sockets) and ES256 keys for APNs provider
// tokens. The WebPush primitives live in WebPushCrypto and the throw-away certificates
// in CertificateSupport, so neither ships in the APNs product; no C type leaves any of them.
