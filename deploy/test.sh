#!/usr/bin/env bash
# The README's test command: install and start every real service the tests need (SeaweedFS, an
# HTTPS SeaweedFS, Azurite, fake-gcs-server, the Temporal dev server, nginx as a TLS proxy to it,
# and, with OVERSPILL_MODEL_TESTS=1, llama.cpp's server with Gemma 3 270M),
# build once (debug), run every test, and stop the services again.
# Works on a fresh machine: everything it installs goes under .deploy/ (nginx-light and openssl,
# when missing, come from Debian's packages).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OVERSPILL_ROOT"

started=()
cleanup() {
  if [ -n "${llama_pid:-}" ]; then kill "$llama_pid" 2>/dev/null || true; fi
  for svc in "${started[@]}"; do "$OVERSPILL_ROOT/deploy/$svc.sh" stop || true; done
}
trap cleanup EXIT

# With OVERSPILL_MODEL_TESTS=1, the real model's tests (tests/integration/model.rs) run too. Its
# server starts first, in the background: on a fresh machine its one-time llama.cpp build (12-70
# min on 2 cores) overlaps the cargo build below; it is waited for before the tests.
MODEL_TESTS="${OVERSPILL_MODEL_TESTS:-0}"
LLAMA_LOG="$DEPLOY_DIR/llama-start.log"
if [ "$MODEL_TESTS" = 1 ]; then
  if ! deploy/llama.sh status >/dev/null 2>&1; then started+=(llama); fi
  deploy/llama.sh start >"$LLAMA_LOG" 2>&1 &
  llama_pid=$!
fi

ensure_venv
ensure_wheel_venv

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
if [ "$MODEL_TESTS" = 1 ]; then
  # The model server, bounded: a build stuck past 40 minutes fails.
  for _ in $(seq 1 2400); do kill -0 "$llama_pid" 2>/dev/null || break; sleep 1; done
  if kill -0 "$llama_pid" 2>/dev/null || ! wait "$llama_pid"; then
    echo "deploy/llama.sh start did not finish; its log ($LLAMA_LOG):" >&2
    tail -n 40 "$LLAMA_LOG" >&2 || true
    exit 1
  fi
  llama_pid=
  cat "$LLAMA_LOG"
  # shellcheck disable=SC1090
  source "$(env_file llama)"
  cargo test --test integration model:: -- --ignored
fi
