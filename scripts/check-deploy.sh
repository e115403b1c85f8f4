#!/usr/bin/env bash
# Checks the deployment files: Kubernetes manifests against their schemas (offline; both
# variants, deploy/kubernetes and deploy/kubernetes/redis), both compose files' structure and
# Debian's docker-compose reading them, deploy/redis's configuration in a real Redis, nginx's
# config, the systemd unit, the Dockerfiles, and that the env example documents every variable
# the relay reads. Exits non-zero on any failure.
#
# Installs what it needs: python3-venv from Debian when missing, then kubernetes-validate
# (which ships the Kubernetes JSON schemas, so validation needs no network), PyYAML and
# crossplane (nginx's config parser) from PyPI into .build/deploy-check-venv; Debian's
# prometheus (promtool), docker-compose and redis-tools.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.build/deploy-check-venv
PY_PACKAGES=(kubernetes-validate==1.37.0 PyYAML==6.0.* crossplane==0.5.*)

source scripts/debian.sh

if ! command -v python3 >/dev/null || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    echo "installing python3 and python3-venv"
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3 python3-venv
fi

if ! "$VENV/bin/python" -c 'import kubernetes_validate, yaml, crossplane' 2>/dev/null; then
    echo "creating $VENV"
    rm -rf "$VENV"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "${PY_PACKAGES[@]}"
fi

# promtool (Debian's prometheus) checks and unit-tests deploy/prometheus/alerts.yml; Debian's
# docker-compose (1.29, no engine needed) reads both compose files; Debian's redis-tools carries
# the Redis server's binary (as redis-check-rdb: the redis-server package only adds the name and
# a service that would start), run on 127.0.0.1 with deploy/redis/redis.conf.
missing=()
command -v promtool >/dev/null || missing+=(prometheus)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v redis-cli >/dev/null && command -v redis-check-rdb >/dev/null || missing+=(redis-tools)
install_packages "${missing[@]}"

# Optional: systemd-analyze makes the unit check stronger; the script falls back to a
# syntax check without it.
if ! command -v systemd-analyze >/dev/null; then
    echo "note: systemd-analyze not installed (apt-get install systemd); the unit gets a syntax check only"
fi

PATH="$PWD/$VENV/bin:$PATH" "$VENV/bin/python" scripts/check_deploy.py
