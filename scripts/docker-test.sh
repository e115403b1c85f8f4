#!/usr/bin/env bash
# Builds the project's Dockerfile, unchanged, with a real Docker engine, and runs the image:
#   `demo --once` in the container, then `serve` against the APNs emulator (on the host, over
#   loopback): the HEALTHCHECK goes healthy, a push is delivered, the process runs as uid 10001,
#   the image's /var/lib/apns-relay (the held pushes) is a volume uid 10001 can write to, and
#   SIGTERM ends it with status 0 within 10 s; then toot-relay's env file (a .p12, HTTPS from
#   CRT_FILENAME/KEY_FILENAME): the HEALTHCHECK goes healthy over HTTPS and pushes over HTTPS
#   reach the emulator with the certificate; then a relay crashed with SIGSEGV logs a
#   backtrace that names its functions (the image carries the Swift backtracer); then
#   deploy/docker-compose.yml, unchanged, with metatext-apns's, toot-relay's and
#   webpush-apn-relay's env files (each healthy, pushes on both routes delivered, its named volume
#   at /var/lib/apns-relay writable by the relay's uid), and whole (nginx in front) with the relay
#   recreated at a new address: nginx finds it again, and the volume kept what the old one wrote; then,
#   the image's relay refusing STORE_URL beside STORE_PATH, naming it; deploy/redis's image and
#   two relays on 127.0.0.1 sharing it: pushes held while the emulator is
#   away, Redis killed with SIGKILL and started on its volume, one relay stopped, every push
#   delivered once by the other when the emulator is back; and deploy/docker-compose.redis.yml whole
#   with two relay replicas behind nginx. Prints the image's layer sizes. The build uses the classic
#   builder (DOCKER_BUILDKIT=0), Debian 12's default.
#
# No registry is reachable, so the base images the Dockerfile names are made here and kept in
# Docker's own image store, labelled with a key of what they were made from (a later run with
# the same inputs reuses them):
#   debian:bookworm-slim   debootstrap --variant=minbase bookworm from the configured Debian mirror
#   swift:X.Y-bookworm     that, plus this machine's Swift toolchain and the packages it needs
#
# Uses a running Docker engine when there is one; otherwise starts Debian's dockerd without
# bridge or iptables (containers use --network host, so every address stays on loopback) and
# stops it by its PID at the end. Skips (exit 0) when no engine can be started.
# Installs docker.io, docker-compose and debootstrap from Debian when missing (as root).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/emulator.sh

SWIFT=${SWIFT:-swift}
DEBIAN_RELEASE=bookworm
IMAGE=apns-relay:ci
KEY_LABEL=org.apns-relay.ci.key
started_at=$SECONDS

passed=0
say() { echo "[docker-test $((SECONDS - started_at))s] $*"; }
fail() { echo "docker-test: FAIL: $*" >&2; echo "docker-test: $passed passed, 1 failed"; exit 1; }
ok() { echo "  ok: $*"; passed=$((passed + 1)); }
skip() { echo "docker-test: skipped: $*"; echo "docker-test: 0 passed, 0 failed, 1 skipped"; exit 0; }

source scripts/debian.sh
if [ "$(id -u)" != 0 ] && ! sudo -n true 2>/dev/null; then skip "needs root to run dockerd and debootstrap"; fi
missing=()
[ -x /usr/bin/docker ] && command -v dockerd >/dev/null || missing+=(docker.io)
command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
command -v python3 >/dev/null || missing+=(python3)
command -v docker-compose >/dev/null || missing+=(docker-compose)
install_packages "${missing[@]}"
# Debian's client, which matches Debian's engine, with Debian 12's default builder: docker.io 20.10
# builds with the classic builder unless told otherwise, so the Dockerfile must build there (no
# `RUN --mount`, no BuildKit-only syntax). DOCKER_BUILDKIT=0 makes that the builder whatever the
# engine's or the environment's default.
docker() { DOCKER_BUILDKIT=0 as_root /usr/bin/docker "$@"; }

work=$(mktemp -d)
chmod 755 "$work"
dockerd_pid=
container=
mock_pid=
compose_mock_pid=
redis_mock_pid=
redis_container=
redis_volume=
redis_relays=()
cleanup() {
    declare -F compose_down >/dev/null && compose_down
    [ "${#redis_relays[@]}" = 0 ] || docker rm -fv "${redis_relays[@]}" >/dev/null 2>&1 || true
    [ -z "$redis_container" ] || docker rm -fv "$redis_container" >/dev/null 2>&1 || true
    [ -z "$redis_volume" ] || docker volume rm "$redis_volume" >/dev/null 2>&1 || true
    if [ -n "$redis_mock_pid" ]; then kill -TERM "$redis_mock_pid" 2>/dev/null || true; fi
    [ -z "$container" ] || docker rm -fv "$container" >/dev/null 2>&1 || true
    if [ -n "$compose_mock_pid" ]; then kill -TERM "$compose_mock_pid" 2>/dev/null || true; fi
    if [ -n "$mock_pid" ]; then kill -TERM "$mock_pid" 2>/dev/null || true; fi
    if [ -n "$dockerd_pid" ]; then
        as_root kill -TERM "$dockerd_pid" 2>/dev/null || true
        for _ in $(seq 200); do as_root kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.1; done
        as_root kill -KILL "$dockerd_pid" 2>/dev/null || true
    fi
    as_root rm -rf "$work"
}
trap cleanup EXIT

# ---- the engine ------------------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
    say "using the running Docker engine"
