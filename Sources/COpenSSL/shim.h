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
static inline long copenssl_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x509) {
    return SSL_CTX_add1_chain_cert(ctx, x509);
}
static inline long copenssl_SSL_set_options(SSL *ssl, long opts) {
    return (long)SSL_set_options(ssl, (uint64_t)opts);
}
/* EVP_EC_gen calls a variadic function, which Swift cannot call. */
static inline EVP_PKEY *copenssl_EVP_EC_gen(const char *curve) {
    return EVP_PKEY_Q_keygen(NULL, NULL, "EC", curve);
}
static inline void copenssl_X509V3_set_ctx_nodb(X509V3_CTX *ctx) {
    X509V3_set_ctx_nodb(ctx);
}

/* Server-side ALPN: the protocol list lives as long as the SSL_CTX (its Swift owner keeps it). */
typedef struct {
    const unsigned char *protos; /* wire format: length-prefixed names */
    unsigned int length;
} copenssl_alpn_list;

/* Picks the first of the server's protocols the client offers; no overlap is a fatal
   no_application_protocol alert (RFC 7301 section 3.2). Never throws across C. */
static inline int copenssl_alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                       const unsigned char *in, unsigned int inlen, void *arg) {
    const copenssl_alpn_list *list = (const copenssl_alpn_list *)arg;
    unsigned char *selected = NULL;
    unsigned char selectedLength = 0;
    (void)ssl;
    if (list == NULL || list->length == 0) return SSL_TLSEXT_ERR_NOACK;
    if (SSL_select_next_proto(&selected, &selectedLength, list->protos, list->length, in, inlen)
        != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    }
    *out = selected;
    *outlen = selectedLength;
    return SSL_TLSEXT_ERR_OK;
}
static inline void copenssl_SSL_CTX_set_alpn_server(SSL_CTX *ctx, copenssl_alpn_list *list) {
    SSL_CTX_set_alpn_select_cb(ctx, copenssl_alpn_select, list);
}

/* A password callback that refuses: an encrypted key fails instead of prompting on a terminal. */
static inline int copenssl_no_password(char *buf, int size, int rwflag, void *u) {
    (void)buf; (void)size; (void)rwflag; (void)u;
    return -1;
}
static inline EVP_PKEY *copenssl_PEM_read_bio_PrivateKey(BIO *bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, copenssl_no_password, NULL);
}
static inline X509 *copenssl_PEM_read_bio_X509(BIO *bio) {
    return PEM_read_bio_X509(bio, NULL, copenssl_no_password, NULL);
}
static inline EVP_PKEY *copenssl_PEM_read_bio_PUBKEY(BIO *bio) {
    return PEM_read_bio_PUBKEY(bio, NULL, copenssl_no_password, NULL);
}
static inline void copenssl_SSL_CTX_set_no_renegotiation(SSL_CTX *ctx) {
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
}
/* SSL_MODE_* constants are unsigned macros; one call sets what every session needs. */
static inline void copenssl_SSL_set_session_modes(SSL *ssl) {
    SSL_set_mode(ssl, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
#endif
