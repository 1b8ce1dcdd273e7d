#!/usr/bin/env bash
# Paging against pydantic-ai-harness 0.62.0, whole process, in one run; prints the table.
#   benches/paging.sh [--sizes 1,100,1000] [--runs 5] [--no-reference] [--reference-max-lines N]
# With `source .deploy/seaweedfs.env` first, SeaweedFS is measured beside file://.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
ensure_bench_venv
cd "$OVERSPILL_ROOT"
exec cargo bench --bench paging -- "$@"
