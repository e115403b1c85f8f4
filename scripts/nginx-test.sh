#!/usr/bin/env bash
# Debian's nginx in front of the relay and the APNs emulator, everything on 127.0.0.1:
#   1. `nginx -t` on deploy/nginx/nginx.conf and on README's snippet, with only ports and paths
#      substituted (no directive added or removed): both must load on the nginx Debian ships;
#   2. started in front of `apns-relay serve` and `apns-mock`, pushes through it over TLS:
#      201 and delivered, chunked and Content-Length bodies on one kept-alive connection, one
#      X-Request-ID per answer, the relay's 504 passed through as 504, HEAD /health 200.
# Installs nginx (and openssl, python3) from Debian when missing. nginx, the relay and the
# emulator are stopped by their PIDs at the end, whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/emulator.sh

SWIFT=${SWIFT:-swift}
source scripts/debian.sh
missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v openssl >/dev/null || missing+=(openssl)
command -v python3 >/dev/null || missing+=(python3)
install_packages "${missing[@]}"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

echo "== building the relay and the emulator"
"$SWIFT" build --product apns-relay >/dev/null
"$SWIFT" build --product apns-mock >/dev/null
BIN=$("$SWIFT" build --show-bin-path)

passed=0
fail() { echo "nginx-test: FAIL: $*" >&2; echo "nginx-test: $passed passed, 1 failed"; exit 1; }
ok() { echo "  ok: $*"; passed=$((passed + 1)); }

work=$(mktemp -d)
# nginx's workers run as an unprivileged user when nginx starts as root: they must reach the
# temp directories under $work.
chmod 755 "$work"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

echo "== nginx $("$NGINX" -v 2>&1 | sed 's/.*\///')"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/privkey.pem" -out "$work/fullchain.pem" 2>/dev/null
mkdir -p "$work/cache"
relay_port=$(free_port)
nginx_port=$(free_port)
nginx_port6=$(free_port)
# The shipped file with its ports, addresses and paths pointed here; every directive stays.
sed -e "s|listen 443 |listen 127.0.0.1:$nginx_port |" \
    -e "s|listen \[::\]:443 |listen [::1]:$nginx_port6 |" \
    -e "s|server relay:3000;|server 127.0.0.1:$relay_port;|" \
    -e "s|/var/run/nginx.pid|$work/nginx.pid|" \
    -e "s|/etc/nginx/certs/|$work/|g" \
    -e "s|/var/cache/nginx/|$work/cache/|g" \
    deploy/nginx/nginx.conf >"$work/nginx.conf"
if ! ip -6 addr show dev lo 2>/dev/null | grep -q '::1'; then
    # No IPv6 loopback on this machine: the IPv6 listener goes to another IPv4 loopback port.
    sed -i "s|listen \[::1\]:$nginx_port6 |listen 127.0.0.1:$nginx_port6 |" "$work/nginx.conf"
fi
diff <(grep -oE '^\s*[a-z_0-9]+' deploy/nginx/nginx.conf) <(grep -oE '^\s*[a-z_0-9]+' "$work/nginx.conf") >/dev/null \
    || fail "the substitutions changed the directives of deploy/nginx/nginx.conf"
"$NGINX" -t -q -e stderr -p "$work/" -c "$work/nginx.conf" 2>"$work/nginx-t.out" \
    || fail "nginx -t refused deploy/nginx/nginx.conf: $(cat "$work/nginx-t.out")"
ok "nginx -t accepts deploy/nginx/nginx.conf"

# README's snippet, inside the events/http blocks it leaves out.
snippet=$(awk '/^```nginx$/ {on=1; next} on && /^```$/ {exit} on' README.md)
[ -n "$snippet" ] || fail "README.md has no nginx snippet"
{
    echo "pid $work/readme-nginx.pid; events {} http { access_log off;"
    sed -e "s|listen 443 |listen 127.0.0.1:$(free_port) |" -e "s|server 127.0.0.1:3000;|server 127.0.0.1:$relay_port;|" \
        -e "s|/etc/nginx/tls/|$work/|g" <<<"$snippet"
    echo "}"
} >"$work/readme-nginx.conf"
"$NGINX" -t -q -e stderr -p "$work/" -c "$work/readme-nginx.conf" 2>"$work/readme-t.out" \
    || fail "nginx -t refused README's snippet: $(cat "$work/readme-t.out")"
ok "nginx -t accepts README's nginx snippet"

