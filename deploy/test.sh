#!/usr/bin/env bash
# The README's test command: install and start every real service the tests need (SeaweedFS, an
# HTTPS SeaweedFS, Azurite, fake-gcs-server, the Temporal dev server, nginx as a TLS proxy to it,
# and llama.cpp's server with Gemma 3 270M), build once (debug), run every test, and stop the
# services again.
# Works on a fresh machine: everything it installs goes under .deploy/ (nginx-light and openssl,
# when missing, come from Debian's packages).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OVERSPILL_ROOT"

started=()
cleanup() {
  local status=$?
  if [ "$status" -ne 0 ]; then report_servers; fi
  if [ -n "${model_tests:-}" ]; then kill "$model_tests" 2>/dev/null || true; fi
  for svc in "${started[@]}"; do "$OVERSPILL_ROOT/deploy/$svc.sh" stop || true; done
}
trap cleanup EXIT

# After a failure, what the disk and the stores said last: one store refusing writes (SeaweedFS
# makes its volumes read-only on a full disk) fails a score of tests at once, and the test
# report alone does not say why.
report_servers() {
  echo "--- free disk where the stores keep their data ---"
  df -h "$DEPLOY_DIR" | tail -n 1
  local log
  for log in "$DEPLOY_DIR"/seaweedfs*/weed.log; do
    if [ -f "$log" ]; then
      echo "--- the last errors in $log ---"
      grep -E '^E[0-9]{4} ' "$log" | tail -n 3 | cut -c1-400 || true
    fi
  done
}

ensure_venv
ensure_wheel_venv
ensure_lowest_wheel_venv
# The TypeScript package: Node 22, its npm dependencies, its native addon (@napi-rs/cli) and tsc's
# strict compile of the package, its tests and its quickstart (tests/integration/typescript.rs).
ensure_typescript

# nginx proxies TLS to the Temporal server, so it starts after it.
for svc in seaweedfs seaweedfs-https azurite fakegcs temporal nginx llama; do
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
# No module of a crate may import, through others, a module that imports it.
python3 deploy/check_imports.py
# The Python package's types, strictly (its [tool.mypy] in workflows/python/pyproject.toml).
"$WHEEL_VENV/bin/mypy" --config-file workflows/python/pyproject.toml workflows/python/python
cargo build --workspace --all-targets
# The engine alone (`overspill` without default features) builds, and pulls in no Temporal, CLI,
# allocator or logging crate; hyper only through the stores' HTTP clients, not directly.
cargo build -p overspill --no-default-features --lib
engine=$(cargo tree -p overspill --no-default-features -e normal --prefix none)
direct=$(cargo tree -p overspill --no-default-features -e normal --prefix none --depth 1)
if grep -E '^(temporalio|clap|mimalloc|tracing-subscriber)' <<<"$engine" ||
  grep -E '^(hyper|hyper-util|http-body-util) ' <<<"$direct"; then
  echo "the engine (overspill --no-default-features) depends on the crates above" >&2
  exit 1
fi
# The Kubernetes manifests, against the API schemas and the worker just built.
deploy/kubernetes/validate.sh target/debug/overspill
if [ "$#" -gt 0 ]; then
  cargo test --workspace --no-fail-fast "$@"
  exit
fi
# The real model's tests (tests/integration/model.rs) wait on the model server's one slot, not
# on the CPU: they run in a process of their own beside the rest, their output kept for the end.
# cargo's messages go to a file, read whole afterwards: a reader that stopped at the first match
# would leave cargo writing into a closed pipe (EPIPE, exit 101), which pipefail turns into a
# failed run whenever cargo's last messages come late.
messages="$DEPLOY_DIR/integration-build.json"
cargo test --test integration --no-run --message-format=json >"$messages"
integration=$(python3 -c 'import json, sys
found = [m["executable"] for m in map(json.loads, open(sys.argv[1]))
         if m.get("executable") and m["target"]["name"] == "integration"]
print(found[-1])' "$messages")
MODEL_LOG="$DEPLOY_DIR/model-tests.log"
"$integration" model:: --nocapture >"$MODEL_LOG" 2>&1 &
model_tests=$!
status=0
cargo test --workspace --no-fail-fast -- --skip model:: || status=$?
wait "$model_tests" || status=$?
model_tests=
echo "--- the real model's tests (tests/integration/model.rs) ---"
cat "$MODEL_LOG"
exit "$status"
