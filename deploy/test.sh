#!/usr/bin/env bash
# The README's test command: install and start every real service the tests need (SeaweedFS, an
# HTTPS SeaweedFS, Azurite, fake-gcs-server, the Temporal dev server, nginx as a TLS proxy to it),
# build once (debug), run every test, and stop the services again.
# Works on a fresh machine: everything it installs goes under .deploy/ (nginx-light and openssl,
# when missing, come from Debian's packages).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OVERSPILL_ROOT"

ensure_venv
ensure_wheel_venv
started=()
cleanup() {
  for svc in "${started[@]}"; do "$OVERSPILL_ROOT/deploy/$svc.sh" stop || true; done
}
trap cleanup EXIT

# nginx proxies TLS to the Temporal server, so it starts after it.
for svc in seaweedfs seaweedfs-https azurite fakegcs temporal nginx; do
  if [ -x "deploy/$svc.sh" ]; then
    # Stop on exit only what this run started: a server already running is someone else's.
    if ! "deploy/$svc.sh" status >/dev/null 2>&1; then started+=("$svc"); fi
    "deploy/$svc.sh" start
    # shellcheck disable=SC1090
    source "$(env_file "$svc")"
  fi
done

# Podman and runc for the container test (tests/integration/container.rs).
deploy/podman.sh install

export PATH="$VENV/bin:$PATH"
# No module of the library may import, through others, a module that imports it.
python3 deploy/check_imports.py
cargo build --workspace --all-targets
# The Kubernetes manifests, against the API schemas and the worker just built.
deploy/kubernetes/validate.sh target/debug/overspill
cargo test --workspace --no-fail-fast "$@"
