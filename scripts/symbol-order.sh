#!/usr/bin/env bash
# Writes scripts/ship-symbol-order.txt, the order scripts/ship-build.sh lays the shipped binary's
# functions out in: every function the relay runs, first, grouped by the phase that first runs
# it: start-up to ready (what an idle relay has touched), then pushes, then the drain. The kernel
# maps up to 64 KiB of a binary around each page it touches, so code that runs scattered over
# 12 MB of text kept 8-9 MiB of it resident; packed together it keeps about 5 MiB, and an idle
# relay only the start-up part of it. Re-run after changes that rename or add much code (a stale
# list costs only memory: names it lacks are placed as before, names no longer there are ignored).
# How: the shipped build with its symbols kept (in .build/symbol-order) runs under valgrind's
# callgrind against the APNs emulator on 127.0.0.1 (start, /ready, 200 pushes, SIGTERM), dumping
# its profile at the end of each phase (callgrind_control -d), and the functions each phase
# executed are listed. A callgrind profile lists functions in no useful order, so within a phase
# the order is the profile's. Installs valgrind from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/emulator.sh

source scripts/debian.sh
missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v python3 >/dev/null || missing+=(python3)
command -v curl >/dev/null || missing+=(curl)
install_packages "${missing[@]}"

SWIFT=${SWIFT:-swift}
bash scripts/ship-build.sh apns-mock
MOCK="$(bash scripts/ship-build.sh --bin-path)/apns-mock"
# The shipped flags, with the symbol table kept (DWARF dropped: valgrind cannot read Swift 6.3's)
# and objects of their own.
read -ra flags <<<"$(bash scripts/ship-build.sh --flags)"
flags=("${flags[@]/--strip-all/--strip-debug}")
flags=("${flags[@]/%\/.build\/ship/\/.build\/symbol-order}")
"$SWIFT" build "${flags[@]}" --product apns-relay
RELAY="$("$SWIFT" build "${flags[@]}" --show-bin-path)/apns-relay"

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
fail() { echo "symbol-order: FAIL: $*" >&2; exit 1; }

"$MOCK" --port 0 --ca-out "$work/ca.pem" >"$work/mock.out" 2>&1 &
pids+=($!)
emulator_wait "$work"
port=$(free_port)

env -i PATH="$PATH" APNS_KEY_ID="$kid" APPLE_TEAM_ID="$team" TOPIC=com.example.app PORT="$port" \
    BIND_ADDRESS=127.0.0.1 APNS_AUTH_KEY_FILE="$key_file" APNS_HOST="localhost:$mock_port" \
    APNS_SANDBOX_HOST="localhost:$mock_port" APNS_CA_FILE="$work/ca.pem" CONNECTION_POOL_SIZE=2 \
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" "$RELAY" serve \
    >"$work/relay.out" 2>&1 &
relay_pid=$!
pids+=($relay_pid)
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/ready" >/dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/ready" >/dev/null || fail "the relay did not get ready under valgrind: $(tail -5 "$work/relay.out")"
# Idle a moment first, as make bench does before it reads an idle relay's memory.
sleep 1
# dump PHASE: ends a phase; callgrind writes what ran since the last dump to callgrind.out.PHASE
# (and what ran after the last one, at exit, to callgrind.out).
dump() {
    callgrind_control -d "$relay_pid" >/dev/null 2>&1 || fail "callgrind_control -d failed"
    for _ in $(seq 100); do [ -s "$work/callgrind.out.$1" ] && return; sleep 0.2; done
    fail "callgrind wrote no profile for phase $1"
}
dump 1

python3 - "$port" <<'PY' || fail "pushes through the relay failed"
import base64, http.client, os, sys
port = int(sys.argv[1]); b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
accepted = 0
for i in range(200):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
               "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)) + ";p256ecdsa=" + b64(os.urandom(65)),
               "TTL": "60"}
    c.request("POST", f"/push/{os.urandom(32).hex()}/order-{i}", body=os.urandom(300), headers=headers)
    r = c.getresponse(); r.read(); accepted += r.status == 201
