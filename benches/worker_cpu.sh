#!/usr/bin/env bash
# Worker CPU per activity, Overspill against Python workers in one run (see worker_cpu.py).
# Builds the release binary (unless `--bin PATH` names one), starts the dev server
# (TEMPORAL_PORT) if none answers, and runs the bench with the project venv's temporalio and
# pydantic-ai-harness. Arguments go to worker_cpu.py.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
cd "$OVERSPILL_ROOT"
ensure_venv
case " $* " in
  *" --bin "* | *" --bin="*) ;;
  *) cargo build --release --bin overspill ;;
esac
deploy/temporal.sh start
# shellcheck disable=SC1090
source "$(env_file temporal)"
exec "$VENV/bin/python" benches/worker_cpu.py "$@"
