#!/usr/bin/env python3
"""Checks the deployment files against each other and against the relay's source.

Run by scripts/check-deploy.sh inside a venv that has kubernetes-validate, PyYAML and
crossplane. Prints one line per check and exits non-zero if any failed.
"""
import glob
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import crossplane
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIABLE_SWIFT = os.path.join(ROOT, "Sources/Relay/Variable.swift")
ENV_EXAMPLE = os.path.join(ROOT, "config/apns-relay.env.example")
COMPOSE = os.path.join(ROOT, "deploy/docker-compose.yml")
COMPOSE_REDIS = os.path.join(ROOT, "deploy/docker-compose.redis.yml")
REDIS_DIR = os.path.join(ROOT, "deploy/redis")
REDIS_CONF = os.path.join(REDIS_DIR, "redis.conf")
NGINX = os.path.join(ROOT, "deploy/nginx/nginx.conf")
K8S_DIR = os.path.join(ROOT, "deploy/kubernetes")
K8S_REDIS_DIR = os.path.join(K8S_DIR, "redis")
UNIT = os.path.join(ROOT, "deploy/systemd/apns-relay.service")
DOCKERFILE = os.path.join(ROOT, "Dockerfile")
PROMETHEUS_DIR = os.path.join(ROOT, "deploy/prometheus")
# Where every deployment keeps the pushes held while Apple is out of reach: the directory of
# STORE_PATH's default. Each keeps it across restarts (a volume, a StateDirectory), owned by the
# relay's user (uid 10001).
STATE_DIR = "/var/lib/apns-relay"
# Kubernetes versions to validate against: the oldest still commonly run and the newest shipped.
K8S_VERSIONS = ["1.30", "1.37"]
# The relay's default push deadline; every timeout in front of it must be longer.
PUSH_DEADLINE_S = 8

failures = []


def check(ok, what, detail="", quiet=False):
    """Records one check; `quiet` ones (one per line of a file) print only when they fail."""
    if ok:
        if not quiet:
            print(f"ok    {what}")
    else:
        print(f"FAIL  {what}" + (f": {detail}" if detail else ""))
        failures.append(what)
    return ok


def rel(path):
    return os.path.relpath(path, ROOT)


# --- The variables the relay reads ---------------------------------------------------------

# Quoted ALL_CAPS_WITH_UNDERSCORE strings in Sources/Relay that are not variable names, so the
# stray check skips them. Empty: every such string there names a variable of the enums.
NOT_VARIABLES = set()


def relay_variables():
    """The name constants of `enum Variable` (the relay's own names) and `enum ForeignVariable`
    (toot-relay's and webpush-apn-relay's, read as they are) in Variable.swift; `static let x:
    [String]` lists and the default file names are not constants of that form."""
    source = open(VARIABLE_SWIFT, encoding="utf-8").read()
    names = []
    for enum in ["Variable", "ForeignVariable"]:
        match = re.search(rf"enum {enum} \{{(.*?)\n\}}", source, re.S)
        if not check(match is not None, f"{rel(VARIABLE_SWIFT)} declares enum {enum}"):
            continue
        found = re.findall(r'static let \w+ = "([A-Z][A-Z0-9_]*)"', match.group(1))
        check(bool(found), f"found the names of enum {enum} ({len(found)})", "none: the pattern broke")
        names += found
    check(len(names) == len(set(names)), "no variable name is declared twice", ", ".join(sorted({n for n in names if names.count(n) > 1})))
    check(len(names) >= 30, f"found the relay's variables ({len(names)})", "too few: the pattern broke")
    # Every name read anywhere in the relay must go through the enums, or this check misses it.
    strays, seen = set(), set()
    for path in sorted(glob.glob(os.path.join(ROOT, "Sources/Relay/*.swift"))):
        text = open(path, encoding="utf-8").read()
        for name in re.findall(r'"([A-Z][A-Z0-9]*_[A-Z0-9_]+)"', text):
            seen.add(name)
            if name not in names and name not in NOT_VARIABLES:
                strays.add(f"{name} ({rel(path)})")
    # The scan sees the enums' own literals; if it does not, its pattern broke and proves nothing.
    check(all(n in seen for n in names if "_" in n), "the stray scan finds the enums' own names")
    check(not strays, "Sources/Relay reads variables only through enum Variable and enum ForeignVariable", ", ".join(sorted(strays)))
    return names


def check_store_default():
    """The deployments keep STATE_DIR because STORE_PATH's default lies in it."""
    found = [rel(p) for p in sorted(glob.glob(os.path.join(ROOT, "Sources/Relay/*.swift")))
             if f'"{STATE_DIR}/' in open(p, encoding="utf-8").read()]
    check(bool(found), f"STORE_PATH's default, in Sources/Relay, lies in {STATE_DIR} (the directory every deployment keeps)")


def check_env_example(variables):
    lines = open(ENV_EXAMPLE, encoding="utf-8").read().splitlines()
    documented = set()
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        m = re.match(r"#?([A-Z][A-Z0-9_]*)=", stripped)
        if m:
            documented.add(m.group(1))
        if not stripped or stripped.startswith("#"):
            continue
        # Docker's --env-file and systemd's EnvironmentFile both take plain KEY=VALUE lines.
        ok = re.fullmatch(r"[A-Z][A-Z0-9_]*=[^\"' ]*", stripped) is not None and line == stripped
        check(ok, f"{rel(ENV_EXAMPLE)}:{number} is a plain KEY=VALUE line", line, quiet=True)
    missing = [v for v in variables if v not in documented]
    check(not missing, f"every variable the relay reads is in {rel(ENV_EXAMPLE)}", ", ".join(missing))
    unknown = sorted(documented - set(variables))
    check(not unknown, f"{rel(ENV_EXAMPLE)} documents no variable the relay ignores", ", ".join(unknown))
    # Each variable is explained in a comment, not only assigned.
    unexplained = [v for v in variables
                   if not any(l.startswith("# ") and re.search(rf"\b{v}\b", l) for l in lines)]
    check(not unexplained, "every variable is explained in a comment of the env example", ", ".join(unexplained))


# --- Kubernetes -----------------------------------------------------------------------------

KUSTOMIZATION = os.path.join(K8S_DIR, "kustomization.yaml")
# Variables that hold or name a credential: only the operator's env file sets them, so any of the
# three relays' env files works unchanged under every shipped deployment.
CREDENTIAL = re.compile(r"^(APNS_AUTH_KEY|APNS_KEY|APNS_P12|APNS_CERT|P12_|TOKEN_|APNS_KEY_ID|APPLE_TEAM_ID|APNS_TEAM_ID|TOPIC|APNS_TOPIC)")


def k8s_manifests():
    return [p for p in sorted(glob.glob(os.path.join(K8S_DIR, "*.yaml"))) if p != KUSTOMIZATION]


def k8s_documents():
    docs = []
    for path in k8s_manifests():
        for doc in yaml.safe_load_all(open(path, encoding="utf-8")):
            if doc:
                docs.append((path, doc))
    return docs


