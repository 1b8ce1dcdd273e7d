# Shared helpers for the deploy scripts. Source it; do not run it.
# Everything lands under .deploy/ in the project: nothing is installed system-wide.
set -euo pipefail
OVERSPILL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPLOY_DIR="${OVERSPILL_DEPLOY_DIR:-$OVERSPILL_ROOT/.deploy}"
VENV="$DEPLOY_DIR/venv"
mkdir -p "$DEPLOY_DIR"

# Create the project venv and install the pinned requirements (idempotent, quiet).
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
  fi
  local stamp="$VENV/.requirements.sha"
  local want
  want="$(sha256sum "$OVERSPILL_ROOT/deploy/requirements.txt" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$OVERSPILL_ROOT/deploy/requirements.txt"
    echo "$want" > "$stamp"
  fi
}

# The Python package as users install it: the wheels deploy/wheels.sh builds for users (the
# engine's abi3 module and the `overspill` command, linked against glibc 2.17; the dev profile,
# in cargo's target/<triple>/debug), installed with pytest and mypy into a fresh venv
# (.deploy/wheel-venv) at requirements.txt's tested versions. The Python tests run there, never on
# the checkout's sources; tests/python/test_wheel.py installs the same wheels once more, as a user
# does.
WHEEL_VENV="$DEPLOY_DIR/wheel-venv"
ensure_wheel_venv() {
  local wheels="$DEPLOY_DIR/wheels" pip=(--quiet --disable-pip-version-check)
  rm -rf "$WHEEL_VENV" "$wheels"
  python3 -m venv "$WHEEL_VENV"
  "$OVERSPILL_ROOT/deploy/wheels.sh" --dev --out "$wheels"
  # Constraints take no extras: `pkg[extra]==v` pins `pkg==v`.
  sed 's/\[[^]]*\]//' "$OVERSPILL_ROOT/deploy/requirements.txt" > "$wheels/constraints.txt"
  # With every extra: each framework's integration and External Storage are tested (and typed)
  # too; `overspill-cli`, which the package requires, comes from the same directory.
  local wheel=("$wheels"/overspill-*.whl)
  local extras=openai-agents,external-storage,langgraph,deepagents,google-adk,strands
  "$WHEEL_VENV/bin/pip" install "${pip[@]}" -c "$wheels/constraints.txt" --find-links "$wheels" \
    "${wheel[0]}[$extras]" mcp pytest mypy
}

# Node.js 22 for the TypeScript package (workflows/typescript; its Temporal and AI SDK packages
# need >= 22.12, Debian offers 18): the npm package `node-linux-<arch>` carries the binary, so
# npm installs it into .deploy/node, again only when the version changes.
NODE_VERSION=22.23.5
NODE_BIN="$DEPLOY_DIR/node/node_modules/node-linux-$(uname -m | sed 's/x86_64/x64/; s/aarch64/arm64/')/bin"
ensure_node() {
  if [ "$("$NODE_BIN/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then return; fi
  if ! command -v npm >/dev/null; then apt-get install -y --no-install-recommends npm; fi
  rm -rf "$DEPLOY_DIR/node"
  npm install --silent --prefix "$DEPLOY_DIR/node" --no-save --no-package-lock --no-audit --no-fund \
    "$(basename "$(dirname "$NODE_BIN")")@$NODE_VERSION"
  "$NODE_BIN/node" --version >/dev/null
}

# The TypeScript package as its tests use it: its npm dependencies at package-lock.json's
# versions (`npm ci`, again only when the lock changes), its native addon built by @napi-rs/cli
# (a debug build in cargo's target dir, like the Python wheel's), and tsc's strict compile into
# dist/. npm and the package's scripts run on .deploy/node's Node 22.
TS_PACKAGE="$OVERSPILL_ROOT/workflows/typescript"
ensure_typescript() {
  ensure_node
  local stamp="$TS_PACKAGE/node_modules/.lock.sha" want
  want="$(sha256sum "$TS_PACKAGE/package-lock.json" | cut -d' ' -f1)"
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    (cd "$TS_PACKAGE" && PATH="$NODE_BIN:$PATH" npm ci --silent --no-audit --no-fund)
    echo "$want" > "$stamp"
  fi
  (cd "$TS_PACKAGE" && PATH="$NODE_BIN:$PATH" npm run --silent build)
}

# The pydantic-ai integration on the oldest releases the package declares (the lower bounds of
# pydantic-ai-harness and pydantic-ai-slim in workflows/python/pyproject.toml), the rest at
# requirements.txt's versions: the wheel ensure_wheel_venv built, with the `external-storage` extra
# (the pydantic-ai suites use External Storage), in .deploy/wheel-venv-lowest,
# where tests/integration/python.rs runs the pydantic-ai suites again.
LOWEST_WHEEL_VENV="$DEPLOY_DIR/wheel-venv-lowest"
ensure_lowest_wheel_venv() {
  local wheels="$DEPLOY_DIR/wheels" pip=(--quiet --disable-pip-version-check)
  rm -rf "$LOWEST_WHEEL_VENV"
  python3 -m venv "$LOWEST_WHEEL_VENV"
  "$LOWEST_WHEEL_VENV/bin/python" "$OVERSPILL_ROOT/deploy/lowest_constraints.py" \
    "$OVERSPILL_ROOT/workflows/python/pyproject.toml" "$wheels/constraints.txt" >"$wheels/constraints-lowest.txt"
  local wheel=("$wheels"/overspill-*.whl)
  "$LOWEST_WHEEL_VENV/bin/pip" install "${pip[@]}" -c "$wheels/constraints-lowest.txt" --find-links "$wheels" \
    "${wheel[0]}[external-storage]" pytest
}

# The benchmarks' venv: the reference (pydantic-ai-harness 0.62.0) alone, in .deploy/bench-venv.
BENCH_VENV="$DEPLOY_DIR/bench-venv"
ensure_bench_venv() {
  if [ ! -x "$BENCH_VENV/bin/python" ]; then python3 -m venv "$BENCH_VENV"; fi
  "$BENCH_VENV/bin/pip" install --quiet --disable-pip-version-check pydantic-ai-harness==0.62.0
}

# Wait until a command succeeds, up to $2 seconds.
wait_for() {
  local what="$1" seconds="$2"; shift 2
  for _ in $(seq 1 $((seconds * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "deploy: $what did not become ready within ${seconds}s" >&2
  return 1
}

# Whether the process whose pid is in file $1 is alive.
pid_running() {
  [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

# Stop service $1 whose pid is in file $2: TERM, up to 10 s, then KILL.
stop_pid() {
  local name="$1" pid_file="$2" pid
  if pid_running "$pid_file"; then
    pid="$(cat "$pid_file")"
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    echo "$name: stopped (pid $pid)"
  else
    echo "$name: not running"
  fi
  rm -f "$pid_file"
}

# The env file a service's start script writes: a Temporal server on a port other than 7233
# keeps its own (temporal-<port>.env), so several stacks can share one deploy dir.
env_file() {
  local port="${TEMPORAL_PORT:-7233}"
  if [ "$1" = temporal ] && [ "$port" != 7233 ]; then
    echo "$DEPLOY_DIR/temporal-$port.env"
  else
    echo "$DEPLOY_DIR/$1.env"
  fi
}
