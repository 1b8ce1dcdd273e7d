#!/usr/bin/env bash
# Start or stop nginx as a TLS-terminating gRPC proxy in front of the Temporal dev server, for the
# tests of the worker's TLS, mTLS and API-key paths.
#
#   deploy/nginx.sh start   # idempotent; installs Debian's nginx-light if missing, makes the
#                           # certificates (deploy/certs.sh), starts nginx, waits for its
#                           # listeners, writes .deploy/nginx.env (source it before `cargo test`)
#   deploy/nginx.sh stop    # stops the nginx this script started
#   deploy/nginx.sh status  # exit 0 when it runs and listens
#
# Listeners, all on 127.0.0.1, all proxying to $TEMPORAL_ADDRESS (default 127.0.0.1:7233):
#   NGINX_MTLS_PORT (7443)        TLS with a client certificate required (mTLS)
#   NGINX_API_KEY_PORT (7444)     TLS; answers HTTP 401 unless `authorization: Bearer <key>`
#   NGINX_WRONG_NAME_PORT (7445)  TLS with a certificate for wrong.example (a name mismatch)
# The API key is NGINX_API_KEY (default overspill-test-key). Config, logs and the pid file live
# under .deploy/nginx/.
source "$(dirname "${BASH_SOURCE[0]}")/certs.sh"

MTLS_PORT="${NGINX_MTLS_PORT:-7443}"
API_KEY_PORT="${NGINX_API_KEY_PORT:-7444}"
WRONG_NAME_PORT="${NGINX_WRONG_NAME_PORT:-7445}"
API_KEY="${NGINX_API_KEY:-overspill-test-key}"
UPSTREAM="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
UPSTREAM="${UPSTREAM#*://}"
NGINX_DIR="$DEPLOY_DIR/nginx"
CONF="$NGINX_DIR/nginx.conf"
PID_FILE="$NGINX_DIR/nginx.pid"
ENV_FILE="$DEPLOY_DIR/nginx.env"

nginx_bin() {
  command -v nginx || echo /usr/sbin/nginx
}

write_conf() {
  local t="$TLS_DIR"
  mkdir -p "$NGINX_DIR"
  cat > "$CONF" <<CONF
worker_processes 1;
pid $PID_FILE;
error_log $NGINX_DIR/error.log;
events {}
http {
  access_log $NGINX_DIR/access.log;
  client_body_temp_path $NGINX_DIR/body; proxy_temp_path $NGINX_DIR/proxy;
  fastcgi_temp_path $NGINX_DIR/fcgi; uwsgi_temp_path $NGINX_DIR/uwsgi;
  scgi_temp_path $NGINX_DIR/scgi;
  # Long polls: Temporal holds a task poll open for up to a minute.
  grpc_read_timeout 120s; grpc_send_timeout 120s; client_max_body_size 0;
  server {
    listen 127.0.0.1:$MTLS_PORT ssl http2;
    ssl_certificate $t/server.pem; ssl_certificate_key $t/server.key;
    ssl_client_certificate $t/ca.pem; ssl_verify_client on;
    location / { grpc_pass grpc://$UPSTREAM; }
  }
  server {
    listen 127.0.0.1:$API_KEY_PORT ssl http2;
    ssl_certificate $t/server.pem; ssl_certificate_key $t/server.key;
    location / {
      if (\$http_authorization != "Bearer $API_KEY") { return 401; }
      grpc_pass grpc://$UPSTREAM;
    }
  }
  server {
    listen 127.0.0.1:$WRONG_NAME_PORT ssl http2;
    ssl_certificate $t/wrong-name.pem; ssl_certificate_key $t/wrong-name.key;
    location / { grpc_pass grpc://$UPSTREAM; }
  }
}
CONF
}

write_env() {
  cat > "$ENV_FILE" <<ENV
# Written by deploy/nginx.sh: source it before running the TLS tests.
export OVERSPILL_TEST_TLS_DIR=$TLS_DIR
export OVERSPILL_TEST_TEMPORAL_MTLS=https://localhost:$MTLS_PORT
export OVERSPILL_TEST_TEMPORAL_API_KEY_URL=https://localhost:$API_KEY_PORT
export OVERSPILL_TEST_TEMPORAL_API_KEY=$API_KEY
export OVERSPILL_TEST_TEMPORAL_WRONG_NAME=https://localhost:$WRONG_NAME_PORT
ENV
}

# Every listener accepts a TCP connection.
listening() {
  local port
  for port in "$MTLS_PORT" "$API_KEY_PORT" "$WRONG_NAME_PORT"; do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || return 1
  done
}

running() {
  pid_running "$PID_FILE"
}

start() {
  [ -x "$(nginx_bin)" ] || apt_install nginx-light
  ensure_certs
  if running && listening; then
    write_env
    echo "nginx: already running (pid $(cat "$PID_FILE")); env in $ENV_FILE"
    return 0
  fi
  write_conf
  "$(nginx_bin)" -t -q -c "$CONF" -e "$NGINX_DIR/error.log"
  "$(nginx_bin)" -c "$CONF" -e "$NGINX_DIR/error.log"
  if ! wait_for "nginx on :$MTLS_PORT/:$API_KEY_PORT/:$WRONG_NAME_PORT" 20 listening; then
    tail -n 20 "$NGINX_DIR/error.log" >&2 || true
    return 1
  fi
  write_env
  echo "nginx: proxying TLS :$MTLS_PORT (mTLS) :$API_KEY_PORT (API key) :$WRONG_NAME_PORT" \
    "(wrong name) to $UPSTREAM (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

stop() {
  stop_pid nginx "$PID_FILE"
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) running && listening ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
