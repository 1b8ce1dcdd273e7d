#!/usr/bin/env bash
# `overspill grep` against GNU `grep -n -C2` on the same 100 MB log, side by side in one run
# (see grep.py). Builds the release binary first.
#   benches/grep.sh [--mb 100] [--runs 5]
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
ensure_bench_venv  # compare.py's log generator imports the reference
cd "$OVERSPILL_ROOT"
cargo build --release --bin overspill
exec "$BENCH_VENV/bin/python" benches/grep.py "$@"
