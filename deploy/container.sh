#!/usr/bin/env bash
# Build the worker image from a binary built here (deploy/Containerfile, on `scratch`).
#
#   deploy/container.sh build [BINARY] [TAG]
#       BINARY  default target/release/overspill (the tests pass the debug one)
#       TAG     default localhost/overspill:dev
#   deploy/container.sh podman ARGS...   # podman with this host's settings (`podman.sh`)
#
# Assembles the root file system under .deploy/image/ (the binary without its debug info, the
# shared libraries `ldd` lists, the system's CA bundle, /tmp), then `podman build`s it with the
# host settings from deploy/podman.sh (installed when missing).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Load (and on first use install) podman's settings for this host.
settings() {
  [ -f "$DEPLOY_DIR/podman.env" ] || "$OVERSPILL_ROOT/deploy/podman.sh" install >&2
  # shellcheck disable=SC1091
  source "$DEPLOY_DIR/podman.env"
}

build() {
  local binary="${1:-$OVERSPILL_ROOT/target/release/overspill}" tag="${2:-localhost/overspill:dev}"
  [ -x "$binary" ] || { echo "container: no binary at $binary (cargo build --release --bin overspill)" >&2; return 1; }
  settings
  local context
  context="$(mktemp -d "$DEPLOY_DIR/image.XXXXXX")"
  trap 'rm -rf "$context"' RETURN
  local root="$context/rootfs"
  mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp"
  chmod 1777 "$root/tmp"
  objcopy --strip-debug "$binary" "$root/usr/local/bin/overspill"
  # Every library the dynamic linker resolves, at the path it resolves it to (the loader included).
  ldd "$binary" | grep -o '/[^ ]*' | sort -u | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  # shellcheck disable=SC2086
  podman $PODMAN_FLAGS build --quiet -f "$OVERSPILL_ROOT/deploy/Containerfile" -t "$tag" "$context"
}

case "${1:-}" in
  build) shift; build "$@" ;;
  # shellcheck disable=SC2086
  podman) shift; settings; exec podman $PODMAN_FLAGS "$@" ;;
  *) echo "usage: $0 build [BINARY] [TAG] | podman ARGS..." >&2; exit 2 ;;
esac
