#!/usr/bin/env python3
"""Checks the deployment files against each other and against the relay's source.

Run by scripts/check-deploy.sh inside a venv that has kubernetes-validate, PyYAML and
crossplane. Prints one line per check and exits non-zero if any failed.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

import crossplane
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VARIABLE_SWIFT = os.path.join(ROOT, "Sources/Relay/Variable.swift")
ENV_EXAMPLE = os.path.join(ROOT, "config/apns-relay.env.example")
COMPOSE = os.path.join(ROOT, "deploy/docker-compose.yml")
NGINX = os.path.join(ROOT, "deploy/nginx/nginx.conf")
K8S_DIR = os.path.join(ROOT, "deploy/kubernetes")
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
    for path in glob.glob(os.path.join(ROOT, "Sources/Relay/*.swift")):
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
    check_env_example(variables)
    check_store_default()
    check_kubernetes(variables)
    check_compose()
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
