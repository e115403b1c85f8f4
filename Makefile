# apns-relay — every target installs what it needs on a fresh Debian machine (as root).
SHELL := /bin/bash
SWIFT ?= swift
# libssl-dev, libnghttp2-dev, libsqlite3-dev, libhiredis-dev, libstdc++-12-dev and libc6-dev also hold the static
# archives the shipped binary links (it is one static PIE: make ship).
APT_PACKAGES := libnghttp2-dev libssl-dev libsqlite3-dev libhiredis-dev redis-server libstdc++-12-dev libc6-dev pkg-config ca-certificates openssl curl python3

.PHONY: deps ship test run mock bench soak slow-bodies fuzz build release clean deploy-check image-smoke nginx-test docker-test prometheus-test

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

# The binary that ships, built as the Dockerfile builds it (scripts/ship-build.sh holds the flags:
# -c release, one static PIE, relocations packed, the symbol table kept so a crash's backtrace
# names its functions), left at .build/ship/apns-relay.
ship: deps
	SWIFT=$(SWIFT) bash scripts/ship-build.sh apns-relay

# The suites that run the product as a user does, spawning the apns-relay executable or building
# a package against the APNs library (the relay over sockets against the emulator, serve and
# SIGHUP, the other relays' env files, HTTPS and APPS_FILE, two relays sharing one provider token,
# the demo, check, send, send-many, clean-token and token, docs/LIBRARY.md's library block), and those that judge the binary itself (no Foundation in it; shipped: its size, an idle relay's memory, a
# crash's backtrace).
E2E_SUITES := ^(RelayTests\.(CommandLineTests|DropInServeTests|HoldServeTests|HoldRedisServeTests|FleetTokenServeTests|CrashBacktraceTests|FootprintTests|BinaryLinkTests)|APNsProductTests\.(CLITests|ReadmeExampleTests))/

# Two passes. First every suite against the debug build: all but SERIAL_SUITES in parallel, then
# those one after another. They need Swift's task pool (2 threads on a 2-core machine) to
# themselves: the HTTP server's clients read sockets blocking on it, and DeadlineOrderTests needs
# its pushes on the wire within a second of being sent (in the parallel pass, beside 750 tests,
# a task there once waited long enough for a push's 1 s deadline to pass before it was written).
# On 2 cores the split run took 40 s where one after another took 74 s.
# Then E2E_SUITES again against the binary users run, the one make ship leaves in .build/ship (-O,
# static PIE; only apns-relay: no suite spawns apns-mock), with docs/LIBRARY.md's block
# built -c release: an -O build can break where the debug build works (Swift 6.3 miscompiled
# sendMany's child tasks in -O builds only; the debug pass passed). APNS_RELAY_BIN_DIR
# and APNS_PRODUCT_CONFIGURATION point the suites there (Tests/BuiltProducts). From a clean
# .build on 2 cores the first pass took about 5 min (build 4, tests 1), the second 3 (build 2, tests 1).
SERIAL_SUITES := ^(HTTPServerTests\.|APNsTests\.DeadlineOrderTests/)
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build --parallel --skip '$(SERIAL_SUITES)'
	$(SWIFT) test --skip-build --no-parallel --filter '$(SERIAL_SUITES)'
	$(MAKE) ship
	APNS_RELAY_BIN_DIR="$$PWD/.build/ship" APNS_PRODUCT_CONFIGURATION=release \
		$(SWIFT) test --skip-build --no-parallel --filter '$(E2E_SUITES)'

# The relay's main job: the demo (relay + embedded APNs emulator) until a real Apple key is configured.
run: deps
	$(SWIFT) run apns-relay demo

# The APNs emulator on its own.
mock: deps
	$(SWIFT) run apns-mock

