# apns-relay — every target installs what it needs on a fresh Debian machine (as root).
SHELL := /bin/bash
SWIFT ?= swift
APT_PACKAGES := libnghttp2-dev libssl-dev pkg-config ca-certificates

.PHONY: deps test run mock bench fuzz build release clean deploy-check

# Installs the C libraries the package links against when any is missing.
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=""; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test

# The relay's main job: the demo (relay + embedded APNs emulator) until a real Apple key is configured.
run: deps
	$(SWIFT) run apns-relay demo

# The APNs emulator on its own.
mock: deps
	$(SWIFT) run apns-mock

# Validates the deployment files (Kubernetes schemas offline, compose, nginx, systemd, Dockerfile,
# env example vs. the variables the relay reads); installs its Python tools into .build/.
deploy-check:
	bash scripts/check-deploy.sh

clean:
	rm -rf .build