else
    say "starting dockerd (no bridge, no iptables)"
    # Its own pid file, so the PID stopped at the end is dockerd's own (not a sudo's or a shell's).
    as_root dockerd --bridge=none --iptables=false --ip6tables=false --pidfile "$work/dockerd.pid" \
        >"$work/dockerd.log" 2>&1 &
    launcher=$!
    for _ in $(seq 300); do
        [ -n "$dockerd_pid" ] || dockerd_pid=$(as_root cat "$work/dockerd.pid" 2>/dev/null || true)
        docker info >/dev/null 2>&1 && break
        kill -0 "$launcher" 2>/dev/null || break
        sleep 0.1
    done
    docker info >/dev/null 2>&1 || skip "no Docker engine could be started: $(tail -3 "$work/dockerd.log")"
    # The first `docker info` can wait until the engine answers, so the loop may end before it
    # read the pid file: without this the engine was left running after the test.
    [ -n "$dockerd_pid" ] || dockerd_pid=$(as_root cat "$work/dockerd.pid" 2>/dev/null || true)
    [ -n "$dockerd_pid" ] || fail "dockerd wrote no pid file $work/dockerd.pid, so it could not be stopped at the end"
    say "dockerd pid $dockerd_pid"
fi

has_image() { # TAG KEY: the tag exists and was made from KEY
    [ "$(docker image inspect -f "{{index .Config.Labels \"$KEY_LABEL\"}}" "$1" 2>/dev/null)" = "$2" ]
}

# ---- debian:bookworm-slim from debootstrap ---------------------------------------------------
mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian
debian_key=$(echo "debootstrap $(dpkg-query -W -f '${Version}' debootstrap) minbase $DEBIAN_RELEASE $mirror" | sha256sum | cut -c1-16)
if has_image "debian:$DEBIAN_RELEASE-slim" "$debian_key"; then
    say "debian:$DEBIAN_RELEASE-slim cached ($debian_key)"
else
    say "debootstrap --variant=minbase $DEBIAN_RELEASE from $mirror"
    as_root debootstrap --variant=minbase "$DEBIAN_RELEASE" "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || fail "debootstrap failed: $(tail -5 "$work/debootstrap.log")"
    as_root rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
    as_root tar -C "$work/rootfs" -c . | docker import --change "LABEL $KEY_LABEL=$debian_key" --change 'CMD ["bash"]' \
        - "debian:$DEBIAN_RELEASE-slim" >/dev/null
    as_root rm -rf "$work/rootfs"
    say "made debian:$DEBIAN_RELEASE-slim"
fi

# ---- swift:X.Y-bookworm from this machine's toolchain ----------------------------------------
swift_bin_dir=$(readlink -f "$(dirname "$(command -v "$SWIFT")")")
toolchain=${swift_bin_dir%/usr/bin}
[ -d "$toolchain/usr/lib/swift" ] || fail "cannot find the toolchain around $swift_bin_dir"
swift_version=$("$SWIFT" --version 2>&1 | sed -nE 's/.*Swift version ([0-9]+\.[0-9]+).*/\1/p' | head -1)
# The packages the official swift:*-bookworm image installs for building, plus none of ours:
# the Dockerfile's build stage installs those itself.
swift_packages="binutils gcc git libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev libpython3-dev libsqlite3-0
  libstdc++-12-dev libxml2-dev libncurses-dev libz3-dev pkg-config tzdata zlib1g-dev ca-certificates unzip"
swift_key=$( { "$SWIFT" --version 2>&1; echo "$toolchain $swift_packages"; docker image inspect -f '{{.Id}}' "debian:$DEBIAN_RELEASE-slim"; } \
    | sha256sum | cut -c1-16)
swift_image="swift:$swift_version-$DEBIAN_RELEASE"
if has_image "$swift_image" "$swift_key"; then
    say "$swift_image cached ($swift_key)"
else
    say "making $swift_image from $toolchain ($(du -sh "$toolchain" | cut -f1))"
    mkdir -p "$work/swift-context"
    cat >"$work/swift-context/Dockerfile" <<DOCKERFILE
FROM debian:$DEBIAN_RELEASE-slim
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $(echo $swift_packages) \\
 && rm -rf /var/lib/apt/lists/*
COPY ${toolchain#/} $toolchain
ENV PATH=$toolchain/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL $KEY_LABEL=$swift_key
DOCKERFILE
    # The context is a tar of the Dockerfile and the toolchain, streamed: nothing is copied to disk.
    tar -c -C "$work/swift-context" Dockerfile -C / "${toolchain#/}" \
        | docker build --network host -q -t "$swift_image" - >"$work/swift-build.log" 2>&1 \
        || fail "building $swift_image failed: $(tail -20 "$work/swift-build.log")"
    say "made $swift_image"
fi

# ---- the project's image ---------------------------------------------------------------------
say "docker build (the project's Dockerfile, SWIFT_VERSION=$swift_version)"
docker build --network host --build-arg "SWIFT_VERSION=$swift_version" -t "$IMAGE" . >"$work/build.log" 2>&1 \
    || fail "docker build failed: $(tail -30 "$work/build.log")"
ok "the Dockerfile builds with the classic builder (DOCKER_BUILDKIT=0) and local base images"
echo "  layers of $IMAGE (newest first):"
docker history --format '{{.Size}}\t{{.CreatedBy}}' "$IMAGE" | cut -c1-110 \
    | sed -e 's/^\([0-9.]*[kMG]*B\)\t$/\1\t(debian:'"$DEBIAN_RELEASE"'-slim, from debootstrap)/' -e 's/^/    /'
echo "  image size: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.1f MB", $1 / 1e6}')"

# ---- demo --once -----------------------------------------------------------------------------
say "docker run $IMAGE demo --once"
timeout 60 /usr/bin/docker run --rm --network host "$IMAGE" demo --once >"$work/demo.out" 2>&1 \
    || fail "demo --once in the container failed: $(cat "$work/demo.out")"
sed -n '1,3p;/the device decrypts/,$p' "$work/demo.out" | cut -c1-160 | sed 's/^/    /'
grep -q 'relay answered 201' "$work/demo.out" || fail "demo --once: no 201"
grep -q 'the device decrypts' "$work/demo.out" || fail "demo --once: nothing decrypted"
ok "demo --once in the container: 201 and the payload decrypts"

# ---- serve against the emulator --------------------------------------------------------------
"$SWIFT" build --product apns-mock >/dev/null
mock_bin="$("$SWIFT" build --show-bin-path)/apns-mock"
# It also issues a push certificate (.p12) for the toot-relay run below.
mkdir -p "$work/push"
"$mock_bin" --port 0 --log --ca-out "$work/ca.pem" --client-cert-out "$work/push" --client-cert-topic cx.c3.toot \
    --client-cert-password hunter2 >"$work/mock.out" 2>&1 &
mock_pid=$!
emulator_wait "$work"
# The container's user (10001) reads the key and the CA from a read-only mount.
install -m 0644 "$key_file" "$work/key.p8"
chmod 0644 "$work/ca.pem"
relay_port=$(free_port)
cat >"$work/relay.env" <<ENV
APNS_AUTH_KEY_FILE=/ci/key.p8
APNS_KEY_ID=$kid
APPLE_TEAM_ID=$team
TOPIC=com.example.app
APNS_HOST=localhost:$mock_port
APNS_SANDBOX_HOST=localhost:$mock_port
APNS_CA_FILE=/ci/ca.pem
BIND_ADDRESS=127.0.0.1
PORT=$relay_port
ENV
container=apns-relay-ci-$$
say "docker run -d $IMAGE (serve on 127.0.0.1:$relay_port, emulator on 127.0.0.1:$mock_port)"
docker run -d --name "$container" --network host --env-file "$work/relay.env" -v "$work:/ci:ro" "$IMAGE" >/dev/null \
    || fail "docker run failed"
# The image's own HEALTHCHECK (30 s interval): the first check runs 30 s after the start.
# wait_health: waits up to 90 s for the container's health to settle; leaves it in $health.
wait_health() {
    health=
    for _ in $(seq 90); do
        health=$(docker inspect -f '{{.State.Health.Status}}' "$container" 2>/dev/null || echo gone)
        [ "$health" = healthy ] || [ "$health" = unhealthy ] || [ "$health" = gone ] && break
        sleep 1
    done
}
wait_health
[ "$health" = healthy ] || fail "the HEALTHCHECK says $health: $(docker logs "$container" 2>&1 | tail -5)"
ok "the HEALTHCHECK went healthy after $(docker inspect -f '{{len .State.Health.Log}}' "$container") check(s)"

python3 - "$relay_port" <<'PY' || fail "the push through the container was not answered 201"
import base64, http.client, os, sys
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
c.request("POST", "/push/" + "ab" * 32 + "/docker-1", body=os.urandom(300),
          headers={"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
                   "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64))})
r = c.getresponse(); r.read()
print(f"  POST /push/… -> {r.status} apns-id {r.getheader('apns-id')}")
sys.exit(0 if r.status == 201 else 1)
PY
for _ in $(seq 50); do grep -qE '^200 ' "$work/mock.out" && break; sleep 0.1; done
grep -qE '^200 ' "$work/mock.out" || fail "the emulator recorded no delivered push: $(cat "$work/mock.out")"
ok "a push through the container reaches the emulator and answers 201"

host_pid=$(docker inspect -f '{{.State.Pid}}' "$container")
uid=$(awk '/^Uid:/ {print $2}' "/proc/$host_pid/status")
[ "$uid" = 10001 ] || fail "the relay runs as uid $uid, not 10001"
ok "the relay runs as uid 10001 (configured user $(docker inspect -f '{{.Config.User}}' "$container"))"

# The held pushes' directory (STORE_PATH's default): a VOLUME of the image, made owned by 10001
# before it was declared, so the volume Docker mounts there starts so. The image's user, as the
# relay runs, creates a file in it (the directory, not the relay: opening the store is the
# relay's own test). --rm removes the anonymous volume with the container.
volumes=$(docker image inspect -f '{{json .Config.Volumes}}' "$IMAGE")
grep -q '"/var/lib/apns-relay"' <<<"$volumes" || fail "the image declares no volume /var/lib/apns-relay: $volumes"
probe=$(docker run --rm --network host --read-only --entrypoint /bin/sh "$IMAGE" -c \
    'id -u && touch /var/lib/apns-relay/probe && stat -c "%u:%g %a" /var/lib/apns-relay /var/lib/apns-relay/probe' 2>&1) \
    || fail "uid 10001 cannot create a file in the image's /var/lib/apns-relay: $probe"
[ "$(head -2 <<<"$probe" | tr '\n' ' ')" = "10001 10001:10001 700 " ] \
    || fail "the image's /var/lib/apns-relay is not 10001's (0700), or the user is not 10001: $probe"
ok "/var/lib/apns-relay is a volume of the image, 10001's (0700): uid 10001 creates a file in it under --read-only"

t0=$(date +%s.%N)
docker kill --signal TERM "$container" >/dev/null
code=$(timeout 10 /usr/bin/docker wait "$container" 2>/dev/null) || fail "the container did not stop within 10 s of SIGTERM"
elapsed=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
[ "$code" = 0 ] || fail "the relay exited $code after SIGTERM: $(docker logs "$container" 2>&1 | tail -5)"
ok "SIGTERM: exit 0 after ${elapsed} s"

# ---- toot-relay's env file, HTTPS served by the relay ----------------------------------------
# A toot-relay operator swaps the image and keeps the env file: the .p12 (no TOPIC, its UID is the
# topic), CA_FILENAME, and HTTPS from CRT_FILENAME/KEY_FILENAME with no proxy in front. The image's
# HEALTHCHECK must speak HTTPS there, and a push over HTTPS must reach Apple with the certificate.
docker rm -v "$container" >/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost -days 30 -keyout "$work/relay.key" -out "$work/relay.crt" 2>/dev/null \
    || fail "openssl could not make the relay's HTTPS certificate"
chmod 0644 "$work/relay.key" "$work/push/push.p12"
chmod 0755 "$work/push"
cat >"$work/toot.env" <<ENV
P12_FILENAME=/ci/push/push.p12
P12_PASSWORD=hunter2
CA_FILENAME=/ci/ca.pem
CRT_FILENAME=/ci/relay.crt
KEY_FILENAME=/ci/relay.key
PORT=$relay_port
APNS_HOST=localhost:$mock_port
BIND_ADDRESS=127.0.0.1
ENV
say "docker run -d $IMAGE with toot-relay's env file (HTTPS on 127.0.0.1:$relay_port)"
docker run -d --name "$container" --network host --env-file "$work/toot.env" -v "$work:/ci:ro" "$IMAGE" >/dev/null \
    || fail "docker run failed"
wait_health
[ "$health" = healthy ] || fail "with HTTPS the HEALTHCHECK says $health: $(docker logs "$container" 2>&1 | tail -5)"
ok "toot-relay's env file: the HEALTHCHECK went healthy over HTTPS"
python3 - "$relay_port" "$work/relay.crt" <<'PY' || fail "the push over HTTPS was not answered 201"
import base64, http.client, os, ssl, sys
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
context = ssl.create_default_context(cafile=sys.argv[2])
c = http.client.HTTPSConnection("localhost", int(sys.argv[1]), timeout=10, context=context)
for path in ["/push/" + "cd" * 32 + "/docker-2", "/relay-to/production/" + "cd" * 32]:
    c.request("POST", path, body=os.urandom(300),
              headers={"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
                       "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64))})
    r = c.getresponse(); r.read()
    print(f"  POST {path[:20]}… over HTTPS -> {r.status}")
    if r.status != 201: sys.exit(1)
PY
for _ in $(seq 50); do [ "$(grep -cE '^200 .*cx\.c3\.toot' "$work/mock.out")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -cE '^200 .*cx\.c3\.toot' "$work/mock.out")" -ge 2 ] \
    || fail "the emulator recorded no push for cx.c3.toot: $(tail -5 "$work/mock.out")"
ok "two pushes over HTTPS (both routes) reach the emulator with the .p12's certificate and topic"
docker rm -fv "$container" >/dev/null

# ---- a crash names its functions -------------------------------------------------------------
say "docker run -d $IMAGE, then SIGSEGV to its event loop"
docker run -d --name "$container" --network host --env-file "$work/relay.env" -v "$work:/ci:ro" "$IMAGE" >/dev/null \
    || fail "docker run failed"
# The log is read whole before grep: `grep -q` stops at the first match, and under pipefail the
# SIGPIPE that `docker logs` then gets would fail the check.
logs_have() { local text; text=$(docker logs "$container" 2>&1); grep -q "$1" <<<"$text"; }
for _ in $(seq 100); do logs_have 'apns-relay listening' && break; sleep 0.1; done
logs_have 'apns-relay listening' || fail "the relay did not start: $(docker logs "$container" 2>&1 | tail -5)"
# To the event loop's thread, waiting in epoll_wait under EventLoop.run (kill given a thread's id
# delivers there); the main thread waits in sigtimedwait, which leaves no frames to unwind past.
# (The loop's status is kill's when the thread is found, 1 when it is not: a bare `[ … ] && kill`
# as the last command would fail for every task after the loop's.)
docker exec "$container" sh -c 'for t in /proc/1/task/*; do if [ "$(cat "$t/comm")" = eventloop-0 ]; then kill -SEGV "${t##*/}"; exit; fi; done; exit 1' \
    || fail "could not signal the relay's event loop"
for _ in $(seq 300); do logs_have 'Backtrace took' && break; sleep 0.2; done
docker logs "$container" >"$work/crash.out" 2>&1
# The runtime returns from its handler after the backtrace (a real fault would strike again and
# end the process; a signal sent does not): the container is removed here.
docker rm -fv "$container" >/dev/null
grep -q 'EventLoop.run(' "$work/crash.out" \
    || fail "the crash's log names no relay function: $(grep -v '^{' "$work/crash.out" | tail -20)"
ok "a crash logs a backtrace naming its functions: $(grep -m1 -o 'EventLoop.run([a-z:]*)' "$work/crash.out")"
# ---- the three relays' env files through the shipped compose file ------------------------------
# deploy/docker-compose.yml, copied unchanged, runs its relay service with each of the other
# relays' env files as their operators have them: metatext-apns's (the key inline, one line with
# literal \n), toot-relay's (P12_* and CA_FILENAME, the files under /certs: SECRETS_MOUNT) and
# webpush-apn-relay's (TOKEN_*, TOPIC, no PORT). Each adds only where Apple is (the emulator)
# and, beside a .p8 key, trusts the emulator's CA with APNS_CA_FILE: webpush-apn-relay used
# CA_FILENAME only with certificates, so the relay ignores it beside a key.
# The compose file sets no credential variable, so nothing conflicts with them. An override
# file puts the relay on the host's network (the emulator and the checks are on 127.0.0.1) at a
# free port on 127.0.0.1; the healthcheck, env_file, environment and volumes are the shipped ones.
say "the shipped compose file with each relay's env file (docker-compose $(docker-compose version --short))"
# Its own emulator (and its own push certificate): three relays one after another sign three
# first tokens with one key, which Apple (and the emulator, by default) refuses within 20 minutes.
mkdir -p "$work/compose-push"
"$mock_bin" --port 0 --log --ca-out "$work/compose-ca.pem" --token-update-interval 0 \
    --topic com.example.app --topic cx.c3.toot --client-cert-out "$work/compose-push" --client-cert-topic cx.c3.toot \
    --client-cert-password hunter2 >"$work/compose-mock.out" 2>&1 &
compose_mock_pid=$!
for _ in $(seq 100); do grep -qs 'listening on' "$work/compose-mock.out" && break; sleep 0.1; done
banner=$(grep 'listening on' "$work/compose-mock.out") || fail "the second emulator did not start"
c_port=$(sed -E 's/.*listening on [^ ]*:([0-9]+) .*/\1/' <<<"$banner")
c_key=$(sed -E 's/.* private-key=([^ ]+).*/\1/' <<<"$banner")
c_team=$(sed -E 's/.* team=([^ ]+).*/\1/' <<<"$banner")
c_kid=$(sed -E 's/.* key=([^ ]+).*/\1/' <<<"$banner")
docker tag "$IMAGE" apns-relay:latest
compose_dir="$work/compose"
mkdir -p "$compose_dir/secrets" "$compose_dir/certs"
cp deploy/docker-compose.yml "$compose_dir/"
cmp -s deploy/docker-compose.yml "$compose_dir/docker-compose.yml" || fail "could not copy the compose file"
# The key and certificate files as an operator leaves them: readable by the image's uid only.
install -o 10001 -m 0400 "$c_key" "$compose_dir/secrets/AuthKey.p8"
install -o 10001 -m 0400 "$work/compose-ca.pem" "$compose_dir/secrets/ca.pem"
install -o 10001 -m 0400 "$work/compose-push/push.p12" "$compose_dir/certs/push.p12"
install -o 10001 -m 0400 "$work/compose-ca.pem" "$compose_dir/certs/ca.pem"
chmod 0755 "$compose_dir/secrets" "$compose_dir/certs"
compose_port=$(free_port)
# The compose file's nofile limit (65536) is above what this machine may grant (a container's
# limits cannot exceed the engine's): the override lowers it to the hard limit here when it must.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] || [ "$nofile" -ge 65536 ] && nofile=65536
cat >"$compose_dir/test.override.yml" <<YML
services:
  relay:
    network_mode: host
    environment:
      PORT: "$compose_port"
      BIND_ADDRESS: 127.0.0.1
    ulimits:
      nofile:
        soft: $nofile
        hard: $nofile
YML
compose() { as_root env "$@"; }
compose_project=
compose_override=test.override.yml
placeholders=()
compose_down() {
    [ "${#placeholders[@]}" = 0 ] || docker rm -f "${placeholders[@]}" >/dev/null 2>&1 || true
    placeholders=()
    [ -n "$compose_project" ] || return 0
    compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/${compose_file:-docker-compose.yml}" \
        -f "$compose_dir/$compose_override" down -v -t 10 >/dev/null 2>&1 || true
    compose_project=
    container=
}
one_line_key=$(awk '{printf "%s\\n", $0}' "$c_key")
declare -A env_files=(
    [metatext-apns]="APNS_KEY_ID=$c_kid
APNS_AUTH_KEY=$one_line_key
APPLE_TEAM_ID=$c_team
TOPIC=com.example.app
APNS_CA_FILE=/run/secrets/ca.pem"
    [toot-relay]="P12_FILENAME=/certs/push.p12
P12_PASSWORD=hunter2
CA_FILENAME=/certs/ca.pem
PORT=42069"
    [webpush-apn-relay]="TOKEN_AUTH_KEY_FILENAME=/run/secrets/AuthKey.p8
TOKEN_KEY_ID=$c_kid
TOKEN_TEAM_ID=$c_team
TOPIC=cx.c3.toot
APNS_CA_FILE=/run/secrets/ca.pem"
)
declare -A topics=([metatext-apns]=com.example.app [toot-relay]=cx.c3.toot [webpush-apn-relay]=cx.c3.toot)
declare -A mounts=([metatext-apns]=/run/secrets [toot-relay]=/certs [webpush-apn-relay]=/run/secrets)
declare -A dirs=([metatext-apns]=./secrets [toot-relay]=./certs [webpush-apn-relay]=./secrets)
n=0
for relay in metatext-apns toot-relay webpush-apn-relay; do
    n=$((n + 1))
    { echo "# $relay's env file"; echo "${env_files[$relay]}"; echo "APNS_HOST=localhost:$c_port"
      echo "APNS_SANDBOX_HOST=localhost:$c_port"; } >"$compose_dir/apns-relay.env"
    compose_env=(SECRETS_MOUNT="${mounts[$relay]}" SECRETS_DIR="${dirs[$relay]}")
    compose_project=apns-relay-ci-$$-$n
    compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
        -f "$compose_dir/test.override.yml" up -d --no-build relay >"$work/compose-up.log" 2>&1 \
        || fail "$relay's env file: docker-compose up failed: $(tail -5 "$work/compose-up.log")"
    container=$(compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
        -f "$compose_dir/test.override.yml" ps -q relay)
    wait_health
    [ "$health" = healthy ] || fail "$relay's env file under compose: the healthcheck says $health: $(docker logs "$container" 2>&1 | tail -5)"
    token=$(printf 'e%d' "$n"; printf 'ab%.0s' $(seq 31); printf '0%d' "$n")
    python3 - "$compose_port" "$token" <<'PY' || fail "$relay's env file under compose: a push was not answered 201: $(docker logs "$container" 2>&1 | tail -3)"
import base64, http.client, os, sys
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
for path in [f"/push/{sys.argv[2]}/compose", f"/relay-to/production/{sys.argv[2]}"]:
    c.request("POST", path, body=os.urandom(200), headers={"Content-Encoding": "aesgcm",
              "Encryption": "salt=" + b64(os.urandom(16)), "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64))})
    r = c.getresponse(); body = r.read()
    print(f"  POST {path.split('/')[1]} -> {r.status}" + ("" if r.status == 201 else f" {body[:160]!r}"))
    if r.status != 201: sys.exit(1)
PY
    for _ in $(seq 50); do [ "$(grep -cE "^200 .*$token.*${topics[$relay]}" "$work/compose-mock.out")" -ge 2 ] && break; sleep 0.1; done
    [ "$(grep -cE "^200 .*$token.*${topics[$relay]}" "$work/compose-mock.out")" -ge 2 ] \
        || fail "$relay's env file: the emulator has no 2 pushes for ${topics[$relay]}: $(tail -3 "$work/compose-mock.out")"
    # compose's named volume `held` at /var/lib/apns-relay (the root filesystem is read-only):
    # the relay's uid writes to it.
    mount=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/var/lib/apns-relay"}}{{.Type}} {{.Name}}{{end}}{{end}}' "$container")
    [ "$mount" = "volume ${compose_project//-/}_held" ] || [ "$mount" = "volume ${compose_project}_held" ] \
        || fail "$relay's env file under compose: /var/lib/apns-relay is not the named volume held: '$mount'"
    written=$(docker exec "$container" sh -c 'touch /var/lib/apns-relay/probe && id -u' 2>&1) && [ "$written" = 10001 ] \
        || fail "$relay's env file under compose: the relay's uid cannot write to the volume held: $written"
    names=$(docker logs "$container" 2>&1 | grep -o 'read the variable names of [^"]*' | head -1 || true)
    ok "$relay's env file through deploy/docker-compose.yml unchanged: healthy, both routes 201 at ${topics[$relay]}, uid 10001 writes to the volume held${names:+ ($names)}"
    compose_down
done
kill -TERM "$compose_mock_pid" 2>/dev/null || true

# ---- compose's nginx finds a recreated relay ---------------------------------------------------
# The whole compose file on its own network: nginx in front, the relay behind it. The relay is
# then recreated at another address (the old one taken by a placeholder container, as a busy
# network would), as `docker compose up -d --build` does: nginx must find it again by name.
# No registry, so nginx's image is a stand-in made here from Debian 12's nginx (1.22; the
# directories its build expects made writable, as the official image's are). The relay needs no
# Apple here: /health answers whatever APNs does.
say "the whole compose file: nginx in front of a relay that is recreated at a new address"
mkdir -p "$work/nginx-image"
cat >"$work/nginx-image/Dockerfile" <<'DOCKERFILE'
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nginx-light \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /var/lib/nginx/body /var/lib/nginx/fastcgi /var/lib/nginx/proxy /var/lib/nginx/scgi /var/lib/nginx/uwsgi \
 && chown nobody /var/lib/nginx/*
CMD ["nginx", "-g", "daemon off;"]
DOCKERFILE
docker build --network host -q -t apns-relay-ci-nginx "$work/nginx-image" >"$work/nginx-image.log" 2>&1 \
    || fail "could not make the stand-in nginx image: $(tail -5 "$work/nginx-image.log")"
cp -r deploy/nginx "$compose_dir/"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -addext subjectAltName=DNS:localhost \
    -days 1 -keyout "$compose_dir/certs/privkey.pem" -out "$compose_dir/certs/fullchain.pem" 2>/dev/null
{ echo "APNS_KEY_ID=$c_kid"; echo "APNS_AUTH_KEY=$one_line_key"; echo "APPLE_TEAM_ID=$c_team"; echo "TOPIC=com.example.app"; } \
    >"$compose_dir/apns-relay.env"
cat >"$compose_dir/network.override.yml" <<YML
services:
  nginx:
    image: apns-relay-ci-nginx
  relay:
    ulimits:
      nofile:
        soft: $nofile
        hard: $nofile
YML
https_port=$(free_port)
compose_env=(HTTPS_PORT="127.0.0.1:$https_port")
compose_project=apns-relay-ci-$$-net
compose_override=network.override.yml
compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
    -f "$compose_dir/$compose_override" up -d --no-build >"$work/compose-up.log" 2>&1 \
    || fail "docker-compose up (relay and nginx) failed: $(tail -5 "$work/compose-up.log")"
through_nginx() { # PATH: the status nginx answers for it over HTTPS
    curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$compose_dir/certs/fullchain.pem" \
        --resolve "localhost:$https_port:127.0.0.1" "https://localhost:$https_port$1" || true
}
for _ in $(seq 60); do [ "$(through_nginx /health)" = 200 ] && break; sleep 0.5; done
[ "$(through_nginx /health)" = 200 ] || fail "GET /health through compose's nginx: $(through_nginx /health)"
[ "$(through_nginx /metrics)" = 404 ] || fail "GET /metrics through compose's nginx is not 404"
ok "compose's nginx passes /health to the relay (200) and keeps /metrics in (404)"
ip_of() { docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$1"; }
relay_container=$(compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
    -f "$compose_dir/$compose_override" ps -q relay)
old_ip=$(ip_of "$relay_container")
docker exec "$relay_container" sh -c 'echo kept >/var/lib/apns-relay/kept' || fail "could not write to the relay's volume held"
compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
    -f "$compose_dir/$compose_override" rm -sf relay >/dev/null 2>&1
for _ in $(seq 8); do
    placeholders+=("$(docker run -d --rm --network "${compose_project}_default" "debian:$DEBIAN_RELEASE-slim" sleep 300)")
    [ "$(ip_of "${placeholders[-1]}")" = "$old_ip" ] && break
done
[ "$(ip_of "${placeholders[-1]}")" = "$old_ip" ] || fail "no placeholder took the relay's old address $old_ip"
compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
    -f "$compose_dir/$compose_override" up -d --no-build --no-deps relay >"$work/compose-up.log" 2>&1 \
    || fail "recreating the relay failed: $(tail -5 "$work/compose-up.log")"
relay_container=$(compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.yml" \
    -f "$compose_dir/$compose_override" ps -q relay)
new_ip=$(ip_of "$relay_container")
t0=$SECONDS
for _ in $(seq 60); do [ "$(through_nginx /health)" = 200 ] && break; sleep 0.5; done
[ "$(through_nginx /health)" = 200 ] \
    || fail "after the relay was recreated ($old_ip -> $new_ip), compose's nginx answers $(through_nginx /health), not the relay's 200"
ok "the relay recreated at a new address ($old_ip -> $new_ip, the old one taken): nginx found it by name, 200 within $((SECONDS - t0)) s"
[ "$(docker exec "$relay_container" cat /var/lib/apns-relay/kept 2>&1)" = kept ] \
    || fail "the recreated relay's /var/lib/apns-relay lost what the old one wrote (not compose's named volume?)"
ok "the recreated relay finds what the old one wrote to /var/lib/apns-relay (compose's named volume held)"
compose_down

# ---- Redis: relays sharing their held pushes (STORE_URL) -------------------------------------
# Given both STORE_URL and STORE_PATH, the relay refuses to start and names STORE_URL (an env file
# moved over from the embedded store). Then deploy/redis's image (Debian 12's redis-server) on 127.0.0.1 with its volume,
# and two relays from the project's image sharing it: Apple (the emulator) goes away, pushes to
# both relays are answered 201 held; Redis is killed (SIGKILL: its AOF, fsynced at every write,
# must keep every push it acknowledged) and started again on its volume; the first relay is
# stopped; Apple comes back, and the second relay delivers every push, the first's included,
# each once. Then deploy/docker-compose.redis.yml whole: Redis, two relay replicas, nginx.
say "the image's relay and STORE_URL"
probe=apns-relay-ci-probe-$$
# Settings that start a relay (the first emulator's key), and both stores.
cat >"$work/probe.env" <<ENV
APNS_AUTH_KEY_FILE=/ci/key.p8
APNS_KEY_ID=$kid
APPLE_TEAM_ID=$team
TOPIC=com.example.app
APNS_HOST=localhost:$mock_port
APNS_CA_FILE=/ci/ca.pem
BIND_ADDRESS=127.0.0.1
PORT=$(free_port)
STORE_URL=redis://127.0.0.1:1/0
STORE_PATH=/var/lib/apns-relay/probe.sqlite
ENV
docker run -d --name "$probe" --network host --env-file "$work/probe.env" -v "$work:/ci:ro" "$IMAGE" >/dev/null \
    || fail "docker run (the STORE_URL probe) failed"
probe_state=
for _ in $(seq 150); do
    probe_logs=$(docker logs "$probe" 2>&1)
    if [ "$(docker inspect -f '{{.State.Running}}' "$probe")" = false ]; then probe_state=stopped; break; fi
    if grep -q 'apns-relay listening' <<<"$probe_logs"; then probe_state=listening; break; fi
    sleep 0.1
done
probe_logs=$(docker logs "$probe" 2>&1)
docker rm -fv "$probe" >/dev/null
[ "$probe_state" = stopped ] && grep -q STORE_URL <<<"$probe_logs" \
    || fail "the image's relay, given STORE_URL and STORE_PATH both, did not refuse naming STORE_URL ($probe_state): $(tail -3 <<<"$probe_logs")"
ok "the image's relay refuses STORE_URL beside STORE_PATH, naming it ($(grep -m1 -o '[^"]*STORE_URL[^"]*' <<<"$probe_logs" | cut -c1-120))"

say "docker build deploy/redis"
docker build --network host -t apns-relay-redis:ci deploy/redis >"$work/redis-build.log" 2>&1 \
    || fail "building deploy/redis failed: $(tail -20 "$work/redis-build.log")"
ok "deploy/redis builds (Debian's redis-server $(docker run --rm --entrypoint redis-server apns-relay-redis:ci --version | grep -o 'v=[0-9.]*'))"
redis_port=$(free_port)
redis_volume=apns-relay-ci-redis-$$
redis_container=apns-relay-ci-redis-$$
start_redis() {
    docker run -d --name "$redis_container" --network host --read-only --cap-drop ALL \
        -v "$redis_volume:/data" apns-relay-redis:ci --port "$redis_port" --bind 127.0.0.1 >/dev/null \
        || fail "docker run apns-relay-redis:ci failed"
    for _ in $(seq 100); do
        [ "$(docker exec "$redis_container" redis-cli -p "$redis_port" ping 2>/dev/null)" = PONG ] && return 0
        sleep 0.2
    done
    fail "Redis did not answer PING: $(docker logs "$redis_container" 2>&1 | tail -5)"
}
start_redis
redis_uid=$(awk '/^Uid:/ {print $2}' "/proc/$(docker inspect -f '{{.State.Pid}}' "$redis_container")/status")
settings=$(for s in appendonly appendfsync maxmemory-policy; do docker exec "$redis_container" redis-cli -p "$redis_port" config get "$s" | tail -1; done | tr '\n' ' ')
[ "$redis_uid" = 10002 ] && [ "$settings" = "yes always noeviction " ] \
    || fail "Redis runs as uid $redis_uid with appendonly/appendfsync/maxmemory-policy: $settings"
ok "Redis runs as uid 10002, read-only root, its AOF on a named volume: appendonly yes, appendfsync always, noeviction"

mkdir -p "$work/redis-mock"
"$mock_bin" --port 0 --log --ca-out "$work/redis-mock/ca.pem" --token-update-interval 0 --topic com.example.app \
    >"$work/redis-mock/mock.out" 2>&1 &
redis_mock_pid=$!
emulator_wait "$work/redis-mock"
install -m 0644 "$key_file" "$work/redis-key.p8"
chmod 0644 "$work/redis-mock/ca.pem"
cat >"$work/redis-relay.env" <<ENV
APNS_AUTH_KEY_FILE=/ci/redis-key.p8
APNS_KEY_ID=$kid
APPLE_TEAM_ID=$team
TOPIC=com.example.app
APNS_HOST=localhost:$mock_port
APNS_SANDBOX_HOST=localhost:$mock_port
APNS_CA_FILE=/ci/redis-mock/ca.pem
BIND_ADDRESS=127.0.0.1
PUSH_TIMEOUT_MS=2000
STORE_URL=redis://127.0.0.1:$redis_port/0
ENV
relay_ports=("$(free_port)" "$(free_port)")
redis_relays=()
for i in 0 1; do
    redis_relays+=("apns-relay-ci-redis-relay-$$-$i")
    docker run -d --name "${redis_relays[$i]}" --network host --env-file "$work/redis-relay.env" -e PORT="${relay_ports[$i]}" \
        -v "$work:/ci:ro" "$IMAGE" >/dev/null || fail "docker run (relay $i with STORE_URL) failed"
done
python3 - "${relay_ports[@]}" <<'PY' || fail "the relays on Redis did not come up: $(docker logs "${redis_relays[0]}" 2>&1 | tail -3)"
import json, sys, time, urllib.request
for port in sys.argv[1:]:
    for _ in range(100):
        try:
            health = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2))
            if health.get("store_ok") is True:
                break
        except Exception:
            pass
        time.sleep(0.2)
    else:
        sys.exit(f"relay on {port}: no /health with store_ok true")
    print(f"  relay on {port}: /health store={health.get('store')!r} store_ok={health.get('store_ok')}")
PY
ok "two relays from the image on one Redis: /health says store_ok on both"

say "Apple away: 20 pushes to the two relays, held in Redis"
kill -USR1 "$redis_mock_pid"
for _ in $(seq 50); do grep -q 'outage away begins' "$work/redis-mock/mock.out" && break; sleep 0.1; done
grep -q 'outage away begins' "$work/redis-mock/mock.out" || fail "the emulator did not go away"
python3 - "${relay_ports[@]}" <<'PY' || fail "pushes while Apple was away were not all held"
import base64, http.client, os, sys
b64 = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
answers = []
for n in range(20):
    port = int(sys.argv[1 + n % 2])
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    c.request("POST", f"/push/e{n:02d}{'ab' * 30}0/redis-{n}", body=os.urandom(200),
              headers={"Content-Encoding": "aesgcm", "Encryption": "salt=" + b64(os.urandom(16)),
                       "Crypto-Key": "dh=" + b64(b"\x04" + os.urandom(64)), "TTL": "600"})
    r = c.getresponse(); r.read(); c.close()
    answers.append((r.status, r.getheader("x-relay-held")))
print(f"  answers: {sorted(set(answers))}")
sys.exit(0 if answers == [(201, "true")] * 20 else 1)
PY
ok "Apple away: 20 pushes, 10 to each relay, answered 201 X-Relay-Held: true"

say "Redis killed (SIGKILL) and started again on its volume"
docker kill --signal KILL "$redis_container" >/dev/null
docker rm -f "$redis_container" >/dev/null
start_redis
docker stop -t 20 "${redis_relays[0]}" >/dev/null
ok "Redis back after SIGKILL; the first relay stopped (its 10 pushes are in Redis, not in it)"

say "Apple back: the second relay delivers all 20"
kill -USR2 "$redis_mock_pid"
delivered=0
for _ in $(seq 240); do
    delivered=$(grep -cE "^200 .*e[0-9]{2}(ab){30}0" "$work/redis-mock/mock.out" || true)
    [ "$delivered" -ge 20 ] && break
    sleep 0.5
done
sleep 2
distinct=$(grep -oE "^200 .*e[0-9]{2}(ab){30}0" "$work/redis-mock/mock.out" | grep -oE "e[0-9]{2}(ab){30}0" | sort -u | wc -l)
delivered=$(grep -cE "^200 .*e[0-9]{2}(ab){30}0" "$work/redis-mock/mock.out" || true)
[ "$distinct" = 20 ] && [ "$delivered" = 20 ] \
    || fail "after Apple came back the emulator accepted $delivered pushes for $distinct of the 20 devices: $(docker logs "${redis_relays[1]}" 2>&1 | tail -5)"
ok "every held push delivered once by the relay left (20 of 20, the stopped relay's 10 included), after Redis was killed"
metrics=$(curl -fsS "http://127.0.0.1:${relay_ports[1]}/metrics")
for series in '^relay_store_up 1(\.0)?$' '^relay_store_call_seconds_(bucket|count)' '^relay_store_errors_total\{kind="unreachable"\}'; do
    grep -qE "$series" <<<"$metrics" || fail "the second relay's /metrics has no $series: $(grep '^relay_store' <<<"$metrics" | head -5)"
done
ok "the relay exports relay_store_up 1, relay_store_call_seconds and relay_store_errors_total{kind} (the dashboard's and the alert's series)"
docker rm -fv "${redis_relays[@]}" >/dev/null
redis_relays=()
docker rm -fv "$redis_container" >/dev/null
docker volume rm "$redis_volume" >/dev/null
redis_container=
kill -TERM "$redis_mock_pid" 2>/dev/null || true
redis_mock_pid=

# The shipped Redis compose file, whole, on its own network: Redis, two relay replicas (no
# Apple here: /health answers whatever APNs does), nginx in front (the stand-in image).
say "deploy/docker-compose.redis.yml whole: Redis, two relay replicas, nginx"
cp deploy/docker-compose.redis.yml "$compose_dir/"
cp -r deploy/redis "$compose_dir/"
docker tag apns-relay-redis:ci apns-relay-redis:latest
compose_env=(HTTPS_PORT="127.0.0.1:$https_port")
compose_project=apns-relay-ci-$$-redis
compose_override=network.override.yml
compose_file=docker-compose.redis.yml
compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.redis.yml" \
    -f "$compose_dir/$compose_override" up -d --no-build --scale relay=2 >"$work/compose-up.log" 2>&1 \
    || fail "docker-compose up (docker-compose.redis.yml, 2 relays) failed: $(tail -5 "$work/compose-up.log")"
for _ in $(seq 90); do [ "$(through_nginx /health)" = 200 ] && break; sleep 1; done
[ "$(through_nginx /health)" = 200 ] || fail "GET /health through docker-compose.redis.yml's nginx: $(through_nginx /health)"
replicas=$(compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.redis.yml" \
    -f "$compose_dir/$compose_override" ps -q relay | wc -l)
[ "$replicas" = 2 ] || fail "docker-compose.redis.yml runs $replicas relay replicas, not 2"
for c in $(compose "${compose_env[@]}" docker-compose -p "$compose_project" -f "$compose_dir/docker-compose.redis.yml" \
        -f "$compose_dir/$compose_override" ps -q relay); do
    # No curl in the relay's image: bash's /dev/tcp asks the replica itself.
    health=$(docker exec "$c" bash -c 'exec 3<>/dev/tcp/127.0.0.1/3000; printf "GET /health HTTP/1.0\r\nHost: x\r\n\r\n" >&3; timeout 5 cat <&3') \
        || fail "replica $c: no /health"
    grep -q '"store_ok": *true' <<<"$health" || fail "replica $c is not on Redis: $health"
    mount=$(docker inspect -f '{{range .Mounts}}{{if eq .Destination "/var/lib/apns-relay"}}{{.Type}} {{.Name}}{{end}}{{end}}' "$c")
    [[ "$mount" != *_held ]] || fail "replica $c mounts the held volume: $mount"
done
ok "deploy/docker-compose.redis.yml: 2 relay replicas on its Redis (store_ok on each), nginx in front answers /health 200"
compose_down

say "done"
echo "docker-test: $passed passed, 0 failed"