# Benchmark (make ship's binary, and relay-bench built with the same flags into .build/ship; loopback
# only, bounded): Mastodon-shaped pushes through `apns-relay serve` to the in-process APNs emulator
# with LOG_LEVEL=info and then warning, then the same load straight to the emulator over HTTP/2 as
# the ceiling. BENCH_SECONDS (20) of load per phase, BENCH_CONNECTIONS (64), BENCH_POOL (2),
# BENCH_EVENT_LOOPS (the relay's EVENT_LOOPS: with 1 and with 4 the table's "pushes crossing
# loops" row shows that a pool of at least one connection per loop keeps every push on its loop),
# BENCH_LOG_LEVELS (info,warning). RSS is reported whole (VmRSS, VmHWM) and split: anonymous
# pages (what the relay allocates) apart from file pages (the binary's read-only pages, shared
# with every process running it). Every relay runs with STORE_PATH in the bench's temporary
# directory: holding is on, and with Apple up the store is never opened. Then the hold scenario:
# the emulator stopped (connects refused), the same clients for BENCH_SECONDS + 20 s, each push to
# a device of its own: held pushes/s (201 X-Relay-Held), overall and in the seconds answered at
# once (the store's rate; bound 10,000/s), then the emulator back: the drain (held pushes
# delivered/s), every held push delivered once. BENCH_HOLD_MILLION=1 then holds a million pushes
# (about 100 s) and gives RSS before and after (flat: they are on disk). BENCH_SKIP_HOLD=1 leaves
# the scenario out. BENCH_STORE=redis runs the scenario through a redis-server the bench starts
# (append-only, appendfsync always; STORE_URL) instead of the SQLite file.
bench: ship
	SWIFT=$(SWIFT) bash scripts/ship-build.sh relay-bench
	RELAY_BINARY="$$PWD/.build/ship/apns-relay" .build/ship/relay-bench
	@echo "== the loops: pushes that cross to another loop's connection, with 1 and 4 loops (5 s each, LOG_LEVEL=warning)"
	@bin="$$PWD/.build/ship"; for run in "1 " "4 " "4 2"; do set -- $$run; \
		echo "-- EVENT_LOOPS=$$1, CONNECTION_POOL_SIZE=$${2:-default}"; \
		env $${2:+BENCH_POOL=$$2} BENCH_EVENT_LOOPS=$$1 BENCH_SECONDS=5 BENCH_SKIP_CEILING=1 BENCH_LOG_LEVELS=warning \
			RELAY_BINARY="$$bin/apns-relay" "$$bin/relay-bench" | grep -E '^(pushes/s|relay CPU per push|pushes crossing loops)'; done

# Soak and chaos run (release build, loopback only, bounded): `apns-relay serve` against the
# in-process APNs emulator for SOAK_SECONDS (300) of mixed pushes (normal, dead, slow, never
# answered) while GOAWAY bursts and storms, an emulator restart, MAX_CONCURRENT_STREAMS changes,
# floods up to the connection cap and SIGHUP key rotations happen; one table, exit 1 unless every
# criterion holds (no 201 lost, the status table kept, /health always up, reconnects within the
# back-off, RSS and fds back). SOAK_RATE (200) sets the normal clients' pushes per second. Before
# the chaos, Apple is away (the emulator stopped) for min(60 s, SOAK_SECONDS / 3), added to the
# run (SOAK_SECONDS=60: 80 s): the relay holds in STORE_PATH (the run's temporary directory), every
# push sent then is answered 201 held, and once Apple is back every 201 of the run must reach the
# emulator, none twice but where the emulator's answer to it was lost (its connection or stream
# closed while the answer was delayed: the relay, like any client, cannot know Apple has it).
# A failed run leaves the relay's log in .build/relay-soak-relay.log.
soak: deps
	$(SWIFT) build -c release --product apns-relay
	$(SWIFT) build -c release --product relay-soak
	.build/release/relay-soak

# Memory under slow request bodies (release build, loopback only, bounded): SLOW_CONNECTIONS (10000)
# clients each hold a 64 KiB body 65,000 bytes in, then trickle a byte every 5 s, for
# SLOW_HOLD_SECONDS (30), while a valid push goes every 250 ms; then RSS for SLOW_AFTER_SECONDS (30)
# after they leave. Fails when a push is not 201 or peak RSS is over SLOW_MAX_PEAK_MIB (128).
slow-bodies: deps
	$(SWIFT) build -c release --product apns-relay
	$(SWIFT) build -c release --product relay-bench
	.build/release/relay-bench slow-bodies

