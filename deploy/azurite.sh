#!/usr/bin/env bash
# Start or stop a loopback Azurite (the Azure Blob Storage emulator) for the store tests.
#
#   deploy/azurite.sh start   # idempotent; installs the pinned azurite (deploy/azurite/package-lock.json)
#                             # into .deploy/azurite with `npm ci`, starts azurite-blob on 127.0.0.1,
#                             # creates the container `spills` and writes .deploy/azurite.env
#   deploy/azurite.sh stop    # stops the server this script started
#   deploy/azurite.sh status  # exit 0 when the blob endpoint answers
#
# Environment (optional): AZURITE_PORT (default 10000), AZURITE_CONTAINER (default spills).
# The account is the emulator's well-known devstoreaccount1 and its published key.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT="${AZURITE_PORT:-10000}"
CONTAINER="${AZURITE_CONTAINER:-spills}"
ACCOUNT=devstoreaccount1
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
AZ_DIR="$DEPLOY_DIR/azurite"
PID_FILE="$AZ_DIR/azurite.pid"
ENV_FILE="$DEPLOY_DIR/azurite.env"
ENDPOINT="http://127.0.0.1:$PORT"

# Create the container with a SharedKey-signed request (201 created, 409 already there).
# Standard library only; exit 0 when the container exists.
ensure_container() {
  python3 - "$ENDPOINT" "$ACCOUNT" "$KEY" "$CONTAINER" <<'PY'
import base64, email.utils, hashlib, hmac, sys, urllib.error, urllib.request
endpoint, account, key, container = sys.argv[1:5]
headers = {"x-ms-date": email.utils.formatdate(usegmt=True), "x-ms-version": "2021-08-06",
           "Content-Type": "application/octet-stream"}
canonical = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()) if k.startswith("x-ms-"))
to_sign = ("PUT\n\n\n\n\napplication/octet-stream\n\n\n\n\n\n\n" + canonical
           + f"/{account}/{account}/{container}\nrestype:container")
signature = base64.b64encode(hmac.new(base64.b64decode(key), to_sign.encode(), hashlib.sha256).digest())
headers["Authorization"] = f"SharedKey {account}:{signature.decode()}"
request = urllib.request.Request(f"{endpoint}/{account}/{container}?restype=container",
                                 method="PUT", headers=headers, data=b"")
try:
    urllib.request.urlopen(request, timeout=2)
except urllib.error.HTTPError as e:
    sys.exit(0 if e.code == 409 else 1)
except Exception:
    sys.exit(1)
PY
}

write_env() {
  cat > "$ENV_FILE" <<EOF2
# Written by deploy/azurite.sh: source it before running the store tests.
export AZURE_STORAGE_USE_EMULATOR=true
export AZURITE_BLOB_STORAGE_URL=$ENDPOINT
export AZURE_STORAGE_ACCOUNT_NAME=$ACCOUNT
export AZURE_STORAGE_ACCOUNT_KEY=$KEY
export OVERSPILL_TEST_AZURE_URL=az://$CONTAINER
EOF2
}

running() {
  pid_running "$PID_FILE"
}

install() {
  mkdir -p "$AZ_DIR"
  local stamp="$AZ_DIR/.lock.sha" want
  want="$(sha256sum "$OVERSPILL_ROOT/deploy/azurite/package-lock.json" | cut -d' ' -f1)"
  if [ ! -x "$AZ_DIR/node_modules/.bin/azurite-blob" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    cp "$OVERSPILL_ROOT/deploy/azurite/package.json" "$OVERSPILL_ROOT/deploy/azurite/package-lock.json" "$AZ_DIR/"
    (cd "$AZ_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$want" > "$stamp"
  fi
}

start() {
  if running && ensure_container; then
    write_env
    echo "azurite: already running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
    return 0
  fi
  install
  mkdir -p "$AZ_DIR/data"
  nohup "$AZ_DIR/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$PORT" \
    --location "$AZ_DIR/data" --skipApiVersionCheck --silent \
    > "$AZ_DIR/azurite.log" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  if ! wait_for "Azurite on $ENDPOINT" 60 ensure_container; then
    tail -n 30 "$AZ_DIR/azurite.log" >&2 || true
    return 1
  fi
  write_env
  echo "azurite: running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

stop() {
  stop_pid azurite "$PID_FILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) running && ensure_container ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
