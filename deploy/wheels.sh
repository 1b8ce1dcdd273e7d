#!/usr/bin/env bash
# The Python distributions a user installs without Rust, written to dist/ (or --out DIR):
#
#   overspill       the engine as one abi3 module for every CPython from 3.10 (workflows/python)
#   overspill-cli   the `overspill` command (src/cli), on which `overspill` depends
#
# each as a wheel and an sdist. On Linux the wheels are linked by zig (PyPI's `ziglang`, from
# deploy/requirements.txt) against glibc 2.17 (manylinux_2_17, `manylinux2014`), or musl 1.2 for a
# musl target, and `auditwheel show` must find each one so tagged (or older), else this fails.
#
#   deploy/wheels.sh                 release wheels for this machine's Linux (slow: fat LTO)
#   deploy/wheels.sh --dev           dev-profile wheels, stripped (what the tests install)
#   deploy/wheels.sh --target T      wheels for target triple T, on a machine whose rustup has its
#                                    standard library (deploy/README.md, *Wheels*)
#   deploy/wheels.sh --out DIR       write to DIR instead of dist/
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$OVERSPILL_ROOT"

profile=release out="$OVERSPILL_ROOT/dist" target=""
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dev) profile=dev ;;
    --out) out="$2"; shift ;;
    --target) target="$2"; shift ;;
    *) echo "usage: deploy/wheels.sh [--dev] [--target TRIPLE] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done

ensure_venv
# maturin runs zig through the venv's `ziglang`, and auditwheel from it.
export PATH="$VENV/bin:$PATH"
mkdir -p "$out"

# How the wheels are linked, and the newest platform tag they may carry.
build=(--profile "$profile" --strip)
case "${target:-linux-gnu}" in
  *linux-musl*) build+=(--zig --compatibility musllinux_1_2); newest=musllinux_1_2 ;;
  *linux*) build+=(--zig --compatibility manylinux2014); newest=manylinux_2_17 ;;
  *) newest="" ;;  # macOS, Windows: built natively, no auditwheel
esac
if [ -n "$target" ]; then build+=(--target "$target"); fi

for manifest in workflows/python/Cargo.toml src/cli/Cargo.toml; do
  maturin build --quiet "${build[@]}" -m "$manifest" -o "$out"
  maturin sdist -m "$manifest" -o "$out"
done

# Every wheel's platform tag, as auditwheel reads the symbols its binaries need.
if [ -n "$newest" ]; then
  for wheel in "$out"/*.whl; do
    shown=$(auditwheel show "$wheel")
    # auditwheel wraps its lines: the tag may follow on the next one.
    tag=$(tr '\n' ' ' <<<"$shown" | grep -o 'consistent with the following platform tag: *"[^"]*"' | cut -d'"' -f2)
    echo "$(basename "$wheel"): $tag"
    if ! python3 - "$tag" "$newest" <<'PY'
import re, sys
def version(tag):
    found = re.fullmatch(r'(manylinux|musllinux)_(\d+)_(\d+)(_\w+)?', tag or '')
    return (found[1], int(found[2]), int(found[3])) if found else None
tag, newest = version(sys.argv[1]), version(sys.argv[2])
sys.exit(0 if tag and tag[0] == newest[0] and tag[1:] <= newest[1:] else 1)
PY
    then
      echo "deploy/wheels.sh: $(basename "$wheel") is $tag, newer than $newest:" >&2
      echo "$shown" >&2
      exit 1
    fi
  done
fi
