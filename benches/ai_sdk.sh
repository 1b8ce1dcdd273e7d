#!/usr/bin/env bash
# The AI SDK on Temporal (`@temporalio/ai-sdk`) with and without Overspill's TypeScript package:
# an agent whose tool returns 200,000 chars a call, called 100 times by a scripted model
# (`MockLanguageModelV4`, returning the request and response bodies a real provider returns),
# then answering. Prints the table of benches/README.md ("The AI SDK on Temporal"): how each run
# ended, tool and model calls, the history (the server's historySizeBytes), the largest model-call
# input recorded and the chars of model-visible text sent.
#
# Needs the Temporal dev server and SeaweedFS (deploy/temporal.sh, deploy/seaweedfs.sh and their
# .deploy/*.env); builds the debug `overspill` binary and the package (as the test command does).
# Arguments go to the bench: --calls 100 --chars 200000 --setups plain,source,masking,bodies
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/lib.sh"
cd "$OVERSPILL_ROOT"
for svc in seaweedfs temporal; do
  # shellcheck disable=SC1090
  source "$(env_file "$svc")"
done
cargo build -p overspill-cli
ensure_typescript
target="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
cd "$TS_PACKAGE"
OVERSPILL_BIN="$target/debug/overspill" "$NODE_BIN/node" build/test/bench.js "$@"
