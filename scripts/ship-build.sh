#!/usr/bin/env bash
# The binary that ships, built one way everywhere (the Dockerfile, make bench, make image-smoke):
#   scripts/ship-build.sh PRODUCT...   builds each product as it ships (SwiftPM builds only the
#                                      last --product it is given, hence one build per product)
#   scripts/ship-build.sh --bin-path   prints the directory the shipped binaries are in
#   scripts/ship-build.sh --flags      prints the flags
# The flags, and why (figures from make bench; README's performance section has them):
#   -c release --static-swift-stdlib   the Swift runtime linked in: no toolchain at run time
#   --scratch-path .build/ship         objects of their own: the Swift driver does not recompile
#                                      when only -Xfrontend flags change, and `-c release`
#                                      builds (make soak) no longer alternate with these ones
#                                      (after changing a flag here, rm -rf .build/ship)
#   --pkg-config-path DIR              OpenSSL, nghttp2 and libstdc++ from Debian's static archives
#                                      (DIR is made below), so only the objects the relay uses are
#                                      in the binary, and it loads only libc, libm and libgcc_s
#   -function-sections                 each Swift function in a section of its own, so the linker
#                                      can drop unused ones and order the rest (next two flags)
#   -use-ld=lld                        the toolchain's lld rather than gold, for the next two flags
#   --symbol-ordering-file             the functions the relay runs, packed together at the start
#                                      of the code in the order they first run (the list is
#                                      scripts/ship-symbol-order.txt, written by
#                                      scripts/symbol-order.sh): the kernel maps up to 64 KiB
#                                      around each page touched, so scattered code kept 8-9 MiB
#                                      of the binary resident, packed about 5 MiB
#   -z pack-relative-relocs            the PIE's relative relocations as DT_RELR (glibc 2.36 and
#                                      later, Debian 12): 14 KB instead of 1.4 MB of .rela.dyn,
#                                      which the loader read at every start
#   --no-export-dynamic                the relay's own symbols stay out of the dynamic symbol
#                                      table (0.3 MB, 0.4 MiB RSS): nothing loads plugins or looks
#                                      symbols up by name. A backtrace or profile of this binary
#                                      shows addresses only; use a `swift build -c release` binary
#                                      for names
#   --strip-all                        no symbol table
# .eh_frame stays: libstdc++'s exceptions, glibc's pthread_exit and the Swift backtracer unwind
# through it.
# Tried and not kept (README's performance section): -Osize, --icf=all, a static libgcc.
# The debug and test builds link the shared libraries, as Debian ships them.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
static_libs="$PWD/.build/static-libs"

# A pkg-config directory whose openssl.pc and libnghttp2.pc point the linker at itself, where the
# libraries exist only as symlinks to Debian's static archives (libssl-dev, libnghttp2-dev,
# libstdc++-12-dev): the linker takes the first directory holding a library, and this one comes
# before the system's. The compiler flags stay Debian's, so the modules compile as in any build.
make_static_libs() {
  mkdir -p "$static_libs"
  local libdir nghttp2_libdir stdcxx archive
  libdir=$(pkg-config --variable=libdir libssl)
  nghttp2_libdir=$(pkg-config --variable=libdir libnghttp2)
  stdcxx=$(clang -print-file-name=libstdc++.a 2>/dev/null || true)
  [ -f "$stdcxx" ] || stdcxx=$(ls /usr/lib/gcc/*/*/libstdc++.a 2>/dev/null | sort -V | tail -1)
  for archive in "$libdir/libssl.a" "$libdir/libcrypto.a" "$nghttp2_libdir/libnghttp2.a" "$stdcxx"; do
    [ -f "$archive" ] || { echo "ship-build: ${archive:-libstdc++.a} is missing (libssl-dev, libnghttp2-dev, libstdc++-12-dev)" >&2; exit 1; }
    ln -sfn "$archive" "$static_libs/$(basename "$archive")"
  done
  # libcrypto.a also needs libdl and libpthread, which the Swift runtime links anyway.
  cat >"$static_libs/openssl.pc" <<PC
Name: OpenSSL
Description: Debian's OpenSSL, linked statically
Version: $(pkg-config --modversion openssl)
Libs: -L\${pcfiledir} -lssl -lcrypto
Cflags: $(pkg-config --cflags openssl)
PC
  cat >"$static_libs/libnghttp2.pc" <<PC
Name: libnghttp2
Description: Debian's nghttp2, linked statically
Version: $(pkg-config --modversion libnghttp2)
Libs: -L\${pcfiledir} -lnghttp2
Cflags: $(pkg-config --cflags libnghttp2)
PC
}

FLAGS=(-c release --scratch-path "$PWD/.build/ship" --static-swift-stdlib --pkg-config-path "$static_libs"
       -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld
       -Xlinker --symbol-ordering-file="$PWD/scripts/ship-symbol-order.txt" -Xlinker --no-warn-symbol-ordering
       -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic -Xlinker --strip-all)

case "${1:-}" in
  "") echo "usage: scripts/ship-build.sh PRODUCT... | --bin-path | --flags" >&2; exit 2;;
  --flags) echo "${FLAGS[*]}";;
  --bin-path) "$SWIFT" build "${FLAGS[@]}" --show-bin-path;;
  *) make_static_libs
     bin=$("$SWIFT" build "${FLAGS[@]}" --show-bin-path)
     for product in "$@"; do
       # SwiftPM knows nothing of the order file: a binary older than it is linked again.
       [ "scripts/ship-symbol-order.txt" -nt "$bin/$product" ] && rm -f "$bin/$product"
       "$SWIFT" build "${FLAGS[@]}" --product "$product"
     done;;
esac
