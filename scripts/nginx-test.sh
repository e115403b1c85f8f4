#!/usr/bin/env bash
# Debian's nginx and Caddy in front of the relay and the APNs emulator, everything on 127.0.0.1:
#   1. `nginx -t` on deploy/nginx/nginx.conf and on README's nginx block, and `caddy validate` on
#      README's Caddy block, each with only its address, ports and paths substituted (no directive
#      added or removed; Caddy gets the certificate line and global options a test needs);
#   2. all three started in front of `apns-relay serve` and `apns-mock`, with an APPS_FILE app `beta`:
#      through each, a push to the default app, to /relay-to and to /beta/push and
#      /beta/relay-to answers 201 (none 404: Mastodon deletes a subscription on a 404) and
#      /metrics is not public;
#   3. through deploy/nginx/nginx.conf: chunked and Content-Length bodies on one kept-alive
#      connection, one X-Request-ID per answer, the relay's 504 passed through as 504, HEAD
#      /health 200.
# Installs nginx and caddy (and openssl, python3) from Debian when missing. nginx, Caddy, the relay
# and the emulator are stopped by their PIDs at the end, whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/emulator.sh

SWIFT=${SWIFT:-swift}
source scripts/debian.sh
missing=()
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v openssl >/dev/null || missing+=(openssl)
command -v python3 >/dev/null || missing+=(python3)
command -v caddy >/dev/null || missing+=(caddy)
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
    -e "s|set \$relay relay:3000;|set \$relay 127.0.0.1:$relay_port;|" \
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

# README's nginx block, inside the events/http blocks it leaves out.
readme_port=$(free_port)
snippet=$(awk '/^```nginx$/ {on=1; next} on && /^```$/ {exit} on' README.md)
[ -n "$snippet" ] || fail "README.md has no nginx block"
{
    echo "pid $work/readme-nginx.pid; events {} http { access_log off;"
    echo "client_body_temp_path $work/cache/readme-client; proxy_temp_path $work/cache/readme-proxy;"
    sed -e "s|listen 443 |listen 127.0.0.1:$readme_port |" -e "s|server 127.0.0.1:3000;|server 127.0.0.1:$relay_port;|" \
        -e "s|/etc/nginx/tls/|$work/|g" <<<"$snippet"
    echo "}"
} >"$work/readme-nginx.conf"
diff <(grep -oE '^\s*[a-z_0-9]+' <<<"$snippet") <(sed '1,2d;$d' "$work/readme-nginx.conf" | grep -oE '^\s*[a-z_0-9]+') >/dev/null \
    || fail "the substitutions changed the directives of README's nginx block"
"$NGINX" -t -q -e stderr -p "$work/" -c "$work/readme-nginx.conf" 2>"$work/readme-t.out" \
    || fail "nginx -t refused README's nginx block: $(cat "$work/readme-t.out")"
ok "nginx -t accepts README's nginx block"

# README's Caddy block: its site address becomes this machine's port with the test certificate
# (Caddy would otherwise ask Let's Encrypt for relay.example.com); the global options keep Caddy
# off ports 80 and 2019 and its state in $work. Every directive of the block stays.
caddy_port=$(free_port)
caddy_block=$(awk '/^```caddyfile$/ {on=1; next} on && /^```$/ {exit} on' README.md)
[ -n "$caddy_block" ] || fail "README.md has no caddyfile block"
grep -q '^relay.example.com {$' <<<"$caddy_block" || fail "README's Caddy block does not start with its site address"
{
    printf '{\n\tadmin off\n\tauto_https off\n\tstorage file_system %s\n}\n' "$work/caddy"
    sed -e "s|^relay.example.com {\$|https://127.0.0.1:$caddy_port {\n\ttls $work/fullchain.pem $work/privkey.pem|" \
        -e "s|127.0.0.1:3000|127.0.0.1:$relay_port|" <<<"$caddy_block"
} >"$work/Caddyfile"
diff <(sed 1d <<<"$caddy_block" | grep -oE '^\s*[a-z_@]+') <(sed '1,7d' "$work/Caddyfile" | grep -oE '^\s*[a-z_@]+') >/dev/null \
    || fail "the substitutions changed the directives of README's Caddy block"
HOME="$work" XDG_DATA_HOME="$work/caddy" XDG_CONFIG_HOME="$work/caddy" \
    caddy validate --adapter caddyfile --config "$work/Caddyfile" >"$work/caddy-validate.out" 2>&1 \
    || fail "caddy validate refused README's Caddy block: $(tail -3 "$work/caddy-validate.out")"