echo "== starting the emulator, the relay and nginx"
"$BIN/apns-mock" --port 0 --log --ca-out "$work/ca.pem" >"$work/mock.out" 2>&1 &
pids+=($!)
emulator_wait "$work"
env -i PATH="$PATH" HOME="$work" \
    APNS_AUTH_KEY_FILE="$key_file" \
    APNS_KEY_ID="$kid" \
    APPLE_TEAM_ID="$team" TOPIC=com.example.app \
    APNS_HOST="localhost:$mock_port" APNS_SANDBOX_HOST="localhost:$mock_port" APNS_CA_FILE="$work/ca.pem" \
    BIND_ADDRESS=127.0.0.1 PORT="$relay_port" PUSH_TIMEOUT_MS=1500 LOG_FORMAT=text \
    "$BIN/apns-relay" serve >"$work/relay.out" 2>&1 &
pids+=($!)
"$NGINX" -e stderr -p "$work/" -c "$work/nginx.conf" -g 'daemon off;' >"$work/nginx.out" 2>&1 &
nginx_pid=$!
pids+=($nginx_pid)
for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$relay_port),1); socket.create_connection(('127.0.0.1',$nginx_port),1)" 2>/dev/null && break
    sleep 0.1
done
kill -0 "$nginx_pid" 2>/dev/null || fail "nginx did not start: $(cat "$work/nginx.out")"
echo "  nginx pid $nginx_pid on 127.0.0.1:$nginx_port -> relay 127.0.0.1:$relay_port -> emulator 127.0.0.1:$mock_port"

echo "== pushes through nginx"
python3 - "$nginx_port" "$work/fullchain.pem" "$work/mock.out" >"$work/client.out" 2>&1 <<'PY' || { cat "$work/client.out"; fail "pushes through nginx (relay log: $(tail -5 "$work/relay.out"))"; }
import base64, http.client, os, ssl, sys, time
port, ca, mock_log = int(sys.argv[1]), sys.argv[2], sys.argv[3]
context = ssl.create_default_context(cafile=ca)
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")

def push_headers():
    return {"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
            "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)) + ";p256ecdsa=" + b64(os.urandom(65)), "TTL": "60"}

def check(cond, what, detail=""):
    if not cond:
        raise SystemExit(f"FAIL: {what} {detail}")
    print(f"  ok: {what}")

def one_request_id(r, what):
    ids = [v for k, v in r.getheaders() if k.lower() == "x-request-id"]
    check(len(ids) == 1 and "," not in ids[0], f"{what}: one X-Request-ID", str(ids))
    return ids[0]

token = "ab" * 32
c = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=10)
c.request("HEAD", "/health")
r = c.getresponse(); body = r.read()
check(r.status == 200 and body == b"", "HEAD /health answers 200 with no body", f"{r.status} {body[:80]!r}")
one_request_id(r, "HEAD /health")
sock = c.sock

c.request("POST", f"/push/{token}/nginx-1", body=os.urandom(300), headers={**push_headers(), "X-Request-ID": "mastodon-7"})
r = c.getresponse(); r.read()
check(r.status == 201 and r.getheader("apns-id"), "a push with Content-Length answers 201 with apns-id", str(r.status))
check(one_request_id(r, "the 201") == "mastodon-7", "the sender's X-Request-ID comes back once, unchanged")

def chunks():
    for _ in range(3):
        yield os.urandom(100)
c.request("POST", f"/push/{token}/nginx-2", body=chunks(), headers=push_headers(), encode_chunked=True)
r = c.getresponse(); r.read()
check(r.status == 201, "a chunked push answers 201", str(r.status))
one_request_id(r, "the chunked 201")
check(c.sock is sock, "all three went over one kept-alive connection")

delivered = []
for _ in range(50):
    delivered = [l for l in open(mock_log) if l.startswith("200 ") and f"/3/device/{token}" in l]
    if len(delivered) >= 2: break
    time.sleep(0.1)
check(len(delivered) == 2, "the emulator delivered both pushes", str(delivered))

started = time.monotonic()
c.request("POST", "/push/" + "0ff0" + "ab" * 30 + "/nginx-3", body=os.urandom(100), headers=push_headers())
r = c.getresponse(); body = r.read()
check(r.status == 504 and b'"reason"' in body, "a push Apple never answers: the relay's 504 comes through nginx as 504",
      f"{r.status} {body[:120]!r}")
check(time.monotonic() - started < 10, "the 504 came at the relay's deadline, not nginx's")
one_request_id(r, "the 504")
c.close()
PY
cat "$work/client.out"
passed=$((passed + $(grep -c '^  ok:' "$work/client.out")))
echo "  nginx access log:"
sed 's/^/    /' "$work/nginx.out"

kill -TERM "$nginx_pid"
for _ in $(seq 50); do kill -0 "$nginx_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$nginx_pid" 2>/dev/null && fail "nginx did not stop within 5 s of SIGTERM"
ok "nginx stopped by its PID"
echo "nginx-test: $passed passed, 0 failed"
