#!/usr/bin/env bash
# Paging against pydantic-ai-harness 0.62.0, whole process, in one run; prints the table.
#   benches/paging.sh [--sizes 1,100,1000] [--runs 5] [--no-reference] [--reference-max-lines N]
# With `source .deploy/seaweedfs.env` first, SeaweedFS is measured beside file://.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
BENCH_VENV="$DEPLOY_DIR/bench-venv"
if [ ! -x "$BENCH_VENV/bin/python" ]; then python3 -m venv "$BENCH_VENV"; fi
"$BENCH_VENV/bin/pip" install --quiet --disable-pip-version-check pydantic-ai-harness==0.62.0
cd "$OVERSPILL_ROOT"
exec cargo bench --bench paging -- "$@"
