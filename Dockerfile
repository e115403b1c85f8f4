# apns-relay container image.
#   docker build -t apns-relay .
#   docker run --env-file config/apns-relay.env -p 3000:3000 apns-relay
# Two stages: the toolchain image compiles a binary with the Swift runtime linked in
# statically, and a slim Debian image runs it with only the C libraries it still needs.

ARG SWIFT_VERSION=6.3
ARG DEBIAN_RELEASE=bookworm

# ---- build -------------------------------------------------------------------
FROM swift:${SWIFT_VERSION}-${DEBIAN_RELEASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libnghttp2-dev libssl-dev pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The manifest first, so a source-only change does not re-run dependency resolution.
COPY Package.swift ./
COPY Sources ./Sources
COPY Tests ./Tests
# --static-swift-stdlib links the Swift runtime into the binary (the relay imports no Foundation), so
# the runtime image needs no Swift toolchain; --strip-all drops the symbols (~26 MB → ~15 MB).
# The build cache lives in a cache mount, so the binary is copied out in the same step.
RUN --mount=type=cache,target=/src/.build \
    swift build -c release --static-swift-stdlib -Xlinker --strip-all --product apns-relay \
 && install -D -m 0755 "$(swift build -c release --static-swift-stdlib -Xlinker --strip-all --show-bin-path)/apns-relay" /out/apns-relay

# ---- runtime -----------------------------------------------------------------
FROM debian:${DEBIAN_RELEASE}-slim
# What `ldd` shows a --static-swift-stdlib binary still loads (measured on Debian 12 with Swift 6.3):
#   libnghttp2.so.14, libssl.so.3 + libcrypto.so.3 (our C dependencies),
#   libstdc++.so.6 and libgcc_s.so.1 (the static Swift runtime is C++ underneath),
#   libc/libm (always present). ca-certificates is the system trust store used to verify Apple.
# No tzdata: the relay only ever formats UTC.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libnghttp2-14 libssl3 libstdc++6 libgcc-s1 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 apns-relay \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin apns-relay
COPY --from=build /out/apns-relay /usr/local/bin/apns-relay

# Numeric, so Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 10001:10001
ENV PORT=3000 \
    BIND_ADDRESS=0.0.0.0 \
    LOG_FORMAT=json
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