def check_kubernetes(variables):
    files = k8s_manifests()
    check(len(files) >= 7, "the Kubernetes manifests are present", f"{len(files)} files")
    validator = shutil.which("kubernetes-validate")
    for version in K8S_VERSIONS:
        result = subprocess.run(
            [validator, "--strict", "--quiet", "-k", version, *files], capture_output=True, text=True)
        check(result.returncode == 0, f"every manifest validates against the Kubernetes {version} schema",
              (result.stdout + result.stderr).strip())

    docs = k8s_documents()
    by_kind = {}
    for path, doc in docs:
        by_kind.setdefault(doc.get("kind"), []).append(doc)
    for kind in ["Namespace", "ConfigMap", "StatefulSet", "Service",
                 "HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress"]:
        check(kind in by_kind, f"a {kind} is defined")
    check("Secret" not in by_kind, "no Secret manifest (a placeholder applied over the real one would replace it)")
    check("Deployment" not in by_kind, "no Deployment (its replicas would share one store, or each lose it with an emptyDir)")
    if not all(k in by_kind for k in ["ConfigMap", "StatefulSet", "HorizontalPodAutoscaler"]):
        return

    config = by_kind["ConfigMap"][0].get("data", {})
    secrets = [k for k in config if CREDENTIAL.match(k)]
    check(not secrets, "the ConfigMap sets no credential variable (the env file's Secret does)", ", ".join(secrets))
    unknown = [k for k in config if k not in variables]
    check(not unknown, "every ConfigMap key is a variable the relay reads", ", ".join(unknown))

    deployment = by_kind["StatefulSet"][0]
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    container = pod["containers"][0]
    check("replicas" not in spec, "the StatefulSet leaves replicas to the HPA (a replicas field resets it at every apply)")
    check(not deployment["spec"]["template"]["metadata"].get("annotations", {}).get("prometheus.io/scrape"),
          "the pods carry no prometheus.io/scrape annotation (prometheus-kubernetes.yml scrapes them as job apns-relay)")
    check(pod.get("securityContext", {}).get("runAsNonRoot") is True, "the pod runs as non-root")
    check(container.get("securityContext", {}).get("readOnlyRootFilesystem") is True,
          "the container's root filesystem is read-only")
    check(container.get("livenessProbe", {}).get("httpGet", {}).get("path") == "/health", "liveness probes /health")
    check(container.get("readinessProbe", {}).get("httpGet", {}).get("path") == "/ready", "readiness probes /ready")
    check("limits" in container.get("resources", {}) and "requests" in container.get("resources", {}),
          "the container declares resource requests and limits")
    pre_stop = container.get("lifecycle", {}).get("preStop", {})
    command = pre_stop.get("exec", {}).get("command", [])
    sleep = int(command[-1]) if command and "sleep" in command[0] else pre_stop.get("sleep", {}).get("seconds", 0)
    check(sleep > 0, "a preStop sleep lets endpoints update before SIGTERM")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    check(grace > sleep + PUSH_DEADLINE_S, "terminationGracePeriodSeconds exceeds preStop + push deadline",
          f"{grace} <= {sleep} + {PUSH_DEADLINE_S}")
    env_names = [e["name"] for e in container.get("env", [])]
    check(all(n in variables for n in env_names), "every container env name is a variable the relay reads",
          ", ".join(env_names))
    check(not [n for n in env_names if CREDENTIAL.match(n)], "the StatefulSet sets no credential variable", ", ".join(env_names))
    sources = container.get("envFrom", [])
    check([list(x) for x in sources] == [["secretRef"], ["configMapRef"]] and sources[-1]["configMapRef"]["name"] == by_kind["ConfigMap"][0]["metadata"]["name"],
          "the container reads the env file's Secret, then the ConfigMap (whose PORT the probes use wins)", str(sources))
    files = [v for v in pod.get("volumes", []) if "secret" in v]
    check(bool(files) and all(v["secret"].get("optional") is True for v in files),
          "the key files come from a Secret volume, optional (an inline key needs none)")
    image = container.get("image", "")
    check(":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest"), "the StatefulSet's image has a fixed tag", image)
    check_kustomization(deployment, image)
    check_kubernetes_store(pod, container, spec)

    hpa = by_kind["HorizontalPodAutoscaler"][0]
    check(hpa["apiVersion"] == "autoscaling/v2", "the HPA uses autoscaling/v2")
    target = hpa["spec"]["scaleTargetRef"]
    check(target["kind"] == "StatefulSet" and target["name"] == deployment["metadata"]["name"], "the HPA targets the StatefulSet", str(target))
    check(hpa["spec"].get("minReplicas", 1) >= 2, "the HPA keeps 2 or more replicas")
    selector = spec["selector"]["matchLabels"]
    for kind in ["Service", "PodDisruptionBudget"]:
        doc = by_kind[kind][0]
        sel = doc["spec"]["selector"]
        sel = sel.get("matchLabels", sel)
        check(sel == selector, f"the {kind} selects the StatefulSet's pods")
    annotations = by_kind["Ingress"][0]["metadata"].get("annotations", {})
    check("nginx.ingress.kubernetes.io/proxy-body-size" in annotations, "the Ingress caps the body size")
    check_ingress_routes(by_kind["Ingress"][0])
    read_timeout = int(annotations.get("nginx.ingress.kubernetes.io/proxy-read-timeout", "60"))
    check(read_timeout > PUSH_DEADLINE_S, "the Ingress read timeout exceeds the push deadline")


def check_kustomization(deployment, image):
    if not check(os.path.exists(KUSTOMIZATION), f"{rel(KUSTOMIZATION)} exists"):
        return
    k = yaml.safe_load(open(KUSTOMIZATION, encoding="utf-8"))
    resources = k.get("resources", [])
    manifests = [os.path.basename(p) for p in k8s_manifests()]
    check(sorted(resources) == sorted(manifests), "the kustomization applies every manifest of deploy/kubernetes",
          f"{resources} vs {manifests}")
    check(resources[:1] == ["namespace.yaml"], "the kustomization lists the Namespace first")
    check(k.get("namespace") == deployment["metadata"]["namespace"], "the kustomization's namespace is the StatefulSet's")
    images = {i["name"]: i for i in k.get("images", [])}
    name = image.rsplit(":", 1)[0]
    tag = str(images.get(name, {}).get("newTag", ""))
    check(bool(tag) and tag != "latest", "the kustomization pins the StatefulSet's image to a tag", str(k.get("images")))


def check_kubernetes_store(pod, container, spec):
    """Each pod keeps its held pushes in a claim of its own that outlives it: not an emptyDir
    (deleted with the pod), not one claim shared by every replica (one process per store)."""
    mount = next((m for m in container.get("volumeMounts", []) if m.get("mountPath") == STATE_DIR), None)
    if not check(mount is not None and not mount.get("readOnly"), f"the container mounts a writable volume at {STATE_DIR}", str(mount)):
        return
    templates = {t["metadata"]["name"]: t for t in spec.get("volumeClaimTemplates", [])}
    pod_volumes = {v["name"]: v for v in pod.get("volumes", [])}
    check(mount["name"] in templates and mount["name"] not in pod_volumes,
          f"{STATE_DIR} is a claim of the StatefulSet's volumeClaimTemplates (one per pod), not a pod volume (an emptyDir dies with its pod)",
          f"{mount['name']}: {pod_volumes.get(mount['name'])}")
    template = templates.get(mount["name"], {"spec": {}})
    check(template["spec"].get("accessModes") == ["ReadWriteOnce"], "the held pushes' claim is ReadWriteOnce (one pod's store)")
    check(pod.get("securityContext", {}).get("fsGroup") == 10001, "the pod's fsGroup is 10001, so uid 10001 may write to its claim")
    retention = spec.get("persistentVolumeClaimRetentionPolicy", {})
    check(retention.get("whenScaled") == "Retain" and retention.get("whenDeleted") == "Retain",
          "a claim is kept when the HPA scales down or the StatefulSet is deleted (it may hold pushes)", str(retention))


