#!/usr/bin/env bash
# Overspill against pydantic-ai-harness 0.62.0 on the same inputs, in one run; prints the ratio table.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
BENCH_VENV="$DEPLOY_DIR/bench-venv"
if [ ! -x "$BENCH_VENV/bin/python" ]; then python3 -m venv "$BENCH_VENV"; fi
"$BENCH_VENV/bin/pip" install --quiet --disable-pip-version-check pydantic-ai-harness==0.62.0
cd "$OVERSPILL_ROOT"
exec "$BENCH_VENV/bin/python" benches/compare.py "$@"
