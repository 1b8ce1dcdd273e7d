#!/usr/bin/env bash
# `overspill reduce` as a whole process against pydantic-ai-harness 0.62.0 in-process, in one run
# (see cli.py). Builds the release binary first.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
ensure_bench_venv
cd "$OVERSPILL_ROOT"
cargo build --release --bin overspill
exec "$BENCH_VENV/bin/python" benches/cli.py "$@"