# Paths a proxy in front must pass to the relay (Mastodon deletes a subscription on the proxy's
# 404), and paths it must keep inside.
TOKEN = "ab" * 32
PUBLIC_PATHS = [f"/push/{TOKEN}/1", f"/relay-to/production/{TOKEN}", f"/relay-to/development/{TOKEN}/a/b",
                f"/beta/push/{TOKEN}/1", f"/beta/relay-to/production/{TOKEN}/x", f"/my.app_2-x/push/{TOKEN}/1",
                "/relay-to/_health", "/health"]
PRIVATE_PATHS = ["/metrics", "/ready"]


def check_ingress_routes(ingress):
    """Matches sample paths as ingress-nginx does: with use-regex, a path of type Prefix or
    ImplementationSpecific is a case-insensitive regular expression anchored at the start; Exact
    is equality; otherwise Prefix matches whole segments."""
    regex = ingress["metadata"].get("annotations", {}).get("nginx.ingress.kubernetes.io/use-regex") == "true"
    paths = [p for rule in ingress["spec"]["rules"] for p in rule["http"]["paths"]]

    def routed(path):
        for p in paths:
            kind, pattern = p.get("pathType"), p["path"]
            if kind == "Exact":
                if path == pattern:
                    return True
            elif regex:
                if re.match(pattern, path, re.I):
                    return True
            elif path == pattern or path.startswith(pattern.rstrip("/") + "/"):
                return True
        return False

    missing = [p for p in PUBLIC_PATHS if not routed(p)]
    check(not missing, "the Ingress routes every push route (/push, /relay-to, /{app}/push, /{app}/relay-to) and /health",
          ", ".join(missing))
    exposed = [p for p in PRIVATE_PATHS if routed(p)]
    check(not exposed, "the Ingress keeps /metrics and /ready inside the cluster", ", ".join(exposed))


# --- docker compose and nginx -----------------------------------------------------------------

def publishes(service, port):
    for entry in service.get("ports", []) or []:
        target = entry.get("target") if isinstance(entry, dict) else str(entry).split("/")[0].split(":")[-1]
        published = entry.get("published") if isinstance(entry, dict) else str(entry).split(":")[-2] if ":" in str(entry) else target
        if str(target) == str(port) or str(published) == str(port):
            return True
    return False


def check_compose():
    compose = yaml.safe_load(open(COMPOSE, encoding="utf-8"))
    services = compose.get("services", {}) if isinstance(compose, dict) else {}
    check(set(services) >= {"relay", "nginx"}, "compose defines the relay and nginx services", ", ".join(services))
    relay, nginx = services.get("relay", {}), services.get("nginx", {})
    check(not relay.get("ports"), "the relay publishes no port (only nginx is reachable)")
    check(publishes(nginx, 443), "nginx publishes 443")
    mounts = [str(v) for v in nginx.get("volumes", [])]
    check(any("nginx.conf" in m for m in mounts), "nginx mounts deploy/nginx/nginx.conf")
    check(any(m.startswith("./certs") for m in mounts), "nginx mounts the TLS certificates")
    for m in mounts:
        source = m.split(":")[0]
        if source.startswith("./nginx"):
            check(os.path.exists(os.path.join(os.path.dirname(COMPOSE), source)), f"{source} exists")
    environment = relay.get("environment", {})
    check(not [n for n in environment if CREDENTIAL.match(n)], "compose sets no credential variable (the env file does)",
          ", ".join(environment))
    check(relay.get("env_file") == ["apns-relay.env"], "compose reads the operator's env file")
    held = [str(v) for v in relay.get("volumes", []) if str(v).split(":")[1:2] == [STATE_DIR]]
    named = held[0].split(":")[0] if held else ""
    check(bool(named) and named in (compose.get("volumes") or {}),
          f"the relay keeps {STATE_DIR} in a named volume of the compose file (it outlives the container)", str(held))
    check(not [k for k in compose if k not in ("services", "volumes", "networks", "secrets", "configs") and not k.startswith("x-")],
          "compose has only the top-level keys Debian 12's docker-compose 1.29 accepts (no `name:`)", ", ".join(compose))
    grace = str(relay.get("stop_grace_period", "10s"))
    check(grace.endswith("s") and int(grace[:-1]) > PUSH_DEADLINE_S, "the relay's stop grace period exceeds the push deadline")
    upstream_ref = re.search(r"set\s+\$relay\s+(\w+):(\d+);", open(NGINX, encoding="utf-8").read())
    check(upstream_ref is not None and upstream_ref.group(1) in services, "nginx's upstream is a compose service")


def seconds(value):
    m = re.fullmatch(r"(\d+)(ms|s|m)?", value)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2) or "s"
    return n / 1000 if unit == "ms" else n * 60 if unit == "m" else n


def check_nginx():
    payload = crossplane.parse(NGINX, single=True, comments=False)
    check(payload["status"] == "ok", f"{rel(NGINX)} parses", "; ".join(e["error"] for e in payload["errors"]))
    if payload["status"] != "ok":
        return
    directives = []

    def walk(block, context):
        for d in block:
            directives.append((context, d["directive"], d["args"]))
            if "block" in d:
                walk(d["block"], context + [d["directive"]])

    walk(payload["config"][0]["parsed"], [])

    def find(name):
        return [args for _, directive, args in directives if directive == name]

    check(["1.1"] in find("proxy_http_version"), "nginx speaks HTTP/1.1 to the relay")
    check(["Connection", ""] in find("proxy_set_header"), "nginx clears the Connection header")
    # Compose recreates the relay with a new address: nginx must look its name up again (a
    # resolver and a variable in proxy_pass), not once at start (an upstream block's server).
    check(bool(find("resolver")) and all(a[0].startswith("http://$") for a in find("proxy_pass")),
          "nginx re-resolves the relay's name (resolver, and a variable in proxy_pass)", str(find("proxy_pass")))
    check(not any(ctx[-1:] == ["upstream"] for ctx, d, _ in directives if d == "server"),
          "nginx names the relay in no upstream block (resolved once at start)")
    headers = [a[0].lower() for a in find("proxy_set_header")]
    check("x-forwarded-for" in headers, "nginx passes X-Forwarded-For")
    check("x-request-id" in headers, "nginx passes X-Request-ID")
    check(bool(find("client_max_body_size")), "nginx caps the body size")
    check(["off"] in find("proxy_request_buffering"), "nginx streams request bodies (proxy_request_buffering off)")
    for name in ["proxy_read_timeout", "proxy_send_timeout"]:
        values = [seconds(a[0]) for a in find(name)]
        check(bool(values) and all(v is not None and v > PUSH_DEADLINE_S for v in values),
              f"{name} exceeds the push deadline", str(values))
    check(any("ssl" in a and a[0].endswith("443") for a in find("listen")), "nginx terminates TLS on 443")
    check(not find("http2"), "nginx uses `listen ... http2`, not `http2 on;` (nginx 1.25.1+; Debian 12 ships 1.22)")
    added = [a for a in find("add_header") if a[0].lower() == "x-request-id"]
    hidden = [a for a in find("proxy_hide_header") if a[0].lower() == "x-request-id"]
    check(not added or bool(hidden), "nginx sends one X-Request-ID (it hides the relay's echo when it adds its own)")
    check(bool(find("ssl_certificate")) and bool(find("ssl_certificate_key")), "nginx names its certificate and key")
    check(not find("return") or all(not a[0].startswith("3") for a in find("return")), "nginx never redirects (a 3xx fails a push)")


