#!/usr/bin/env bash
# Debian's Prometheus (installed when missing) scraping a relay under load, on 127.0.0.1, run with
# the shipped deploy/prometheus/prometheus-static.yml (its target, intervals and TLS settings
# pointed here) and so with deploy/prometheus/alerts.yml; then every panel query of
# deploy/grafana/apns-relay.json (its $job and $instance as Grafana fills them in) and every
# alert rule is evaluated through Prometheus's HTTP API:
#   - every panel returns data, the certificate panel included (the relay serves HTTPS and an
#     APPS_FILE app pushes with a certificate); the dashboard's variables find the job;
#   - the 502 alert fires (a RELAY_TO_TOPIC the emulator refuses), not for DeviceTokenNotForTopic
#     (tokens of another app, which anyone can send); the reconnect-churn alert's expression holds
#     (the emulator sends GOAWAY after every 10th request on a connection);
#   - holding: pushes to a token the emulator answers 503 for are held on disk (STORE_PATH in the
#     work directory, HOLD_MAX_PUSHES=3, HOLD_MAX_PER_DEVICE=2) and answered 201 with
#     X-Relay-Held: true; a third push to one device drops its oldest; a push past the cap is
#     answered 503; the held-push panels return data, and ApnsRelayHoldNearCap's and
#     ApnsRelayHoldFailing's expressions hold;
#   - the alerts of a healthy relay stay quiet (down, no connection, token refused or signed too
#     often, 503/504 ratio, degraded payloads, latency, certificates, pushes held 10 minutes);
#   - once the relay is stopped, ApnsRelayDown's expression holds for its target (up == 0), and
#     for a job with no target at all (absent).
# The store: the relay holds in Debian's Redis (redis-tools' server binary, deploy/redis/redis.conf,
# 127.0.0.1) through STORE_URL: the store panels must return data too, and once Redis is killed a
# push that should be held makes ApnsRelayStoreUnreachable's expression hold.
# Bounded: about 55 s of load and scrapes; every process started here is stopped by its PID.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
source scripts/debian.sh
source scripts/emulator.sh

work=$(mktemp -d /tmp/prometheus-test.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "prometheus-test: FAIL: $*" >&2; for f in relay.out mock.out prometheus.out; do [ -f "$work/$f" ] && tail -5 "$work/$f" >&2; done; exit 1; }

missing=()
command -v prometheus >/dev/null || missing+=(prometheus)
command -v redis-cli >/dev/null && command -v redis-check-rdb >/dev/null || missing+=(redis-tools)
install_packages "${missing[@]}"
"$SWIFT" build --product apns-relay >/dev/null
"$SWIFT" build --product apns-mock >/dev/null
BIN="$("$SWIFT" build --show-bin-path)"

relay_port=$(free_port)
prom_port=$(free_port)
echo "== the emulator (GOAWAY after every 10th request on a connection), the relay, Prometheus"
# The emulator also issues a push certificate: the APPS_FILE app "beta" pushes with it, so the
# relay exports relay_apns_certificate_expiry_seconds; the relay serves HTTPS, so it exports
# relay_https_certificate_expiry_seconds.
mkdir -p "$work/push"
"$BIN/apns-mock" --port 0 --goaway-after 10 --ca-out "$work/ca.pem" --topic com.example.app --topic org.example.beta \
    --client-cert-out "$work/push" --client-cert-topic org.example.beta --client-cert-password pw >"$work/mock.out" 2>&1 &
pids+=($!)
emulator_wait "$work"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout "$work/https.key" -out "$work/https.crt" 2>/dev/null
cat >"$work/apps.json" <<JSON
{"apps": [{"name": "beta", "p12_file": "$work/push/push.p12", "p12_password": "pw"}]}
JSON
# The relay refuses STORE_URL beside STORE_PATH, naming STORE_URL (what an env file moved over
# from the embedded store meets).
probe_env=(APNS_AUTH_KEY_FILE="$key_file" APNS_KEY_ID="$kid" APPLE_TEAM_ID="$team" TOPIC=com.example.app
    APNS_HOST="localhost:$mock_port" APNS_CA_FILE="$work/ca.pem" BIND_ADDRESS=127.0.0.1 PORT="$(free_port)")
env -i PATH="$PATH" HOME="$work" "${probe_env[@]}" STORE_URL=redis://127.0.0.1:1/0 STORE_PATH="$work/probe.sqlite" \
    "$BIN/apns-relay" serve >"$work/probe.out" 2>&1 &
