#!/usr/bin/env bash
# The binary that ships, built one way everywhere (the Dockerfile, make bench, make image-smoke):
#   scripts/ship-build.sh PRODUCT...   builds each product as it ships (SwiftPM builds only the
#                                      last --product it is given, hence one build per product)
#   scripts/ship-build.sh --bin-path   prints the directory the shipped binaries are in
#   scripts/ship-build.sh --flags      prints the flags
# The flags, and why (figures from make bench; README's performance section has them):
#   -c release -static-executable      one static binary: the Swift runtime, glibc, and Debian's
#     -Xclang-linker -static-pie       static archives of OpenSSL, nghttp2 and libstdc++
#                                      (libssl-dev, libnghttp2-dev, libstdc++-12-dev) linked in,
#                                      only the objects the relay uses; no dynamic loader, no
#                                      shared library at run time. A static PIE, so it still
#                                      loads at a random address (ASLR). The shared libc, libm,
#                                      ld.so and libgcc_s kept 2.4 MiB of their code resident;
#                                      the parts of glibc the relay calls now sit packed with its
#                                      own code (--symbol-ordering-file). Host names resolve
#                                      through glibc's built-in `files` and `dns` sources
#                                      (/etc/hosts, /etc/resolv.conf), which is what
#                                      /etc/nsswitch.conf names on Debian and in the image
#   --disable-local-rpath              no DT_RUNPATH ($ORIGIN): a static PIE must have none
#                                      (glibc's start-up asserts so), and there is nothing to find
#   --scratch-path .build/ship         objects of their own: the Swift driver does not recompile
#                                      when only -Xfrontend flags change, and `-c release`
#                                      builds (make soak) no longer alternate with these ones
#                                      (after changing a flag here, rm -rf .build/ship)
#   -function-sections                 each Swift function in a section of its own, so the linker
#                                      can drop unused ones and order the rest (next two flags)
#   -use-ld=lld                        the toolchain's lld rather than gold, for the next two flags
#   --symbol-ordering-file             the functions the relay runs, packed together at the start
#                                      of the code in the order they first run (the list is
#                                      scripts/ship-symbol-order.txt, written by
#                                      scripts/symbol-order.sh): the kernel maps up to 64 KiB
#                                      around each page touched, so scattered code kept 8-9 MiB
#                                      of the binary resident, packed about 5 MiB
#   --script=scripts/ship-text.ld      the code the order file cannot name (the compiler's
#                                      unnamed functions, the string functions' .iplt) in one
#                                      small section before .text: ~700 KiB less resident idle
#   -z pack-relative-relocs            the PIE's relative relocations as DT_RELR (glibc 2.36 and
#                                      later, Debian 12): 14 KB instead of 1.4 MB of .rela.dyn,
#                                      which start-up read at every start
#   --no-export-dynamic                the relay's own symbols stay out of the dynamic symbol
#                                      table: nothing looks symbols up by name. A backtrace or
#                                      profile of this binary shows addresses only; use a
#                                      `swift build -c release` binary for names
#   --strip-all                        no symbol table
# .eh_frame stays: libstdc++'s exceptions, glibc's thread cancellation and the Swift backtracer
# unwind through it (through its .eh_frame_hdr index; nothing registers the table itself).
# Tried and not kept (README's performance section): -Osize, --icf=all, a static libgcc alone.
# The debug and test builds link the shared libraries, as Debian ships them.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}

FLAGS=(-c release --scratch-path "$PWD/.build/ship" -Xswiftc -static-executable -Xswiftc -Xclang-linker -Xswiftc -static-pie
       --disable-local-rpath
       -Xswiftc -Xfrontend -Xswiftc -function-sections -Xswiftc -use-ld=lld
       -Xlinker --symbol-ordering-file="$PWD/scripts/ship-symbol-order.txt" -Xlinker --no-warn-symbol-ordering
       -Xlinker --script="$PWD/scripts/ship-text.ld"
       -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic -Xlinker --strip-all)

case "${1:-}" in
  "") echo "usage: scripts/ship-build.sh PRODUCT... | --bin-path | --flags" >&2; exit 2;;
  --flags) echo "${FLAGS[*]}";;
  --bin-path) "$SWIFT" build "${FLAGS[@]}" --show-bin-path;;
  *) bin=$("$SWIFT" build "${FLAGS[@]}" --show-bin-path)
     for product in "$@"; do
       # SwiftPM knows nothing of the order file and the script: a binary older than either is
       # linked again.
       for input in scripts/ship-symbol-order.txt scripts/ship-text.ld; do
         [ "$input" -nt "$bin/$product" ] && rm -f "$bin/$product"
       done
       "$SWIFT" build "${FLAGS[@]}" --product "$product"
     done;;
esac