print(f"{accepted} of 200 pushes answered 201")
sys.exit(0 if accepted == 200 else 1)
PY
dump 2
kill -TERM "$relay_pid"
wait "$relay_pid" || fail "the relay under valgrind did not exit 0 on SIGTERM: $(tail -5 "$work/relay.out")"
[ -s "$work/callgrind.out" ] || fail "callgrind wrote no profile at exit"

# Functions phase by phase, each in the order callgrind first names it, kept when they are code
# in the binary (IFUNC resolvers too, nm type i: a static binary runs every one of them at
# start-up). With the start-up phase goes what a native start runs and valgrind's never does:
# - the entry code and glibc's vDSO set-up (listed by name below);
# - glibc's string functions come in one variant per instruction set (__memmove_evex_…,
#   __memmove_avx_…, __memmove_sse2_…), and its IFUNC resolvers pick one for the CPU at start-up.
#   Valgrind's CPU has no AVX-512, so the run above saw the AVX2 ones, which a newer CPU never
#   runs. Every variant of the functions that ran goes there, grouped by instruction set, so
#   that on any CPU the ones picked sit together (scattered, they kept 3 windows of 64 KiB
#   resident where one does);
# - the Swift runtime's wait queue for metadata that two threads build at once: valgrind runs
#   one thread at a time, so they never meet there.
nm --defined-only "$RELAY" | awk '$2 ~ /^[tTwWi]$/ {print $3}' | sort -u >"$work/functions"
python3 - "$work/functions" scripts/ship-symbol-order.txt "$work"/callgrind.out{.1,.2,} <<'PY'
import re, sys
functions, out, *phases = sys.argv[1:]
names = open(functions).read().split()
known = set(names)
seen, order, counts = set(), [], []
for profile in phases:
    before = len(order)
    for line in open(profile, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) (\S+)$", line.rstrip("\n"))
        if m and m.group(1) in known and m.group(1) not in seen:
            seen.add(m.group(1)); order.append(m.group(1))
    counts.append(len(order) - before)
traced = len(order)
variant = re.compile(r"^(__\w+?)_(?:sse2|ssse3|sse4_1|sse4_2|avx2|avx|evex512|evex|avx512|erms)(?:_\w+)?$")
bases = {m.group(1) for m in map(variant.match, order) if m}
def isa(name):
    if "evex" in name or "avx512" in name: return 0
    if "rtm" in name: return 2
    if "avx" in name: return 1
    return 3
variants = sorted((n for n in names if (m := variant.match(n)) and m.group(1) in bases), key=lambda n: (isa(n), n))
waits = [n for n in names if "AtomicWaitQueue" in n and n not in seen]
# What runs at every native start but never under valgrind: the entry code, which valgrind counts
# as "(below main)", and glibc setting up the vDSO (valgrind gives the program none). Found with
# uprobes on the functions of the code's unordered tail that an idle relay kept resident.
native = [n for n in ["_start", "frame_dummy", "__libc_start_main_impl", "main", "_dl_new_object",
                      "_dl_add_to_namespace_list", "_dl_setup_hash", "_dl_lookup_symbol_x", "do_lookup_x",
                      "check_match"] if n in known and n not in seen]
start, grouped = set(order[:counts[0]]), set(variants)
rest = [n for n in order if n not in grouped]
order = native + [n for n in rest if n in start] + waits + variants + [n for n in rest if n not in start]
open(out, "w").write("\n".join(order) + "\n")
print(f"symbol-order: {len(order)} functions written to {out}: {traced} traced (start-up {counts[0]}, "
      f"pushes {counts[1]}, drain {counts[2]}), {len(native)} start-up functions valgrind misses, "
      f"{len(waits)} wait-queue functions, "
      f"{len(variants)} variants of {len(bases)} string functions")
PY
