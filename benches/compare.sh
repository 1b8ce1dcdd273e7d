#!/usr/bin/env bash
# Overspill against pydantic-ai-harness 0.62.0 on the same inputs, in one run; prints the ratio table.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
ensure_bench_venv
cd "$OVERSPILL_ROOT"
exec "$BENCH_VENV/bin/python" benches/compare.py "$@"