# --- The Redis variant (STORE_URL) ------------------------------------------------------------

def redis_conf():
    """deploy/redis/redis.conf's directives, the last of each name (as Redis reads them)."""
    conf = {}
    for line in open(REDIS_CONF, encoding="utf-8"):
        s = line.strip()
        if s and not s.startswith("#"):
            name, _, value = s.partition(" ")
            conf[name.lower()] = value.strip()
    return conf


def memory_bytes(value):
    """Redis's and Kubernetes' and compose's memory sizes: 1536mb, 2Gi, 2560m, 1073741824."""
    m = re.fullmatch(r"(\d+)\s*([a-zA-Z]*)", str(value).strip())
    if not m:
        return None
    units = {"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000**2, "mb": 1024**2, "g": 1000**3, "gb": 1024**3,
             "ki": 1024, "mi": 1024**2, "gi": 1024**3}
    unit = m.group(2).lower()
    # compose's mem_limit: m and g are binary (Docker's units).
    return int(m.group(1)) * units[unit] if unit in units else None


def compose_memory(value):
    m = re.fullmatch(r"(\d+)([bkmg])?", str(value).strip().lower())
    return int(m.group(1)) * {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}[m.group(2) or "b"] if m else None


def check_redis():
    """deploy/redis: the configuration Debian's redis-server really accepts, read back from a
    running server, and its Dockerfile."""
    conf = redis_conf()
    for name, value in [("appendonly", "yes"), ("appendfsync", "always"), ("maxmemory-policy", "noeviction"),
                        ("no-appendfsync-on-rewrite", "no"), ("dir", "/data")]:
        check(conf.get(name) == value, f"{rel(REDIS_CONF)} sets {name} {value}", f"got {conf.get(name)!r}")
    maxmemory = memory_bytes(conf.get("maxmemory", ""))
    check(bool(maxmemory), f"{rel(REDIS_CONF)} sets a maxmemory (past it Redis refuses writes, and the relay answers 503)",
          str(conf.get("maxmemory")))
    # Debian's redis-tools ships the server's binary as redis-check-rdb (the redis-server package
    # only adds a symlink, and a service that would start): run under the name redis-server, it
    # is the server.
    binary = shutil.which("redis-server") or shutil.which("redis-check-rdb")
    if not check(binary is not None, "Redis is installed (Debian's redis-tools)"):
        return
    cli = shutil.which("redis-cli")
    with tempfile.TemporaryDirectory() as tmp:
        server = os.path.join(tmp, "redis-server")
        os.symlink(binary, server)
        text = open(REDIS_CONF, encoding="utf-8").read()
        text = re.sub(r"(?m)^dir /data$", f"dir {tmp}", text)
        conf_copy = os.path.join(tmp, "redis.conf")
        open(conf_copy, "w", encoding="utf-8").write(text)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()
        log = open(os.path.join(tmp, "log"), "w")
        process = subprocess.Popen([server, conf_copy, "--port", str(port), "--bind", "127.0.0.1"], stdout=log, stderr=log)

        def cli_call(*args):
            return subprocess.run([cli, "-p", str(port), *args], capture_output=True, text=True, timeout=10).stdout

        version = " ".join(re.findall(r"v=(\S+)", subprocess.run([server, "--version"], capture_output=True, text=True).stdout))
        try:
            for _ in range(100):
                if process.poll() is not None or cli_call("ping").strip() == "PONG":
                    break
                time.sleep(0.1)
            up = check(process.poll() is None and cli_call("ping").strip() == "PONG",
                       f"Debian's redis-server {version} starts with {rel(REDIS_CONF)}",
                       open(os.path.join(tmp, "log")).read()[-600:])
            if up:
                for name, value in [("appendonly", "yes"), ("appendfsync", "always"), ("maxmemory-policy", "noeviction"),
                                    ("maxmemory", str(maxmemory)), ("save", "")]:
                    got = cli_call("config", "get", name).split("\n")[1:2]
                    check(got == [value], f"the running Redis reports {name} {value!r}", str(got))
                cli_call("set", "apns-relay-check", "1")
                aof = glob.glob(os.path.join(tmp, conf.get("appenddirname", "appendonlydir").strip('"'), "*.incr.aof"))
                written = any("apns-relay-check" in open(f, errors="replace").read() for f in aof)
                check(written, "a write is in the append-only file when Redis has answered it", str(aof))
                cli_call("shutdown")
        finally:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()

    dockerfile = os.path.join(REDIS_DIR, "Dockerfile")
    text = open(dockerfile, encoding="utf-8").read()
    instructions = [l.strip() for l in re.sub(r"\\\n", " ", text).splitlines() if l.strip() and not l.strip().startswith("#")]
    froms = [l for l in instructions if l.upper().startswith("FROM ")]
    check(froms == ["FROM debian:${DEBIAN_RELEASE}-slim"] and "ARG DEBIAN_RELEASE=bookworm" in instructions,
          f"{rel(dockerfile)} runs on debian:bookworm-slim (Debian 12), as the relay's image", str(froms))
    runs = " ".join(l for l in instructions if l.upper().startswith("RUN "))
    check("redis-server" in runs.split(), f"{rel(dockerfile)} installs Debian's redis-server")
    user = [l.split()[1] for l in instructions if l.upper().startswith("USER ")]
    uid = user[-1].split(":")[0] if user else "0"
    check(uid.isdigit() and int(uid) != 0, f"{rel(dockerfile)} runs as a numeric non-root user", str(user))
    copy = [l.split()[1:] for l in instructions if l.upper().startswith("COPY ")]
    entry = next((l for l in instructions if l.upper().startswith("ENTRYPOINT ")), "")
    check(["redis.conf", "/etc/apns-relay-redis.conf"] in copy and '"/etc/apns-relay-redis.conf"' in entry,
          f"{rel(dockerfile)} starts redis-server with deploy/redis/redis.conf", f"{copy} {entry}")
    volume = [i for i, l in enumerate(instructions) if re.fullmatch(r'VOLUME\s+(\[\s*"/data"\s*\]|/data)', l)]
    made = [i for i, l in enumerate(instructions) if l.upper().startswith("RUN ") and re.search(rf"install -d -o {uid} -g {uid} -m 07[05]0 /data(\s|$)", l)]
    check(bool(volume) and bool(made) and made[0] < volume[0], f"{rel(dockerfile)} makes /data owned by {uid}, then declares it a VOLUME")
    check(any(l.startswith("HEALTHCHECK") and "ping" in l for l in instructions), f"{rel(dockerfile)} has a HEALTHCHECK (redis-cli ping)")
    check(not any("--mount" in l for l in instructions) and not re.match(r"#\s*syntax\s*=", text),
          f"{rel(dockerfile)} builds with the classic builder (no RUN --mount, no # syntax=)")
    return uid


