#!/usr/bin/env bash
# The binary that ships, built one way everywhere (make ship, the Dockerfile, make bench, make
# image-smoke, make test's second pass):
#   scripts/ship-build.sh [PRODUCT...]   builds each product (default: apns-relay) and copies it
#                                        to .build/ship/PRODUCT (SwiftPM builds only the last
#                                        --product it is given, hence one build per product)
#   scripts/ship-build.sh --flags        prints the flags
# The flags, and why:
#   -c release -static-executable      one static binary: the Swift runtime, glibc, and Debian's
#     -Xclang-linker -static-pie       static archives of OpenSSL, nghttp2, SQLite, hiredis and
#                                      libstdc++ (libssl-dev, libnghttp2-dev, libsqlite3-dev,
#                                      libhiredis-dev, libstdc++-12-dev) linked in,
#                                      only the objects the relay uses; no dynamic loader, no
#                                      shared library at run time. A static PIE, so it still
#                                      loads at a random address (ASLR). Host names resolve
#                                      through glibc's built-in `files` and `dns` sources
#                                      (/etc/hosts, /etc/resolv.conf), which is what
#                                      /etc/nsswitch.conf names on Debian and in the image
#   --disable-local-rpath              no DT_RUNPATH ($ORIGIN): a static PIE must have none
#                                      (glibc's start-up asserts so), and there is nothing to find
#   --scratch-path .build/ship/build   objects of their own, so `-c release` builds (make soak)
#                                      and these do not rebuild each other's
#   -use-ld=lld -z pack-relative-relocs  the PIE's relative relocations as DT_RELR (glibc 2.36
#                                      and later, Debian 12): about 14 KB to apply at start
#                                      instead of 1.4 MB of .rela.dyn, which every start reads
#                                      and keeps resident. gold, the driver's default linker,
#                                      cannot pack them; the toolchain's own lld can
#   --strip-debug                      DWARF dropped (SwiftPM's release builds carry it; line
#                                      numbers are not worth the megabytes); the symbol table
#                                      stays, so a crash's backtrace (SWIFT_BACKTRACE) names its
#                                      functions: 21.0 MB with it, 15.6 MB stripped
# .eh_frame stays: libstdc++'s exceptions, glibc's thread cancellation and the Swift backtracer
# unwind through it.
# The debug and test builds link the shared libraries, as Debian ships them.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
OUT=.build/ship

FLAGS=(-c release --scratch-path "$PWD/$OUT/build" -Xswiftc -static-executable -Xswiftc -Xclang-linker -Xswiftc -static-pie
       --disable-local-rpath -Xswiftc -use-ld=lld
       -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --strip-debug)

case "${1:-}" in
  -h|--help) echo "usage: scripts/ship-build.sh [PRODUCT...] | --flags" >&2; exit 2;;
  --flags) echo "${FLAGS[*]}";;
  *) [ $# -gt 0 ] || set -- apns-relay
     bin=$("$SWIFT" build "${FLAGS[@]}" --show-bin-path)
     for product in "$@"; do
       "$SWIFT" build "${FLAGS[@]}" --product "$product"
       install -m 0755 "$bin/$product" "$OUT/$product"
       echo "$OUT/$product"
     done;;
esac