probe_pid=$!
for _ in $(seq 150); do kill -0 "$probe_pid" 2>/dev/null || break; grep -q 'apns-relay listening' "$work/probe.out" && break; sleep 0.1; done
if kill -0 "$probe_pid" 2>/dev/null; then
    kill -TERM "$probe_pid"; wait "$probe_pid" 2>/dev/null || true
    fail "the relay started with STORE_URL and STORE_PATH both set: $(tail -3 "$work/probe.out")"
fi
wait "$probe_pid" 2>/dev/null || true
grep -q STORE_URL "$work/probe.out" || fail "the relay refused STORE_URL with STORE_PATH without naming STORE_URL: $(tail -3 "$work/probe.out")"
# Debian's redis-tools ships the server's binary as redis-check-rdb; named redis-server, it serves.
mkdir -p "$work/redis"
ln -s "$(command -v redis-check-rdb)" "$work/redis/redis-server"
sed "s|^dir /data\$|dir $work/redis|" deploy/redis/redis.conf >"$work/redis/redis.conf"
redis_port=$(free_port)
"$work/redis/redis-server" "$work/redis/redis.conf" --port "$redis_port" --bind 127.0.0.1 >"$work/redis.out" 2>&1 &
redis_pid=$!
pids+=($redis_pid)
for _ in $(seq 100); do [ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done
[ "$(redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ] || fail "Redis did not start: $(tail -3 "$work/redis.out")"
store_env=(STORE_URL="redis://127.0.0.1:$redis_port/0")
echo "== the store: Redis on 127.0.0.1:$redis_port (deploy/redis/redis.conf)"
# RELAY_TO_TOPIC names an app the emulator's key may not push to: /relay-to pushes answer 502.
# The held pushes' store is in the work directory, with caps small enough to reach.
env -i PATH="$PATH" HOME="$work" APNS_AUTH_KEY_FILE="$key_file" APNS_KEY_ID="$kid" APPLE_TEAM_ID="$team" \
    TOPIC=com.example.app RELAY_TO_TOPIC=com.misconfigured.app APPS_FILE="$work/apps.json" \
    APNS_HOST="localhost:$mock_port" APNS_SANDBOX_HOST="localhost:$mock_port" APNS_CA_FILE="$work/ca.pem" \
    TLS_CERT_FILE="$work/https.crt" TLS_KEY_FILE="$work/https.key" \
    BIND_ADDRESS=127.0.0.1 PORT="$relay_port" PUSH_TIMEOUT_MS=2000 LOG_LEVEL=warning \
    "${store_env[@]}" HOLD_MAX_PUSHES=3 HOLD_MAX_PER_DEVICE=2 \
    "$BIN/apns-relay" serve >"$work/relay.out" 2>&1 &
relay_pid=$!
pids+=($relay_pid)
# The shipped configuration: the rules beside it, job "apns-relay", its target pointed at this
# relay, scraped and evaluated every second, over HTTPS with this relay's certificate.
python3 - "$PWD/deploy/prometheus/prometheus-static.yml" "$PWD/deploy/prometheus" "127.0.0.1:$relay_port" "$work/https.crt" \
    >"$work/prometheus.yml" <<'PY' || fail "could not adapt deploy/prometheus/prometheus-static.yml"
import json, os, sys
import re
text = open(sys.argv[1]).read()
assert text.count('targets: ["127.0.0.1:3000"]') == 1 and "rule_files:\n  - alerts.yml" in text
text = text.replace('targets: ["127.0.0.1:3000"]', f'targets: ["{sys.argv[3]}"]')
text = text.replace("rule_files:\n  - alerts.yml", f"rule_files:\n  - {os.path.join(sys.argv[2], 'alerts.yml')}")
text = re.sub(r"(scrape|evaluation)_interval: 15s", r"\1_interval: 1s", text)
text = text.replace("    metrics_path: /metrics\n", f"    metrics_path: /metrics\n    scheme: https\n    tls_config:\n      ca_file: {sys.argv[4]}\n")
print(text)
PY
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1 && curl -fsS --cacert "$work/https.crt" "https://127.0.0.1:$relay_port/ready" >/dev/null 2>&1 && break
    sleep 0.2
done
curl -fsS "http://127.0.0.1:$prom_port/-/ready" >/dev/null || fail "Prometheus did not start"
curl -fsS --cacert "$work/https.crt" "https://127.0.0.1:$relay_port/ready" >/dev/null || fail "the relay did not become ready"
echo "  relay https://127.0.0.1:$relay_port -> emulator 127.0.0.1:$mock_port; Prometheus 127.0.0.1:$prom_port scrapes it every 1 s"

echo "== 25 s of pushes, then pushes Apple refuses with 503 (held), then the panels and the alerts through Prometheus's API"
python3 - "$relay_port" "$prom_port" "$PWD/deploy/grafana/apns-relay.json" "$PWD/deploy/prometheus/alerts.yml" "$work/https.crt" <<'PY' || fail "see above"
import base64, http.client, json, os, re, socket, ssl, sys, time, urllib.parse, urllib.request
relay, prom, dashboard_path, rules_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
tls = ssl.create_default_context(cafile=sys.argv[5])
connect = lambda: http.client.HTTPSConnection("127.0.0.1", relay, timeout=10, context=tls)
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
problems = []
def check(ok, what, detail=""):
    print(("  ok: " if ok else "  FAIL: ") + what + ("" if ok or not detail else f" ({detail})"))
    if not ok: problems.append(what)

def headers():
    return {"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
            "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)), "TTL": "60"}

statuses, marked = {}, 0
c = connect()
end, n = time.monotonic() + 25, 0
while time.monotonic() < end:
    n += 1
    if n % 10 == 0:
        path, body = f"/relay-to/production/{'ab' * 32}", os.urandom(200)      # 502: a topic Apple refuses
    elif n % 7 == 0:
        path, body = f"/push/dead{'ab' * 30}/{n}", os.urandom(200)            # 410: a dead token
    elif n % 11 == 0:
        path, body = f"/push/d7f7{'ab' * 30}/{n}", os.urandom(200)            # 502: a token of another app
    elif n % 13 == 0:
        path, body = f"/beta/push/{'ab' * 32}/{n}", os.urandom(200)           # 201 with the push certificate
    elif n % 17 == 0:
        path, body = f"/nosuchapp/push/{'ab' * 32}/{n}", os.urandom(200)      # 502: an app it does not serve
    elif n % 53 == 0:
        # 413: over the 64 KiB cap. Only the head is sent, with Expect: 100-continue: the relay
        # answers 413 to it and closes, which over TLS a client still sending the body could
        # meet before it reads the 413.
        raw = tls.wrap_socket(socket.create_connection(("127.0.0.1", relay), timeout=10), server_hostname="127.0.0.1")
        raw.sendall((f"POST /push/{'ab' * 32}/{n} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\n"
                     "Expect: 100-continue\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers().items()) + "\r\n").encode())
        status = int(raw.recv(4096).split(b" ")[1])
        raw.close()
        statuses[status] = statuses.get(status, 0) + 1
        continue
    else:
        path, body = f"/push/{'ab' * 32}/{n}", os.urandom(200)
    try:
        c.request("POST", path, body=body, headers=headers())
        r = c.getresponse(); r.read()
        statuses[r.status] = statuses.get(r.status, 0) + 1
        marked += r.getheader("x-relay-held") is not None
        if r.getheader("connection", "").lower() == "close":
            c.close(); c = connect()
    except Exception as e:
        statuses[str(type(e).__name__)] = statuses.get(str(type(e).__name__), 0) + 1
        c.close(); c = connect()
    time.sleep(0.02)
print(f"  answers: {dict(sorted(statuses.items(), key=str))}")
check(statuses.get(201, 0) > 100 and statuses.get(502, 0) > 0 and statuses.get(410, 0) > 0 and statuses.get(413, 0) > 0,
      "the load got 201s, 410s for dead tokens, 502s for the refused topic and 413s")
check(all(s in (201, 410, 413, 502) for s in statuses), "no other answer (no 503/504 although APNs sent GOAWAY every 10 requests)")
check(marked == 0, "no answer Apple gave carries X-Relay-Held", f"{marked} did")

# Holding: the emulator answers 503 ServiceUnavailable to every push for a token starting 5030, so
# the relay holds them (HOLD_MAX_PER_DEVICE=2, HOLD_MAX_PUSHES=3). Three to device 1 (its oldest
# dropped: 2 held), one to device 2 (3 held: the cap), one to device 3 (over the cap: 503).
held_answers = []
for device in ["01", "01", "01", "02", "03"]:
    try:
        c.request("POST", f"/push/5030{'ab' * 29}{device}/held", body=os.urandom(200), headers=headers())
        r = c.getresponse(); r.read()
        held_answers.append((r.status, r.getheader("x-relay-held")))
        if r.getheader("connection", "").lower() == "close":
            c.close(); c = connect()
    except Exception as e:
        held_answers.append((type(e).__name__, None))
        c.close(); c = connect()
print(f"  pushes Apple answers 503: {held_answers}")
check(held_answers[:4] == [(201, "true")] * 4, "pushes Apple answers 503 are held: 201 with X-Relay-Held: true", str(held_answers))
check(held_answers[4][0] == 503 and held_answers[4][1] is None, "the push past HOLD_MAX_PUSHES is answered 503, not held", str(held_answers[4]))
time.sleep(3)  # two more scrapes after the last push

def query(expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answer = json.load(urllib.request.urlopen(url, timeout=10))
    if answer.get("status") != "success": raise SystemExit(f"query failed: {expr}: {answer}")
    return answer["data"]["result"]

dashboard = json.load(open(dashboard_path))
# The variables as Grafana fills them in: $job from its query (it must find "apns-relay", the
# shipped scrape job), $instance All (its allValue).
variables = {v["name"]: v for v in dashboard["templating"]["list"] if v["type"] == "query"}
check(set(variables) == {"job", "instance"}, "the dashboard has the job and instance variables", str(sorted(variables)))
def label_values(definition, values):
    m = re.fullmatch(r"label_values\((.+), (\w+)\)", definition)
    series = query(m.group(1).replace("$job", values.get("job", ".*")))
    return sorted({r["metric"].get(m.group(2)) for r in series})
jobs = label_values(variables["job"]["definition"], {})
check("apns-relay" in jobs, "the $job variable's query finds job apns-relay", str(jobs))
instances = label_values(variables["instance"]["definition"], {"job": "apns-relay"})
check(instances == [f"127.0.0.1:{relay}"], "the $instance variable's query finds the relay", str(instances))
def fill(expr):
    return expr.replace("$job", "apns-relay").replace("$instance", variables["instance"]["allValue"])
for panel in dashboard["panels"]:
    for target in panel["targets"]:
        check("$job" in target["expr"] or target["expr"].startswith("vector("), f"panel '{panel['title']}' ({target['refId']}) is scoped by $job and $instance")
        result = query(fill(target["expr"]))
        check(len(result) > 0, f"panel '{panel['title']}' ({target['refId']}) returns data", target["expr"])

# The rules as Prometheus loaded them: each evaluated healthy, then each expression now.
rules = json.load(urllib.request.urlopen(f"http://127.0.0.1:{prom}/api/v1/rules?type=alert", timeout=10))["data"]["groups"]
alerts = {rule["name"]: rule for group in rules for rule in group["rules"]}
check(len(alerts) == len(re.findall(r"^\s+- alert: ", open(rules_path).read(), re.M)), f"Prometheus loaded every rule ({len(alerts)})")
check(all(rule["health"] == "ok" for rule in alerts.values()), "every rule evaluates without error",
      str({name: rule.get("lastError") for name, rule in alerts.items() if rule["health"] != "ok"}))
# The store is at its cap (3 of HOLD_MAX_PUSHES=3) and one push could not be held.
should_hold = {"ApnsRelayMisconfigured", "ApnsRelayReconnectChurn", "ApnsRelayHoldNearCap", "ApnsRelayHoldFailing"}
for name, rule in sorted(alerts.items()):
    # rate() and increase() divide by their whole range: over this test's half minute of history
    # a 5-minute range would read a storm as a fifth of itself. Each range is cut to 30 s here
    # (the rules keep theirs); for the quiet ones that only makes them quicker to fire.
    holds = len(query(re.sub(r"\[(5m|10m|15m|1h)\]", "[30s]", rule["query"]))) > 0
    if name in should_hold:
        check(holds, f"{name}: its expression holds under this load",
              f"{rule['query']} is empty; the counters: {[(r['metric'].get('__name__'), r['value'][1]) for r in query('relay_apns_reconnects_total or relay_misconfiguration_total')]}")
    else:
        check(not holds, f"{name}: quiet for a healthy relay")
# The 502 alert has no `for`: Prometheus fires it for real, for the refused topic only.
firing = json.load(urllib.request.urlopen(f"http://127.0.0.1:{prom}/api/v1/alerts", timeout=10))["data"]["alerts"]
reasons = sorted({a["labels"].get("reason") for a in firing if a["labels"]["alertname"] == "ApnsRelayMisconfigured" and a["state"] == "firing"})
check(reasons == ["TopicDisallowed"], "ApnsRelayMisconfigured is firing in Prometheus for TopicDisallowed, not for DeviceTokenNotForTopic",
      str([(a["labels"]["alertname"], a["labels"].get("reason"), a["state"]) for a in firing]))
check(statuses.get(502, 0) > 0 and len(query('relay_misconfiguration_total{reason="DeviceTokenNotForTopic"}')) > 0,
      "the relay counted the DeviceTokenNotForTopic 502s (the alert left them out)")
def value(expr):
    result = query(expr)
    return [float(r["value"][1]) for r in result]
for expr, expected in [("relay_hold_enabled", 1), ("relay_held_pushes", 3), ("relay_hold_limit_pushes", 3),
                       ("relay_held_pushes_total", 4), ('relay_held_dropped_total{reason="device_cap"}', 1),
                       ('relay_hold_failures_total{reason="cap_reached"}', 1)]:
    got = value(expr)
    check(got == [expected], f"{expr} is {expected}", str(got))
unknown = query('relay_unknown_app_pushes_total')
check(len(unknown) == 1 and float(unknown[0]["value"][1]) > 0 and not query('relay_misconfiguration_total{reason="UnknownApp"}'),
      "the pushes to an app the relay does not serve counted apart (relay_unknown_app_pushes_total), not as a misconfiguration",
      str(unknown))
if problems:
    raise SystemExit(f"{len(problems)} check(s) failed")
PY

echo "== Redis killed: ApnsRelayStoreUnreachable's expression holds for the relay"
kill -KILL "$redis_pid"
python3 - "$relay_port" "$prom_port" "$work/https.crt" <<'PY' || fail "see above"
import base64, http.client, json, os, ssl, sys, time, urllib.parse, urllib.request
relay, prom = int(sys.argv[1]), int(sys.argv[2])
tls = ssl.create_default_context(cafile=sys.argv[3])
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
def query(expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
rules = json.load(urllib.request.urlopen(f"http://127.0.0.1:{prom}/api/v1/rules?type=alert", timeout=10))["data"]["groups"]
expr = next(r for g in rules for r in g["rules"] if r["name"] == "ApnsRelayStoreUnreachable")["query"]
deadline, held, answers = time.monotonic() + 30, [], []
while time.monotonic() < deadline and not held:
    # A push Apple answers 503 makes the relay call its store (to hold it); the relay also reads
    # the store on its own, for what other relays held.
    c = http.client.HTTPSConnection("127.0.0.1", relay, timeout=10, context=tls)
    c.request("POST", f"/push/5030{'ab' * 29}09/store", body=os.urandom(200),
              headers={"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
                       "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)), "TTL": "60"})
    r = c.getresponse(); r.read(); c.close()
    answers.append(r.status)
    time.sleep(1)
    held = query(expr)
ok = [r["metric"].get("instance") for r in held] == [f"127.0.0.1:{relay}"]
print(f"  {'ok' if ok else 'FAIL'}: ApnsRelayStoreUnreachable's expression ({expr}) holds for the relay once Redis is gone: {held}; the pushes meanwhile: {answers}")
health = json.load(urllib.request.urlopen(f"https://127.0.0.1:{relay}/health", timeout=10, context=tls))
said = health.get("store_ok") is False and "store" in health
print(f"  {'ok' if said else 'FAIL'}: /health says store_ok false: {health}")
sys.exit(0 if ok and said else 1)
PY

echo "== the relay stopped: ApnsRelayDown's expression"
kill -TERM "$relay_pid"
python3 - "$prom_port" "$relay_port" <<'PY' || fail "see above"
import json, sys, time, urllib.parse, urllib.request
prom, relay = int(sys.argv[1]), sys.argv[2]
def query(expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
rules = json.load(urllib.request.urlopen(f"http://127.0.0.1:{prom}/api/v1/rules?type=alert", timeout=10))["data"]["groups"]
down = next(r for g in rules for r in g["rules"] if r["name"] == "ApnsRelayDown")["query"]
deadline, held = time.monotonic() + 15, []
while time.monotonic() < deadline and not held:
    held = query(down)
    time.sleep(0.5)
ok = [r["metric"].get("instance") for r in held] == [f"127.0.0.1:{relay}"]
print(f"  {'ok' if ok else 'FAIL'}: ApnsRelayDown's expression holds for the stopped relay's target (up == 0): {held}")
gone = query(down.replace('"apns-relay"', '"apns-relay-nowhere"'))
absent = [r["metric"] for r in gone] == [{"job": "apns-relay-nowhere"}]
print(f"  {'ok' if absent else 'FAIL'}: ... and for a job with no target at all (absent): {gone}")
sys.exit(0 if ok and absent else 1)
PY
echo "prometheus-test: every check passed"
