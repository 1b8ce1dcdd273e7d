#!/usr/bin/env bash
# Overspill's token counting against OpenAI's tiktoken (Python) on the same corpus and
# vocabulary, in one run; prints the table. tiktoken is pinned in deploy/requirements.txt.
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
ensure_venv
cd "$OVERSPILL_ROOT"
exec "$VENV/bin/python" benches/tokens.py "$@"