def check_kubernetes_redis(variables):
    """deploy/kubernetes/redis: the relay as a Deployment sharing Redis, the Redis StatefulSet,
    its Service and a NetworkPolicy; the files both variants share equal to deploy/kubernetes's."""
    files = [p for p in sorted(glob.glob(os.path.join(K8S_REDIS_DIR, "*.yaml"))) if os.path.basename(p) != "kustomization.yaml"]
    validator = shutil.which("kubernetes-validate")
    for version in K8S_VERSIONS:
        result = subprocess.run([validator, "--strict", "--quiet", "-k", version, *files], capture_output=True, text=True)
        check(result.returncode == 0, f"every manifest of {rel(K8S_REDIS_DIR)} validates against the Kubernetes {version} schema",
              (result.stdout + result.stderr).strip())
    for name in ["namespace.yaml", "service.yaml", "pdb.yaml", "ingress.yaml"]:
        same = os.path.exists(os.path.join(K8S_REDIS_DIR, name)) and \
            open(os.path.join(K8S_REDIS_DIR, name), "rb").read() == open(os.path.join(K8S_DIR, name), "rb").read()
        check(same, f"{rel(K8S_REDIS_DIR)}/{name} is deploy/kubernetes/{name} (a copy: kustomize loads no file outside its directory)")

    docs = [(p, d) for p in files for d in yaml.safe_load_all(open(p, encoding="utf-8")) if d]
    by_kind = {}
    for _, doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    named = {(d["kind"], d["metadata"]["name"]): d for _, d in docs}
    base = {(d["kind"], d["metadata"]["name"]): d for _, d in k8s_documents()}
    check("Secret" not in by_kind, f"{rel(K8S_REDIS_DIR)} has no Secret manifest (a placeholder applied over the real one would replace it)")
    relay = named.get(("Deployment", "apns-relay"))
    redis = [d for d in by_kind.get("StatefulSet", [])]
    if not check(relay is not None and len(redis) == 1 and ("StatefulSet", "apns-relay") not in named,
                 "the Redis variant runs the relay as the Deployment apns-relay and Redis as the one StatefulSet",
                 str(sorted(named))):
        return
    redis = redis[0]

    k = yaml.safe_load(open(os.path.join(K8S_REDIS_DIR, "kustomization.yaml"), encoding="utf-8"))
    check(sorted(k.get("resources", [])) == sorted(os.path.basename(p) for p in files) and k["resources"][:1] == ["namespace.yaml"],
          f"{rel(K8S_REDIS_DIR)}/kustomization.yaml applies every manifest there, the Namespace first", str(k.get("resources")))
    check(k.get("namespace") == relay["metadata"]["namespace"] == redis["metadata"]["namespace"], "the Redis variant's kustomization namespace is its workloads'")
    images = {i["name"]: str(i.get("newTag", "")) for i in k.get("images", [])}
    for workload in [relay, redis]:
        image = workload["spec"]["template"]["spec"]["containers"][0]["image"]
        tag = images.get(image.rsplit(":", 1)[0], "")
        check(bool(tag) and tag != "latest" and not image.endswith(":latest"),
              f"the kustomization pins {workload['kind']} {workload['metadata']['name']}'s image to a tag", f"{image}: {images}")

    # The ConfigMap: deploy/kubernetes's, plus HOLD_MAX_BYTES under Redis's maxmemory.
    config = named.get(("ConfigMap", "apns-relay-config"), {}).get("data", {})
    base_config = base.get(("ConfigMap", "apns-relay-config"), {}).get("data", {})
    extra = {k: v for k, v in config.items() if k not in base_config}
    check(all(config.get(k) == v for k, v in base_config.items()) and set(extra) == {"HOLD_MAX_BYTES"},
          "the Redis variant's ConfigMap is deploy/kubernetes's plus HOLD_MAX_BYTES", str(extra))
    check(all(k in variables for k in config) and not [k for k in config if CREDENTIAL.match(k)],
          "every key of the Redis variant's ConfigMap is a variable the relay reads, none a credential")
    check("STORE_PATH" not in config and "STORE_URL" not in config,
          "the ConfigMap sets neither STORE_PATH (refused beside STORE_URL) nor STORE_URL (it may carry a password: a Secret)")
    maxmemory = memory_bytes(redis_conf().get("maxmemory", ""))
    hold = int(config.get("HOLD_MAX_BYTES", "0") or 0)
    check(maxmemory is not None and 0 < hold < maxmemory, "HOLD_MAX_BYTES is below Redis's maxmemory (the relays' cap stops holding first)",
          f"{hold} vs {maxmemory}")

    # The relay's pod: the StatefulSet's, without the held pushes' claim, with STORE_URL.
    spec, pod = relay["spec"], relay["spec"]["template"]["spec"]
    container = pod["containers"][0]
    check("replicas" not in spec, "the Deployment leaves replicas to the HPA")
    rolling = spec.get("strategy", {}).get("rollingUpdate", {})
    check(spec.get("strategy", {}).get("type") == "RollingUpdate" and rolling.get("maxUnavailable") == 0,
          "the Deployment's rollout starts a new pod before it stops an old one (maxUnavailable 0)", str(spec.get("strategy")))
    env = {e["name"]: e for e in container.get("env", [])}
    store = env.get("STORE_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
    check(bool(store.get("name")) and "value" not in env.get("STORE_URL", {}),
          "the Deployment takes STORE_URL from a Secret (it may carry the password)", str(env.get("STORE_URL")))
    check(all(n in variables for n in env) and "STORE_PATH" not in env, "every Deployment env name is a variable the relay reads, and not STORE_PATH",
          ", ".join(env))
    check(not any(m.get("mountPath") == STATE_DIR for m in container.get("volumeMounts", [])) and not spec.get("volumeClaimTemplates"),
          f"the Deployment mounts nothing at {STATE_DIR} (the held pushes are in Redis)")
    statefulset = base.get(("StatefulSet", "apns-relay"))
    if statefulset:
        expected = yaml.safe_load(yaml.safe_dump(statefulset["spec"]["template"]))
        c = expected["spec"]["containers"][0]
        c["volumeMounts"] = [m for m in c["volumeMounts"] if m.get("mountPath") != STATE_DIR]
        c["env"] = [e for e in c.get("env", [])] + [env.get("STORE_URL")]
        expected["spec"]["securityContext"].pop("fsGroup", None)
        check(relay["spec"]["template"] == expected,
              "the Deployment's pod is the StatefulSet's but for the held pushes' claim (and its fsGroup) and STORE_URL")
    hpa = named.get(("HorizontalPodAutoscaler", "apns-relay"), {}).get("spec", {}).get("scaleTargetRef", {})
    check(hpa.get("kind") == "Deployment" and hpa.get("name") == "apns-relay", "the Redis variant's HPA targets the Deployment", str(hpa))

    # Redis: one replica, its claim, its user, memory above maxmemory, its password from the Secret.
    rspec, rpod = redis["spec"], redis["spec"]["template"]["spec"]
    rc = rpod["containers"][0]
    rlabels = rspec["template"]["metadata"]["labels"]
    relay_labels = spec["selector"]["matchLabels"]
    check(rspec.get("replicas") == 1, "Redis runs as one replica (no asynchronous replica to fail over to)")
    check(not all(rlabels.get(k) == v for k, v in relay_labels.items()),
          "the relay's selectors (Service, PDB, HPA, Prometheus) do not select the Redis pods", str(rlabels))
    kube = yaml.safe_load(open(os.path.join(PROMETHEUS_DIR, "prometheus-kubernetes.yml"), encoding="utf-8"))["scrape_configs"][0]
    keep = next((r["regex"] for r in kube["relabel_configs"] if r.get("action") == "keep"
                 and r["source_labels"] == ["__meta_kubernetes_pod_label_app_kubernetes_io_name"]), "")
    check(re.fullmatch(keep, rlabels.get("app.kubernetes.io/name", "")) is None,
          "prometheus-kubernetes.yml does not scrape the Redis pods as job apns-relay")
    mount = next((m for m in rc.get("volumeMounts", []) if m.get("mountPath") == "/data"), None)
    templates = {t["metadata"]["name"]: t for t in rspec.get("volumeClaimTemplates", [])}
    check(mount is not None and mount["name"] in templates
          and templates[mount["name"]]["spec"].get("accessModes") == ["ReadWriteOnce"],
          "Redis keeps /data (its AOF) on a ReadWriteOnce claim of its volumeClaimTemplates")
    retention = rspec.get("persistentVolumeClaimRetentionPolicy", {})
    check(retention.get("whenDeleted") == "Retain" and retention.get("whenScaled") == "Retain", "Redis's claim is kept when the StatefulSet goes")
    dockerfile_user = [l.split()[1] for l in open(os.path.join(REDIS_DIR, "Dockerfile"), encoding="utf-8").read().splitlines()
                       if l.startswith("USER ")]
    uid = int(dockerfile_user[-1].split(":")[0]) if dockerfile_user else None
    security = rpod.get("securityContext", {})
    check(security.get("runAsNonRoot") is True and security.get("runAsUser") == uid and security.get("fsGroup") == uid,
          f"the Redis pod runs as the image's user {uid}, which its claim is writable by (fsGroup)", str(security))
    check(rc.get("securityContext", {}).get("readOnlyRootFilesystem") is True
          and rc.get("securityContext", {}).get("allowPrivilegeEscalation") is False
          and rc.get("securityContext", {}).get("capabilities", {}).get("drop") == ["ALL"]
          and security.get("seccompProfile", {}).get("type") == "RuntimeDefault",
          "the Redis container meets the restricted Pod Security Standard (the namespace enforces it)")
    limit = memory_bytes(rc.get("resources", {}).get("limits", {}).get("memory", ""))
    check(limit is not None and maxmemory is not None and limit > maxmemory * 1.25,
          "Redis's memory limit is well above maxmemory (an AOF rewrite forks)", f"{limit} vs {maxmemory}")
    check("cpu" not in rc.get("resources", {}).get("limits", {}), "Redis has no CPU limit")
    command = " ".join(rc.get("command", []) + rc.get("args", []))
    check("/etc/apns-relay-redis.conf" in command and '--requirepass "$REDIS_PASSWORD"' in command,
          "Redis starts with the image's configuration and the password of the Secret", command)
    renv = {e["name"]: e.get("valueFrom", {}).get("secretKeyRef", {}) for e in rc.get("env", [])}
    check(renv.get("REDIS_PASSWORD", {}).get("name") == store.get("name") and renv.get("REDISCLI_AUTH") == renv.get("REDIS_PASSWORD"),
          "Redis's password comes from the Secret that holds STORE_URL (and the probe's redis-cli uses it)", str(renv))
    check("ping" in " ".join(rc.get("readinessProbe", {}).get("exec", {}).get("command", [])),
          "Redis is ready once it answers PING (after loading its AOF)")

    # Its Service, and the NetworkPolicy letting only the relay's pods in.
    port = next((p for p in rc.get("ports", []) if p["containerPort"] == 6379), None)
    services = [d for d in by_kind.get("Service", []) if d["spec"].get("selector") == rlabels]
    check(len(services) == 1 and rspec.get("serviceName") == services[0]["metadata"]["name"] and port is not None
          and [(p["port"], p["targetPort"]) for p in services[0]["spec"]["ports"]] == [(6379, port.get("name"))],
          "one Service selects the Redis pod on 6379 and governs its StatefulSet")
    service = services[0]["metadata"]["name"] if services else "?"
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    check(f"@{service}:6379/0" in readme, f"README's apns-relay-store Secret points STORE_URL at the Service {service}:6379")
    policies = by_kind.get("NetworkPolicy", [])
    ok = len(policies) == 1
    if ok:
        p = policies[0]["spec"]
        rules = p.get("ingress", [])
        ok = (p.get("podSelector", {}).get("matchLabels") == rlabels and p.get("policyTypes") == ["Ingress"]
              and len(rules) == 1 and rules[0].get("from") == [{"podSelector": {"matchLabels": relay_labels}}]
              and rules[0].get("ports") == [{"protocol": "TCP", "port": 6379}])
    check(ok, "a NetworkPolicy lets only the relay's pods reach Redis, on 6379 only", str([d["spec"] for d in policies]))


def check_compose_redis():
    """deploy/docker-compose.redis.yml: docker-compose.yml's relay and nginx, the relay sharing the
    Redis service instead of a volume, and that Redis."""
    compose = yaml.safe_load(open(COMPOSE_REDIS, encoding="utf-8"))
    base = yaml.safe_load(open(COMPOSE, encoding="utf-8"))
    services = compose.get("services", {})
    what = rel(COMPOSE_REDIS)
    if not check(set(services) == {"relay", "redis", "nginx"}, f"{what} defines relay, redis and nginx", ", ".join(services)):
        return
    relay, redis, nginx = services["relay"], services["redis"], services["nginx"]
    check(nginx == base["services"]["nginx"], f"{what}'s nginx is docker-compose.yml's")
    differ = ("environment", "volumes", "depends_on")
    same = {k: v for k, v in relay.items() if k not in differ} == {k: v for k, v in base["services"]["relay"].items() if k not in differ}
    check(same, f"{what}'s relay is docker-compose.yml's but for its environment, volumes and depends_on")
    check("container_name" not in relay and not relay.get("ports"), f"{what}'s relay can scale (no container_name, no published port)")
    environment = relay.get("environment", {})
    base_env = base["services"]["relay"].get("environment", {})
    check(all(environment.get(k) == v for k, v in base_env.items()) and set(environment) - set(base_env) == {"STORE_URL", "HOLD_MAX_BYTES"},
          f"{what}'s relay environment is docker-compose.yml's plus STORE_URL and HOLD_MAX_BYTES", ", ".join(environment))
    m = re.fullmatch(r"redis://(?:[^@/]+@)?([a-z0-9-]+):(\d+)(?:/\d+)?", str(environment.get("STORE_URL", "")))
    check(m is not None and m.group(1) == "redis" and m.group(2) in [str(p) for p in redis.get("expose", [])],
          f"{what}'s STORE_URL is redis:// to the redis service's port", str(environment.get("STORE_URL")))
    check("STORE_PATH" not in environment, f"{what} sets no STORE_PATH (refused beside STORE_URL)")
    base_volumes = [v for v in base["services"]["relay"]["volumes"] if str(v).split(":")[1:2] != [STATE_DIR]]
    check(relay.get("volumes") == base_volumes, f"{what}'s relay mounts docker-compose.yml's volumes but the held pushes' one",
          str(relay.get("volumes")))
    check(relay.get("depends_on", {}).get("redis", {}).get("condition") == "service_healthy",
          f"{what}'s relay starts once Redis is healthy (has loaded its AOF)")
    maxmemory = memory_bytes(redis_conf().get("maxmemory", ""))
    hold = int(environment.get("HOLD_MAX_BYTES", "0") or 0)
    check(maxmemory is not None and 0 < hold < maxmemory, f"{what}'s HOLD_MAX_BYTES is below Redis's maxmemory", f"{hold} vs {maxmemory}")
    limit = compose_memory(redis.get("mem_limit", ""))
    check(limit is not None and maxmemory is not None and limit > maxmemory * 1.25,
          f"{what}'s Redis memory limit is well above maxmemory (an AOF rewrite forks)", f"{limit} vs {maxmemory}")
    check(not redis.get("ports"), f"{what}'s Redis publishes no port")
    check(redis.get("build", {}).get("context") == "./redis" and os.path.isdir(REDIS_DIR), f"{what} builds Redis from deploy/redis")
    data = [str(v) for v in redis.get("volumes", []) if str(v).split(":")[1:2] == ["/data"]]
    check(bool(data) and data[0].split(":")[0] in (compose.get("volumes") or {}),
          f"{what}'s Redis keeps /data (its AOF) in a named volume", str(data))
    check(redis.get("read_only") is True and redis.get("cap_drop") == ["ALL"] and bool(redis.get("healthcheck")),
          f"{what}'s Redis runs read-only, without capabilities, with a healthcheck")
    check(not [k for k in compose if k not in ("services", "volumes", "networks", "secrets", "configs") and not k.startswith("x-")],
          f"{what} has only the top-level keys Debian 12's docker-compose 1.29 accepts")


def check_compose_config():
    """Debian 12's docker-compose (1.29) reads both compose files, in a copy of deploy/ with an
    empty env file where the operator's goes."""
    binary = shutil.which("docker-compose")
    if not check(binary is not None, "docker-compose is installed (Debian's)"):
        return
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "deploy")
        shutil.copytree(os.path.join(ROOT, "deploy"), copy)
        open(os.path.join(copy, "apns-relay.env"), "w").close()
        for path in [COMPOSE, COMPOSE_REDIS]:
            result = subprocess.run([binary, "-f", os.path.join(copy, os.path.basename(path)), "config", "-q"],
                                    capture_output=True, text=True, cwd=copy, env={**os.environ, "COMPOSE_PROJECT_NAME": "check"})
            check(result.returncode == 0, f"docker-compose {subprocess.run([binary, 'version', '--short'], capture_output=True, text=True).stdout.strip()} config accepts {rel(path)}",
                  (result.stdout + result.stderr).strip())


