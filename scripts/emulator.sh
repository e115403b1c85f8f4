# Sourced by the scripts that run apns-relay against the APNs emulator (apns-mock) on loopback:
# image-smoke.sh, nginx-test.sh, docker-test.sh. Each starts the emulator itself
# (with its own flags and PID bookkeeping), writing its output to WORK/mock.out, and defines `fail`.

# A free TCP port on 127.0.0.1.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# emulator_wait WORK: waits up to 10 s for the emulator to say it listens, then sets mock_port,
# key_file (the private key it generated), team and kid from the line it printed.
emulator_wait() {
    local out="$1/mock.out" banner
    for _ in $(seq 100); do grep -q 'listening on' "$out" && break; sleep 0.1; done
    banner=$(grep 'listening on' "$out") || fail "the emulator did not start: $(cat "$out")"
    mock_port=$(sed -E 's/.*listening on [^ ]*:([0-9]+) .*/\1/' <<<"$banner")
    key_file=$(sed -E 's/.* private-key=([^ ]+).*/\1/' <<<"$banner")
    team=$(sed -E 's/.* team=([^ ]+).*/\1/' <<<"$banner")
    kid=$(sed -E 's/.* key=([^ ]+).*/\1/' <<<"$banner")
}
