#!/usr/bin/env bash
# `overspill query` (query_tool_result) against jq itself (Debian's `jq`, installed here if
# missing) on the same files, each a whole process: wall time (median of RUNS) and peak RSS
# (`/usr/bin/time -f %M`). Rows: a filter over a 100 MB JSON Lines spill and a 20 MB JSON
# document, then `overspill query` alone over a 1 GB JSON Lines spill (target: under 64 MiB).
# The spills are files in a `file://` store (the CLI reads them as the worker does); jq reads the same files.
#   benches/query.sh            # builds the release binary first
#   RUNS=3 benches/query.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RUNS="${RUNS:-3}"
cd "$ROOT"
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
cargo build --release --bin overspill
BIN="$ROOT/target/release/overspill"
# The 30 s runaway-filter deadline guards a worker; a 1 GB spill on a loaded machine may need more.
export OVERSPILL_QUERY_DEADLINE_SECS="${OVERSPILL_QUERY_DEADLINE_SECS:-600}"
WORK="$(mktemp -d /tmp/overspill-query-bench.XXXXXX)"
trap 'rm -rf "$WORK"' EXIT
mkdir -m 700 -p "$WORK/store/tool_output_limits/bench"

python3 - "$WORK/store/tool_output_limits/bench" <<'PY'
import json, sys
out = sys.argv[1]
def record(i):
    return {"id": i, "status": "failed" if i % 1000 == 7 else "ok", "user": {"name": f"u{i % 977}", "tags": ["a", "b", str(i % 13)]}, "latency_ms": i % 250, "msg": "request served " + "x" * (i % 40)}
def lines(path, mb):
    with open(path, "w") as f:
        i, size, target = 0, 0, mb * 10**6
        while size < target:
            line = json.dumps(record(i), separators=(",", ":")) + "\n"
            f.write(line); size += len(line); i += 1
lines(f"{out}/lines-100mb.0", 100)
items, size, i = [], 0, 0
while size < 12_200_000:  # about 20 MB once indented
    r = record(i); items.append(r); size += len(json.dumps(r)) + 8; i += 1
with open(f"{out}/doc-20mb.0", "w") as f:
    json.dump({"items": items, "count": len(items)}, f, indent=2)
with open(f"{out}/lines-100mb.0") as src, open(f"{out}/lines-1gb.0", "w") as dst:
    block = src.read()
    for _ in range(10):
        dst.write(block)
PY

# timed CMD... : "wall_ms rss_mib" (median wall of RUNS, max RSS), output to $WORK/out
timed() {
  local walls=() rss=0
  for _ in $(seq "$RUNS"); do
    local start end
    start=$(date +%s%N)
    /usr/bin/time -f %M -o "$WORK/rss" "$@" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
    end=$(date +%s%N)
    walls+=($(( (end - start) / 1000000 )))
    local r; r=$(tail -n1 "$WORK/rss")
    (( r > rss )) && rss=$r
  done
  local median; median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
  echo "$median $(( rss / 1024 ))"
}

row() {  # label file filter (jq's filter; overspill's is the same)
  local label=$1 file=$2 filter=$3 ours theirs
  ours=$(timed "$BIN" query "bench/$file" "$filter" --store "file://$WORK/store")
  local first; first=$(head -n1 "$WORK/out")
  if [[ $4 == both ]]; then
    theirs=$(timed jq -c "$filter" "$WORK/store/tool_output_limits/bench/$file")
  else
    theirs="- -"
  fi
  read -r ow orss <<<"$ours"; read -r tw trss <<<"$theirs"
  printf '| %s | `%s` | %s | %s | %s | %s |\n' "$label" "$filter" "$ow" "$orss" "$tw" "$trss"
  echo "    $first" >&2
}

echo "| spill | filter | overspill ms | overspill MiB | jq ms | jq MiB |"
echo "|---|---|---:|---:|---:|---:|"
row "100 MB JSON Lines" lines-100mb.0 'select(.status == "failed") | .id' both
row "100 MB JSON Lines" lines-100mb.0 '.user.name' both
row "20 MB JSON document" doc-20mb.0 '.items[] | select(.status == "failed") | .id' both
row "20 MB JSON document" doc-20mb.0 '.items | length' both
row "1 GB JSON Lines" lines-1gb.0 'select(.status == "failed") | .id' ours