# --- systemd ------------------------------------------------------------------------------------

def check_systemd():
    text = open(UNIT, encoding="utf-8").read()
    sections, current, keys = {}, None, []
    for number, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#") or s.startswith(";"):
            continue
        if re.fullmatch(r"\[[A-Za-z]+\]", s):
            current = s[1:-1]
            sections.setdefault(current, [])
            continue
        m = re.fullmatch(r"([A-Za-z][A-Za-z0-9]*)=(.*)", s)
        ok = m is not None and current is not None
        check(ok, f"{rel(UNIT)}:{number} is Key=Value inside a section", line, quiet=True)
        if ok:
            sections[current].append((m.group(1), m.group(2)))
            keys.append(m.group(1))
    check(set(sections) == {"Unit", "Service", "Install"}, "the unit has [Unit], [Service] and [Install]")
    service = dict(sections.get("Service", []))
    for key, expected in [("User", "apns-relay"), ("NoNewPrivileges", "yes"), ("ProtectSystem", "strict"),
                          ("ProtectHome", "yes"), ("PrivateTmp", "yes"), ("PrivateDevices", "yes"),
                          ("CapabilityBoundingSet", ""), ("Restart", "on-failure")]:
        check(service.get(key) == expected, f"the unit sets {key}={expected}", f"got {service.get(key)!r}")
    check("RestrictAddressFamilies" in service and "SystemCallFilter" in keys, "the unit restricts address families and system calls")
    # The relay reads the env file itself: systemd's EnvironmentFile= would turn the unquoted
    # literal \n of an inline key into n, and a reload would not see an edited file.
    check(service.get("ExecStart") == "/usr/local/bin/apns-relay serve --env-file /etc/apns-relay/env",
          "the unit starts /usr/local/bin/apns-relay serve --env-file /etc/apns-relay/env", str(service.get("ExecStart")))
    check("EnvironmentFile" not in service, "the unit has no EnvironmentFile= (the relay reads the file)")
    assigned = [v.split("=", 1)[0] for k, v in sections.get("Service", []) if k == "Environment"]
    check(not [n for n in assigned if CREDENTIAL.match(n)], "the unit sets no credential variable", ", ".join(assigned))
    check(service.get("ExecReload") == "/bin/kill -HUP $MAINPID", "systemctl reload sends SIGHUP (ExecReload=)")
    check(service.get("StateDirectory") == os.path.basename(STATE_DIR) and STATE_DIR.startswith("/var/lib/"),
          f"the unit has StateDirectory={os.path.basename(STATE_DIR)}: {STATE_DIR} exists, owned by the service user, writable under ProtectSystem=strict",
          f"got {service.get('StateDirectory')!r}")
    stop = seconds(service.get("TimeoutStopSec", "90s").rstrip())
    check(stop is not None and stop > PUSH_DEADLINE_S, "TimeoutStopSec exceeds the push deadline")

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("note  systemd-analyze not found: only the syntax check above ran")
        return
    # verify also checks that ExecStart exists: point it at a binary that does, in a copy.
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "apns-relay.service")
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text.replace("/usr/local/bin/apns-relay", shutil.which("true") or "/bin/true"))
        result = subprocess.run([analyze, "verify", "--man=no", copy], capture_output=True, text=True)
        output = (result.stdout + result.stderr).strip()
        check(result.returncode == 0 and not output, "systemd-analyze verify accepts the unit", output)
        result = subprocess.run([analyze, "security", "--offline=true", "--threshold=3", copy], capture_output=True, text=True)
        exposure = re.search(r"Overall exposure level for \S+: ([\d.]+)", result.stdout)
        if exposure:
            check(float(exposure.group(1)) <= 3.0, "systemd-analyze security rates the unit at 3.0 or better",
                  exposure.group(1))


