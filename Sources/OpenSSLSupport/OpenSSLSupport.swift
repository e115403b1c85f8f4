// OpenSSLSupport — TLS over memory BIOs (no sockets), ES256 keys for APNs provider
// tokens, and throw-away certificates for tests and the demo. The only module that
// touches libssl/libcrypto; no C type leaves it.
