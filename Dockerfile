# apns-relay container image.
#   docker build -t apns-relay .
#   docker run --env-file config/apns-relay.env -p 3000:3000 apns-relay
# Two stages: the toolchain image compiles one static binary (the Swift runtime, glibc, OpenSSL,
# nghttp2, SQLite, hiredis and libstdc++ linked in), and a slim Debian image runs it with the CA bundle.

ARG SWIFT_VERSION=6.3
ARG DEBIAN_RELEASE=bookworm

# ---- build -------------------------------------------------------------------
FROM swift:${SWIFT_VERSION}-${DEBIAN_RELEASE} AS build
# The -dev packages hold the static archives (libssl.a, libcrypto.a, libnghttp2.a, libsqlite3.a,
# libhiredis.a) the binary links; the toolchain image already has libstdc++-12-dev (libstdc++.a) and libc6-dev (libc.a).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libnghttp2-dev libssl-dev libsqlite3-dev libhiredis-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The manifest first, so a source-only change does not re-run dependency resolution.
COPY Package.swift ./
COPY scripts/ship-build.sh ./scripts/
COPY Sources ./Sources
COPY Tests ./Tests
# make ship runs the same script with the same flags (scripts/ship-build.sh says why each):
# `swift build -c release` linked as one static PIE, the Swift runtime, glibc, and Debian's static
# OpenSSL, nghttp2 and libstdc++ in it (only the objects the relay uses; the relay imports no
# Foundation), relocations packed (DT_RELR, glibc 2.36+), the symbol table kept. The result loads
# no shared library at all (measured with Swift 6.3 on Debian 12).
# The binary is copied out with the toolchain's crash backtracer, swift-backtrace-static (the Swift
# runtime linked in; it loads glibc and libstdc++, which the slim image has for apt): a crash
# prints the crashing thread's functions by name on stderr, where the container's log is.
# No `RUN --mount=type=cache`: that needs BuildKit, and Debian 12's docker.io (20.10) builds with
# the classic builder by default. The build directory stays in this stage, never in the image.
RUN bash scripts/ship-build.sh apns-relay \
 && install -D -m 0755 .build/ship/apns-relay /out/apns-relay \
 && install -D -m 0755 "$(dirname "$(readlink -f "$(command -v swift)")")/../libexec/swift/linux/swift-backtrace-static" \
      /out/swift-backtrace

# ---- runtime -----------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE}-slim
# The binary loads no shared library: glibc, libssl3, libnghttp2-14 and libstdc++6 are linked in,
# so Debian's security updates to them reach the relay only when this image is rebuilt. It
# resolves APNS_HOST through glibc's built-in `files` and `dns` sources, which is what the
# image's /etc/nsswitch.conf names.
# ca-certificates is the trust store used to verify Apple; the linked-in OpenSSL reads it, and
# its configuration, from Debian's /usr/lib/ssl as the shared library would. (ca-certificates
# depends on the openssl package, which brings libssl3 along; the relay does not load it.)
# No tzdata: the relay only ever formats UTC.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 apns-relay \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin apns-relay \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/apns-relay
COPY --from=build /out/apns-relay /usr/local/bin/apns-relay
COPY --from=build /out/swift-backtrace /usr/local/libexec/swift-backtrace

# The pushes held while Apple is out of reach (STORE_PATH's default, held.sqlite here). Made
# above, owned by the relay's user, before it is declared a volume: a named volume mounted here
# starts as a copy of it, ownership included, so uid 10001 can write to it; a change made to the
# directory after this line would not reach the image. Keep it in a named volume (`docker run -v
# apns-relay-held:/var/lib/apns-relay`, compose's `held`): the anonymous volume Docker makes
# otherwise is lost with `docker run --rm` or when the container is removed.
VOLUME /var/lib/apns-relay
# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
# SWIFT_BACKTRACE: the runtime looks for its backtracer beside a shared runtime library, which a
# static binary has none of, so the image names it; the backtrace goes to stderr (the log), as
# plain text, the crashing thread only.
# No PORT here: the relay's default is 3000, but 42069 when toot-relay's or webpush-apn-relay's
# variable names are in use (their port), which an image-wide PORT would override.
ENV LOG_FORMAT=json \
    SWIFT_BACKTRACE=enable=yes,interactive=no,color=no,threads=crashed,output-to=stderr,swift-backtrace=/usr/local/libexec/swift-backtrace
EXPOSE 3000
# The relay drains in-flight pushes on SIGTERM before exiting (Docker's default stop
# timeout of 10 s is above the 8 s push deadline; raise it with `--stop-timeout` if you
# raise PUSH_TIMEOUT_MS).
STOPSIGNAL SIGTERM
# `healthcheck` asks http://127.0.0.1:$PORT/health and exits 0 or 1: no curl in the image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/apns-relay", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/apns-relay"]
CMD ["serve"]