# --- Dockerfile -----------------------------------------------------------------------------------

def check_dockerfile():
    text = open(DOCKERFILE, encoding="utf-8").read()
    instructions = [l.strip() for l in re.sub(r"\\\n", " ", text).splitlines() if l.strip() and not l.strip().startswith("#")]
    froms = [l for l in instructions if l.upper().startswith("FROM ")]
    check(len(froms) == 2 and "swift:" in froms[0] and "-slim" in froms[1], "the Dockerfile builds with swift and runs on slim Debian")
    check(any("scripts/ship-build.sh apns-relay" in l for l in instructions),
          "the image builds apns-relay as it ships (scripts/ship-build.sh)")
    ship = open(os.path.join(ROOT, "scripts", "ship-build.sh"), encoding="utf-8").read()
    check("-static-executable" in ship and "-static-pie" in ship,
          "scripts/ship-build.sh links one static PIE (the Swift runtime, glibc and the C libraries)")
    user = [l.split()[1] for l in instructions if l.upper().startswith("USER ")]
    check(bool(user) and not user[-1].startswith(("root", "0:", "0")), "the image runs as a non-root user")
    check("EXPOSE 3000" in instructions, "the image exposes 3000")
    check("STOPSIGNAL SIGTERM" in instructions, "the image stops with SIGTERM")
    check(any(l.startswith("HEALTHCHECK") and '"healthcheck"' in l for l in instructions), "the image has a HEALTHCHECK")
    runtime = [l for l in instructions[[i for i, l in enumerate(instructions) if l.upper().startswith("FROM ")][-1]:]
               if l.upper().startswith("RUN ")]
    installs = " ".join(runtime).split()
    check("ca-certificates" in installs, "the runtime image installs ca-certificates (the trust store for Apple)")
    # The binary is static (image-smoke checks it loads no shared library).
    for package in ["libnghttp2-14", "libssl3", "libstdc++6", "libgcc-s1"]:
        check(package not in installs, f"the runtime image does not install {package}: the binary has it linked in")
    check(os.path.exists(os.path.join(ROOT, ".dockerignore")), ".dockerignore exists")
    check(not any("--mount" in l for l in instructions if l.upper().startswith("RUN ")),
          "no RUN --mount: Debian 12's docker.io (20.10) builds with the classic builder")
    check(not re.match(r"#\s*syntax\s*=", text), "no # syntax= line (BuildKit would fetch a frontend from a registry)")
    check(not any(l.startswith("ENV ") and re.search(r"\bPORT=", l) for l in instructions),
          "the image sets no PORT (the foreign relays' env files take their own default)")
    # A change to a volume's directory after VOLUME never reaches the image, so it is made (owned
    # by the relay's user: a named volume starts as its copy) in a RUN before the VOLUME line.
    stage = instructions[[i for i, l in enumerate(instructions) if l.upper().startswith("FROM ")][-1]:]
    volume = [i for i, l in enumerate(stage) if re.fullmatch(rf'VOLUME\s+(\[\s*"{STATE_DIR}"\s*\]|{STATE_DIR})', l)]
    made = [i for i, l in enumerate(stage) if l.upper().startswith("RUN ")
            and re.search(rf"install -d -o 10001 -g 10001 -m 07[05]0 {STATE_DIR}(\s|$)", l)]
    check(bool(volume) and bool(made) and made[0] < volume[0],
          f"the image makes {STATE_DIR} owned by 10001, then declares it a VOLUME (make docker-test writes to it as 10001)")