ok "caddy validate accepts README's Caddy block (caddy $(caddy version | cut -d' ' -f1))"

echo "== starting the emulator, the relay and nginx"
"$BIN/apns-mock" --port 0 --log --ca-out "$work/ca.pem" --topic com.example.app --topic org.example.beta \
    >"$work/mock.out" 2>&1 &
pids+=($!)
emulator_wait "$work"
# An app of APPS_FILE, at /beta/push/… and /beta/relay-to/…, with the emulator's key.
cat >"$work/apps.json" <<JSON
{"apps": [{"name": "beta", "topic": "org.example.beta", "key_file": "$key_file", "key_id": "$kid", "team_id": "$team"}]}
JSON
env -i PATH="$PATH" HOME="$work" APPS_FILE="$work/apps.json" \
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
"$NGINX" -e stderr -p "$work/" -c "$work/readme-nginx.conf" -g 'daemon off;' >"$work/readme-nginx.out" 2>&1 &
readme_pid=$!
pids+=($readme_pid)
HOME="$work" XDG_DATA_HOME="$work/caddy" XDG_CONFIG_HOME="$work/caddy" \
    caddy run --adapter caddyfile --config "$work/Caddyfile" >"$work/caddy.out" 2>&1 &
caddy_pid=$!
pids+=($caddy_pid)
for _ in $(seq 100); do
    python3 -c "import socket,sys; [socket.create_connection(('127.0.0.1',p),1) for p in ($relay_port,$nginx_port,$readme_port,$caddy_port)]" 2>/dev/null && break
    sleep 0.1
done
kill -0 "$nginx_pid" 2>/dev/null || fail "nginx did not start: $(cat "$work/nginx.out")"
kill -0 "$readme_pid" 2>/dev/null || fail "nginx did not start with README's block: $(cat "$work/readme-nginx.out")"
kill -0 "$caddy_pid" 2>/dev/null || fail "Caddy did not start with README's block: $(tail -5 "$work/caddy.out")"
echo "  relay 127.0.0.1:$relay_port -> emulator 127.0.0.1:$mock_port; in front of the relay: deploy/nginx/nginx.conf" \
    "(nginx pid $nginx_pid) on :$nginx_port, README's nginx block (pid $readme_pid) on :$readme_port, README's Caddy block (pid $caddy_pid) on :$caddy_port"

echo "== every push route through each proxy"
cat >"$work/routes.py" <<'PY'
# routes.py PORT CA NAME: through the proxy on PORT, a push to each route answers 201 (the
# relay's answer, never the proxy's 404) and /metrics is not served.
import base64, http.client, os, ssl, sys
port, ca, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl.create_default_context(cafile=ca), timeout=10)
token, failed = "cd" * 32, 0
for path in [f"/push/{token}/r-1", f"/relay-to/production/{token}/extra", f"/beta/push/{token}/r-2",
             f"/beta/relay-to/production/{token}"]:
    c.request("POST", path, body=os.urandom(200), headers={
        "Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
        "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)), "TTL": "60"})
    r = c.getresponse(); body = r.read()
    good = r.status == 201 and r.getheader("apns-id")
    failed += not good
    print(f"  {'ok' if good else 'FAIL'}: {name}: POST {path.replace(token, '<token>')} -> {r.status}"
          + ("" if good else f" {body[:100]!r}"))
c.request("GET", "/metrics")
r = c.getresponse(); body = r.read()
private = r.status != 200 and b"relay_" not in body
failed += not private
print(f"  {'ok' if private else 'FAIL'}: {name}: GET /metrics -> {r.status}, not the relay's metrics")
sys.exit(1 if failed else 0)
PY
for proxy in "deploy/nginx/nginx.conf:$nginx_port" "README's nginx block:$readme_port" "README's Caddy block:$caddy_port"; do
    python3 "$work/routes.py" "${proxy##*:}" "$work/fullchain.pem" "${proxy%:*}" >"$work/routes.out" 2>&1 \
        || { cat "$work/routes.out"; fail "${proxy%:*}: not every push route reaches the relay (relay log: $(tail -3 "$work/relay.out"))"; }
    cat "$work/routes.out"
    passed=$((passed + $(grep -c '^  ok:' "$work/routes.out")))
done

echo "== pushes through deploy/nginx/nginx.conf"
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
