#!/usr/bin/env bash
# Validate the manifests offline: against the Kubernetes API schemas (PyPI's kubernetes-validate,
# which ships them; --strict rejects unknown fields), then against each other and the worker:
#   - the pod's terminationGracePeriodSeconds is longer than OVERSPILL_GRACEFUL_SHUTDOWN_SECS;
#   - the probes and the Service reach the port OVERSPILL_METRICS_ADDR listens on;
#   - memory = OVERSPILL_MAX_INFLIGHT_BYTES + 512Mi, request = limit;
#   - with a worker binary given, every variable the ConfigMap and Secret set is one it reads.
#
#   deploy/kubernetes/validate.sh [OVERSPILL_BINARY]
# Installs kubernetes-validate into .deploy/kubernetes-venv on first use.
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

K8S_VENV="$DEPLOY_DIR/kubernetes-venv"
VERSION=1.37.0
if [ ! -x "$K8S_VENV/bin/kubernetes-validate" ] || ! "$K8S_VENV/bin/kubernetes-validate" --version | grep "$VERSION" >/dev/null; then
  python3 -m venv "$K8S_VENV"
  "$K8S_VENV/bin/pip" install --quiet --disable-pip-version-check "kubernetes-validate==$VERSION"
fi
binary="${1:+$(realpath "$1")}"
cd "$OVERSPILL_ROOT/deploy/kubernetes"
"$K8S_VENV/bin/kubernetes-validate" --strict --quiet ./*.yaml

help=""
if [ -n "$binary" ]; then help="$("$binary" worker --help)"; fi
HELP="$help" "$K8S_VENV/bin/python" - <<'PY'
import os, re, sys, yaml

docs = {}
for name in sorted(os.listdir(".")):
    if name.endswith(".yaml"):
        for doc in yaml.safe_load_all(open(name)):
            docs[doc["kind"]] = doc
config, secret = docs["ConfigMap"]["data"], docs["Secret"]["stringData"]
pod = docs["Deployment"]["spec"]["template"]["spec"]
worker = pod["containers"][0]
problems = []

def mib(quantity):
    value, unit = re.fullmatch(r"(\d+)(Mi|Gi|MiB|GiB)", quantity).groups()
    return int(value) * (1024 if unit.startswith("G") else 1)

grace = int(config["OVERSPILL_GRACEFUL_SHUTDOWN_SECS"])
if pod["terminationGracePeriodSeconds"] <= grace:
    problems.append(f"terminationGracePeriodSeconds {pod['terminationGracePeriodSeconds']} is not longer than the worker's {grace} s")

port = int(config["OVERSPILL_METRICS_ADDR"].rsplit(":", 1)[1])
named = {p["name"]: p["containerPort"] for p in worker["ports"]}
for probe in ("livenessProbe", "readinessProbe"):
    target = worker[probe]["httpGet"]["port"]
    if named.get(target, target) != port:
        problems.append(f"{probe} is not on the metrics port {port}")
if named.get(docs["Service"]["spec"]["ports"][0]["targetPort"]) != port:
    problems.append(f"the Service does not target the metrics port {port}")
if (worker["livenessProbe"]["httpGet"]["path"], worker["readinessProbe"]["httpGet"]["path"]) != ("/healthz", "/readyz"):
    problems.append("the probes are not /healthz (liveness) and /readyz (readiness)")

memory = mib(config["OVERSPILL_MAX_INFLIGHT_BYTES"]) + 512
resources = worker["resources"]
if mib(resources["limits"]["memory"]) != memory or mib(resources["requests"]["memory"]) != memory:
    problems.append(f"memory request and limit should be OVERSPILL_MAX_INFLIGHT_BYTES + 512Mi = {memory}Mi")

help_text = os.environ["HELP"]
if help_text:
    read = set(re.findall(r"\[env: ([A-Z0-9_]+)[=\]]", help_text)) | {
        "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"}
    for name in sorted((set(config) | set(secret)) - read):
        problems.append(f"{name} is read by no flag of `overspill worker`")

for p in problems:
    print(f"deploy/kubernetes: {p}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"deploy/kubernetes: {len(docs)} manifests valid and consistent")
PY