# --- Prometheus alerting rules ----------------------------------------------------------------

def check_prometheus_rules():
    """promtool checks the rules and runs their unit tests (series that fire, series that do not);
    every metric the rules name is one the relay exports."""
    rules = os.path.join(PROMETHEUS_DIR, "alerts.yml")
    tests = os.path.join(PROMETHEUS_DIR, "alerts.test.yml")
    promtool = shutil.which("promtool")
    if not check(promtool is not None, "promtool is installed (Debian's prometheus)"):
        return
    result = subprocess.run([promtool, "check", "rules", rules], capture_output=True, text=True)
    check(result.returncode == 0, "promtool check rules deploy/prometheus/alerts.yml", (result.stdout + result.stderr).strip())
    result = subprocess.run([promtool, "test", "rules", tests], capture_output=True, text=True, cwd=PROMETHEUS_DIR)
    check(result.returncode == 0, "promtool test rules deploy/prometheus/alerts.test.yml", (result.stdout + result.stderr).strip())
    groups = yaml.safe_load(open(rules, encoding="utf-8"))["groups"]
    alerts = [rule for group in groups for rule in group["rules"]]
    check(all(rule.get("labels", {}).get("severity") in ("critical", "warning", "info") for rule in alerts),
          "every alert has a severity (critical, warning, info)")
    check(all(rule.get("annotations", {}).get("runbook") for rule in alerts), "every alert has a runbook line")
    exported = set()
    for path in glob.glob(os.path.join(ROOT, "Sources/**/*.swift"), recursive=True):
        exported |= set(re.findall(r'"(relay_[a-z_]+)"', open(path, encoding="utf-8").read()))
    named = set()
    for rule in alerts:
        for name in re.findall(r"\b(relay_[a-z_]+?)(?:_bucket)?\b", rule["expr"]):
            named.add(name)
    unknown = sorted(named - exported)
    check(not unknown, "every metric the alerts use is one the relay exports", ", ".join(unknown))
    # ApnsRelayDown must match the job the shipped scrape configurations make, down and absent.
    down = next((r for r in alerts if r["alert"] == "ApnsRelayDown"), {"expr": ""})["expr"]
    jobs = set()
    for config in ["prometheus-static.yml", "prometheus-kubernetes.yml"]:
        path = os.path.join(PROMETHEUS_DIR, config)
        parsed = yaml.safe_load(open(path, encoding="utf-8"))
        jobs |= {j["job_name"] for j in parsed["scrape_configs"]}
        note = ""
        if any("kubernetes_sd_configs" in j for j in parsed["scrape_configs"]):
            # Debian's Prometheus is built without Kubernetes discovery: promtool checks the rest
            # (rule files, relabelling) with a static target in its place.
            for j in parsed["scrape_configs"]:
                j.pop("kubernetes_sd_configs", None)
                j["static_configs"] = [{"targets": ["127.0.0.1:3000"]}]
            parsed["rule_files"] = [os.path.join(PROMETHEUS_DIR, f) for f in parsed.get("rule_files", [])]
            path = os.path.join(tempfile.mkdtemp(), config)
            with open(path, "w", encoding="utf-8") as f:
                yaml.safe_dump(parsed, f)
            note = " (its kubernetes_sd_configs as a static target: Debian's Prometheus has no Kubernetes discovery)"
        result = subprocess.run([promtool, "check", "config", path], capture_output=True, text=True)
        check(result.returncode == 0, f"promtool check config deploy/prometheus/{config}{note}", (result.stdout + result.stderr).strip())
    check(len(jobs) == 1, "the shipped scrape configurations name one job", str(jobs))
    for job in jobs:
        check(f'up{{job="{job}"}} == 0' in down and f'absent(up{{job="{job}"}})' in down,
              f"ApnsRelayDown fires for a target of job {job} that is down or absent", down)
    kube = yaml.safe_load(open(os.path.join(PROMETHEUS_DIR, "prometheus-kubernetes.yml"), encoding="utf-8"))["scrape_configs"][0]
    deployment = next(d for _, d in k8s_documents() if d.get("kind") == "StatefulSet")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    ports = [p["name"] for c in deployment["spec"]["template"]["spec"]["containers"] for p in c.get("ports", [])]
    keeps = {tuple(r["source_labels"]): r["regex"] for r in kube["relabel_configs"] if r.get("action") == "keep"}
    check(keeps.get(("__meta_kubernetes_pod_label_app_kubernetes_io_name",)) == labels.get("app.kubernetes.io/name")
          and keeps.get(("__meta_kubernetes_pod_container_port_name",)) in ports,
          "prometheus-kubernetes.yml keeps the StatefulSet's pods and their named port", str(keeps))


def main():
    variables = relay_variables()
    known = variables
    check_env_example(known)
    check_store_default()
    check_kubernetes(known)
    check_kubernetes_redis(known)
    check_compose()
    check_compose_redis()
    check_compose_config()
    check_redis()
    check_nginx()
    check_systemd()
    check_dockerfile()
    check_prometheus_rules()
    if failures:
        print(f"\ndeploy-check: {len(failures)} check(s) failed")
        sys.exit(1)
    print("\ndeploy-check: all checks passed")


if __name__ == "__main__":
    main()
