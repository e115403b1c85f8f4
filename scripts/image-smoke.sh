#!/usr/bin/env bash
# The checks of the container image that need no Docker engine:
#   1. the release binary the Dockerfile builds (make ship, .build/ship/apns-relay) is one static
#      PIE: the Swift runtime, glibc, OpenSSL, nghttp2 and libstdc++ linked in, no dynamic loader,
#      no shared library to load, and still loaded at a random address;
#   2. it is at most 25 MB, and keeps its symbol table (what a crash's backtrace names functions
#      from; RelayTests' CrashBacktraceTests crashes it);
#   3. its OpenSSL, linked in, reads Debian's configuration and trust store where the shared one
#      does (/usr/lib/ssl/openssl.cnf, and /usr/lib/ssl/certs: ca-certificates' hashed directory,
#      read root by root as a handshake needs one), and a trust store named by SSL_CERT_FILE
#      alone verifies the emulator (`check --connect`: TLS, HTTP/2 and an ES256 provider token
#      the emulator checks);
#   4. started from an env file shaped like config/apns-relay.env.example, against the APNs
#      emulator, it answers /health and /ready and delivers one push.
# Installs strace (for 3) and python3 from Debian when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/emulator.sh

source scripts/debian.sh
missing=()
command -v strace >/dev/null || missing+=(strace)
command -v python3 >/dev/null || missing+=(python3)
install_packages "${missing[@]}"

echo "== building the release binaries as they ship"
bash scripts/ship-build.sh apns-relay apns-mock
RELAY=.build/ship/apns-relay
MOCK=.build/ship/apns-mock

fail() { echo "image-smoke: FAIL: $*" >&2; exit 1; }
passed=0

echo "== one static PIE"
# A shared library coming back (a link flag lost) would pull Debian's packages back into the
# image; a fixed load address would give up ASLR.
header=$(readelf -hW "$RELAY"); segments=$(readelf -lW "$RELAY"); dynamic=$(readelf -dW "$RELAY")
grep -E '^\s*Type:\s+DYN' <<<"$header" >/dev/null \
  || fail "apns-relay is not position-independent ($(grep -E '^\s*Type:' <<<"$header")): scripts/ship-build.sh links it -static-pie"
if grep -q INTERP <<<"$segments"; then
  fail "apns-relay names a dynamic loader: $(grep -A1 INTERP <<<"$segments" | tail -1)"
fi
if grep -q '(NEEDED)' <<<"$dynamic"; then
  fail "apns-relay loads shared libraries: $(grep '(NEEDED)' <<<"$dynamic" | sed -E 's/.*\[(.*)\]/\1/' | tr '\n' ' ')"
fi
echo "  ELF type DYN, no INTERP segment, no NEEDED entry"
passed=$((passed + 1))

echo "== binary size and symbols"
# No Foundation (its ICU data alone is tens of MB) and only the C objects the relay uses: it ships
# small, symbol table included (DWARF is dropped).
MAX_BINARY_BYTES=$((25 * 1000 * 1000))
size=$(stat -c %s "$RELAY")
echo "apns-relay: $size bytes (limit $MAX_BINARY_BYTES)"
[ "$size" -le "$MAX_BINARY_BYTES" ] || fail "the static binary is $size bytes, over $MAX_BINARY_BYTES: did a module import Foundation?"
symbols=$(readelf -sW "$RELAY" | grep -c ' FUNC ' || true)
[ "$symbols" -gt 1000 ] || fail "apns-relay has $symbols function symbols: was it stripped? A crash would print addresses, not names"
echo "  $symbols function symbols"
passed=$((passed + 1))

echo "== starting the emulator and the relay"
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

# Three `check --connect` runs and a `serve` sign four provider tokens for the one key within a
# minute: Apple's rule of one new token per key every 20 minutes (on in the emulator by default,
# and in the relay's tests) is off here, where the binary's start, trust store and TLS are checked.
"$MOCK" --port 0 --log --token-update-interval 0 --ca-out "$work/ca.pem" >"$work/mock.out" 2>&1 &
pids+=($!)
emulator_wait "$work"

relay_port=$(free_port)
# The env file the operator would write: the example with the required values filled in.
sed -e "s|^APNS_KEY_ID=.*|APNS_KEY_ID=$kid|" -e "s|^APPLE_TEAM_ID=.*|APPLE_TEAM_ID=$team|" \
    -e "s|^TOPIC=.*|TOPIC=com.example.app|" -e "s|^PORT=.*|PORT=$relay_port|" \
    config/apns-relay.env.example >"$work/relay.env"
cat >>"$work/relay.env" <<ENV
APNS_AUTH_KEY_FILE=$key_file
APNS_HOST=localhost:$mock_port
APNS_SANDBOX_HOST=localhost:$mock_port
BIND_ADDRESS=127.0.0.1
ENV
# The same settings without the emulator's CA, for the trust store check below.
cp "$work/relay.env" "$work/system-trust.env"
echo "APNS_CA_FILE=$work/ca.pem" >>"$work/relay.env"

