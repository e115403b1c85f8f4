#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/bn.h>
#include <openssl/bio.h>
#include <openssl/rand.h>
#include <openssl/core_names.h>

/* Function-like macros are invisible to Swift: wrap each one here. */
static inline long copenssl_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}
static inline int copenssl_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}
static inline long copenssl_SSL_set_mode(SSL *ssl, long mode) {
    return SSL_set_mode(ssl, mode);
}
static inline long copenssl_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}
static inline void copenssl_OPENSSL_free(void *p) {
    OPENSSL_free(p);
}
static inline long copenssl_BIO_get_mem_data(BIO *bio, char **pp) {
    return BIO_get_mem_data(bio, pp);
}
static inline size_t copenssl_BIO_ctrl_pending(BIO *bio) {
    return BIO_ctrl_pending(bio);
}
static inline int copenssl_BIO_set_mem_eof_return(BIO *bio, int v) {
    return (int)BIO_set_mem_eof_return(bio, v);
}
static inline long copenssl_SSL_CTX_set_options(SSL_CTX *ctx, long opts) {
    return (long)SSL_CTX_set_options(ctx, (uint64_t)opts);
}
#endif