# Fuzzes the HTTP/1.1 parser for FUZZ_SECONDS (default 30): libFuzzer (swiftc -sanitize=fuzzer,address
# on the parser sources) where the toolchain has it, otherwise the seeded random test for that long;
# with FUZZ_STRICT set (CI) a libFuzzer build that fails is a failure, not a fallback.
FUZZ_SECONDS ?= 30
FUZZ_SOURCES := $(addprefix Sources/HTTPServer/,HTTPHeaders.swift HTTPRequest.swift HTTPResponse.swift HTTPParserLimits.swift ASCIIBytes.swift HTTPParser.swift HTTPParserBuffer.swift HTTPHeadParsing.swift HTTPSerializer.swift) Sources/Basics/JSONString.swift Sources/Basics/Hex.swift Sources/Basics/StringBytes.swift Sources/Basics/DecimalText.swift Sources/Basics/CodedError.swift \
	Tests/HTTPServerTests/ParserHarness.swift Tests/HTTPServerTests/LibFuzzerEntry.swift
fuzz:
	@mkdir -p .build/fuzz/corpus
	@if $(SWIFT)c -sanitize=fuzzer,address -parse-as-library -package-name apns_relay -O -D HTTPPARSER_FUZZ $(FUZZ_SOURCES) \
		-o .build/fuzz/http1parser >.build/fuzz/build.log 2>&1; then \
		printf '\x00GET /push/ab?sandbox=true HTTP/1.1\r\nHost: r\r\n\r\n' >.build/fuzz/corpus/seed-get; \
		printf '\x01POST /p HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello' >.build/fuzz/corpus/seed-post; \
		printf '\x02POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nT: x\r\n\r\n' >.build/fuzz/corpus/seed-chunked; \
		.build/fuzz/http1parser -max_total_time=$(FUZZ_SECONDS) -max_len=2048 -print_final_stats=1 .build/fuzz/corpus; \
	else \
		if [ -n "$(FUZZ_STRICT)" ]; then cat .build/fuzz/build.log; echo "libFuzzer build failed (FUZZ_STRICT is set)"; exit 1; fi; \
		echo "libFuzzer unavailable (see .build/fuzz/build.log): running the seeded random test for $(FUZZ_SECONDS) s"; \
		$(SWIFT) build --build-tests && HTTP_FUZZ_SECONDS=$(FUZZ_SECONDS) $(SWIFT) test --skip-build --filter HTTPParserFuzzTests/seededRandom; \
	fi

# Validates the deployment files (Kubernetes schemas offline, both variants; both compose files,
# also through Debian's docker-compose; deploy/redis/redis.conf in a real Debian Redis; nginx,
# systemd, the Dockerfiles, env example vs. the variables the relay reads); installs its Python
# tools into .build/.
deploy-check:
	bash scripts/check-deploy.sh

# What can be checked of the container image without a Docker engine: that make ship's binary is
# one static PIE (no shared library to install), its size, that a crash names its functions, its
# OpenSSL's trust store, and a real start against the emulator.
image-smoke: deps
	bash scripts/image-smoke.sh

# Debian's nginx and Caddy (installed when missing) in front of the relay and the emulator on 127.0.0.1:
# deploy/nginx/nginx.conf, README's nginx block and README's Caddy block, each loaded and pushed through to
# every push route (the default app, /relay-to, an APPS_FILE app): none may answer 404.
nginx-test: deps
	bash scripts/nginx-test.sh

# Debian's Prometheus (installed when missing) with deploy/prometheus/prometheus-static.yml scraping
# the relay under load against the emulator on 127.0.0.1, with deploy/prometheus/alerts.yml loaded:
# every panel of deploy/grafana/apns-relay.json returns data, the 502 (not for DeviceTokenNotForTopic)
# and reconnect alerts fire, the others stay quiet, and ApnsRelayDown's expression holds once the
# relay is stopped and for a job with no target (~45 s, bounded). The relay holds in Debian's Redis
# (deploy/redis/redis.conf, STORE_URL), and the store panels and ApnsRelayStoreUnreachable (Redis
# killed) are checked too.
prometheus-test: deps
	bash scripts/prometheus-test.sh

# Builds the Dockerfile with a real Docker engine (Debian's docker.io, started here when none runs)
# and its default classic builder, from base images made locally (debootstrap + this machine's
# Swift toolchain, cached in Docker's image store), then runs the image: demo --once, serve +
# HEALTHCHECK, uid, SIGTERM, toot-relay's env file over HTTPS, a crash's backtrace; then
# deploy/docker-compose.yml (Debian's docker-compose) with the three relays' env files, and whole
# with its relay recreated behind its nginx; deploy/redis with two relays holding through an
# outage and a killed Redis, and deploy/docker-compose.redis.yml with two replicas.
docker-test: deps
	bash scripts/docker-test.sh

clean:
	rm -rf .build
