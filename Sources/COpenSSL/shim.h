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
#include <openssl/param_build.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/pkcs12.h>
#include <openssl/provider.h>

/* SHA-256 of one buffer through SHA256_Init/Update/Final on a stack context: deprecated in
   OpenSSL 3.0 but the same code (and assembly) its provider runs, without EVP's per-digest
   provider context and lock. The deprecation is silenced here only, for this one use. */
static inline int copenssl_sha256(const void *data, size_t count, unsigned char *out) {
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    SHA256_CTX context;
    int ok = SHA256_Init(&context) == 1 && SHA256_Update(&context, data, count) == 1
        && SHA256_Final(out, &context) == 1;
#pragma clang diagnostic pop
    return ok;
}

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
/* P-256 keys from raw bytes, for WebPush ECDH (RFC 8291 carries keys as raw points and
   scalars). OSSL_PARAM arrays and the selection macros are awkward from Swift, so the
   whole build happens here. Each returns NULL / 0 on failure and never leaves an error
   behind that the caller did not ask for. */

/* Writes the 65-byte uncompressed public point d·G into out65; 1 on success. Refuses a
   scalar that is zero or not below the group order. */
static inline int copenssl_p256_public_from_private(const unsigned char *priv, size_t privlen,
                                                    unsigned char *out65) {
    int ok = 0;
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    EC_POINT *point = NULL;
    BIGNUM *d = BN_bin2bn(priv, (int)privlen, NULL);
    if (group == NULL || d == NULL) goto done;
    if (BN_is_zero(d) || BN_cmp(d, EC_GROUP_get0_order(group)) >= 0) goto done;
    point = EC_POINT_new(group);
    if (point == NULL || EC_POINT_mul(group, point, d, NULL, NULL, NULL) != 1) goto done;
    ok = EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, out65, 65, NULL) == 65;
done:
    EC_POINT_free(point);
    BN_clear_free(d);
    EC_GROUP_free(group);
    return ok;
}

/* An EC P-256 EVP_PKEY from a raw uncompressed point, plus the private scalar when priv is
   not NULL. OpenSSL refuses a point that is not on the curve. The caller owns the key. */
static inline EVP_PKEY *copenssl_p256_from_raw(const unsigned char *priv, size_t privlen,
                                               const unsigned char *pub, size_t publen) {
    EVP_PKEY *pkey = NULL;
    BIGNUM *d = NULL;
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *ctx = NULL;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) goto done;
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) != 1) goto done;
    if (OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pub, publen) != 1) goto done;
    if (priv != NULL) {
        d = BN_secure_new();
        if (d == NULL || BN_bin2bn(priv, (int)privlen, d) == NULL) goto done;
        if (OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_PRIV_KEY, d) != 1) goto done;
    }
    params = OSSL_PARAM_BLD_to_param(bld);
    if (params == NULL) goto done;
    ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL);
    if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) <= 0) goto done;
    if (EVP_PKEY_fromdata(ctx, &pkey, priv != NULL ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) <= 0) {
        pkey = NULL;
    }
done:
    EVP_PKEY_CTX_free(ctx);
    OSSL_PARAM_free(params);
    BN_clear_free(d);
    OSSL_PARAM_BLD_free(bld);
    return pkey;
}

/* The private scalar of an EC key, left-padded to 32 bytes; 1 on success. */
static inline int copenssl_p256_private_raw(const EVP_PKEY *pkey, unsigned char *out32) {
    BIGNUM *d = NULL;
    int ok;
    if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_PRIV_KEY, &d) != 1) return 0;
    ok = BN_bn2binpad(d, out32, 32) == 32;
    BN_clear_free(d);
    return ok;
}

/* ECDSA P-256 over a 32-byte digest with a nonce k the caller chose (RFC 6979's, so a provider
   token's signature is the same in every process). OpenSSL 3.0 has no deterministic ECDSA; its
   ECDSA_do_sign_ex takes the nonce as the pair ECDSA_sign_setup would otherwise draw at random:
   kinv = k^-1 mod n and rp = x(k*G) mod n. It and the EC_KEY it needs are deprecated in 3.0 but
   present; the deprecation is silenced here only, for this one use. k is inverted and multiplied
   with BN_FLG_CONSTTIME set, as OpenSSL's own setup does. Writes r||s, each half left-padded to
   32 bytes; 1 on success, 0 when k is not in [1, n-1] or OpenSSL failed. */
static inline int copenssl_p256_sign_with_nonce(EVP_PKEY *pkey, const unsigned char *digest32,
                                                const unsigned char *k32, unsigned char *out64) {
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    int ok = 0;
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY(pkey);
    const EC_GROUP *group = ec != NULL ? EC_KEY_get0_group(ec) : NULL;
    const BIGNUM *order = group != NULL ? EC_GROUP_get0_order(group) : NULL;
    const BIGNUM *r = NULL, *s = NULL;
    EC_POINT *point = group != NULL ? EC_POINT_new(group) : NULL;
    BN_CTX *ctx = BN_CTX_new();
    BIGNUM *k = BN_secure_new(), *kinv = BN_secure_new(), *x = BN_new(), *rp = BN_new();
    ECDSA_SIG *sig = NULL;
    if (order == NULL || point == NULL || ctx == NULL || k == NULL || kinv == NULL || x == NULL || rp == NULL) goto done;
    if (BN_bin2bn(k32, 32, k) == NULL || BN_is_zero(k) || BN_cmp(k, order) >= 0) goto done;
    BN_set_flags(k, BN_FLG_CONSTTIME);
    if (EC_POINT_mul(group, point, k, NULL, NULL, ctx) != 1) goto done;
    if (EC_POINT_get_affine_coordinates(group, point, x, NULL, ctx) != 1) goto done;
    if (BN_nnmod(rp, x, order, ctx) != 1 || BN_is_zero(rp)) goto done;
    if (BN_mod_inverse(kinv, k, order, ctx) == NULL) goto done;
    sig = ECDSA_do_sign_ex(digest32, 32, kinv, rp, ec);
    if (sig == NULL) goto done;
    ECDSA_SIG_get0(sig, &r, &s);
    ok = BN_cmp(r, rp) == 0 && BN_bn2binpad(r, out64, 32) == 32 && BN_bn2binpad(s, out64 + 32, 32) == 32;
done:
    ECDSA_SIG_free(sig);
    BN_clear_free(k);
    BN_clear_free(kinv);
    BN_free(x);
    BN_free(rp);
    BN_CTX_free(ctx);
    EC_POINT_free(point);
    EC_KEY_free(ec);
#pragma clang diagnostic pop
    return ok;
}

/* The tag controls are macros of macros. */
static inline int copenssl_gcm_get_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag16) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag16);
}
static inline int copenssl_gcm_set_tag(EVP_CIPHER_CTX *ctx, unsigned char *tag16) {
    return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag16);
}
#endif