echo "== OpenSSL, linked in, finds Debian's configuration and trust store"
# strace lists the files the relay opens while `check --connect` signs a token and verifies the
# emulator (its CA from APNS_CA_FILE, on top of the system store, as the relay always loads it).
env -i PATH="$PATH" HOME="$work" strace -f -qq -e trace=open,openat -o "$work/strace.out" \
    "$RELAY" check --env-file "$work/relay.env" --connect >"$work/check.out" 2>&1 \
  || fail "check --connect against the emulator failed: $(cat "$work/check.out")"
file=/usr/lib/ssl/openssl.cnf
grep -E "\"$file\".* = [0-9]+$" "$work/strace.out" >/dev/null \
  || fail "the relay's OpenSSL did not open $file (is its OPENSSLDIR Debian's /usr/lib/ssl?): $(grep -F "$file" "$work/strace.out" || echo never tried)"
echo "  opened $file -> $(readlink -f "$file")"
# Without the emulator's CA the handshake fails, after OpenSSL looked for its root (by subject
# hash) in Debian's hashed directory.
env -i PATH="$PATH" HOME="$work" strace -f -qq -e trace=%file -o "$work/strace-dir.out" \
    "$RELAY" check --env-file "$work/system-trust.env" --connect >"$work/check-dir.out" 2>&1 \
  && fail "check --connect trusted the emulator without its CA: $(cat "$work/check-dir.out")"
grep -E '"/usr/lib/ssl/certs/[0-9a-f]{8}\.[0-9]+"' "$work/strace-dir.out" >/dev/null \
  || fail "the relay's OpenSSL never looked in /usr/lib/ssl/certs for a root (is its OPENSSLDIR Debian's /usr/lib/ssl?): $(tail -3 "$work/check-dir.out")"
echo "  looked roots up in /usr/lib/ssl/certs -> $(readlink -f /usr/lib/ssl/certs)"
# A trust store the way operators name one (SSL_CERT_FILE): the TLS handshake and the ES256
# provider token both pass the emulator's checks.
env -i PATH="$PATH" HOME="$work" SSL_CERT_FILE="$work/ca.pem" \
    "$RELAY" check --env-file "$work/system-trust.env" --connect >"$work/check-env.out" 2>&1 \
  || fail "check --connect with SSL_CERT_FILE set to the emulator's CA failed: $(cat "$work/check-env.out")"
echo "  check --connect with SSL_CERT_FILE: $(tail -1 "$work/check-env.out")"
passed=$((passed + 1))

echo "== serve"
env -i PATH="$PATH" HOME="$work" "$RELAY" serve --env-file "$work/relay.env" >"$work/relay.out" 2>&1 &
relay_pid=$!
pids+=($relay_pid)

http() { # METHOD PATH [BODY-FILE] -> prints the status and headers line by line
  python3 - "$relay_port" "$@" <<'PY'
import base64, http.client, os, sys
port, method, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
body = open(sys.argv[4], "rb").read() if len(sys.argv) > 4 else None
headers = {}
if body is not None:
    b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
    headers = {"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
               "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)) + ";p256ecdsa=" + b64(os.urandom(65)),
               "TTL": "60"}
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers=headers)
    r = c.getresponse()
    print(r.status)
    for k, v in r.getheaders(): print(f"{k.lower()}: {v}")
    print(r.read().decode(errors="replace"))
except Exception as e:
    print(0); print(e)
PY
}

for _ in $(seq 100); do [ "$(http GET /health | awk 'NR==1')" = 200 ] && break; sleep 0.1; done
[ "$(http GET /health | awk 'NR==1')" = 200 ] || fail "/health did not answer 200: $(cat "$work/relay.out")"
echo "  /health 200"
passed=$((passed + 1))
for _ in $(seq 100); do [ "$(http GET /ready | awk 'NR==1')" = 200 ] && break; sleep 0.1; done
[ "$(http GET /ready | awk 'NR==1')" = 200 ] || fail "/ready did not answer 200: $(http GET /ready) $(cat "$work/relay.out")"
echo "  /ready 200"
passed=$((passed + 1))

head -c 300 /dev/urandom >"$work/body"
token=$(printf 'ab%.0s' $(seq 32))
answer=$(http POST "/push/$token/smoke-1" "$work/body")
[ "$(awk 'NR==1' <<<"$answer")" = 201 ] || fail "the push was not answered 201: $answer"
apns_id=$(grep '^apns-id:' <<<"$answer" | cut -d' ' -f2)
for _ in $(seq 50); do grep -qE '^200 ' "$work/mock.out" && break; sleep 0.1; done
grep -qE '^200 ' "$work/mock.out" || fail "the emulator recorded no delivered push: $(cat "$work/mock.out")"
echo "  push delivered: 201, apns-id $apns_id"
passed=$((passed + 1))

kill -TERM "$relay_pid"
for _ in $(seq 100); do kill -0 "$relay_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$relay_pid" 2>/dev/null; then fail "the relay did not exit within 10 s of SIGTERM"; fi
wait "$relay_pid" && code=0 || code=$?
[ "$code" = 0 ] || fail "the relay exited $code after SIGTERM: $(tail -5 "$work/relay.out")"
echo "  SIGTERM: exited 0"
passed=$((passed + 1))
echo "image-smoke: $passed passed, 0 failed"
