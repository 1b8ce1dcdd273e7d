#!/usr/bin/env bash
# Podman and runc for the container test (Debian's packages), with the settings this kind of host
# needs, and the env file the tests read.
#
#   deploy/podman.sh install   # idempotent: apt-get installs podman and runc when missing, writes
#                              # .deploy/podman/containers.conf and .deploy/podman.env
#
# Two settings: `default_ulimits = []` (podman's default ulimits make `setrlimit RLIMIT_NOFILE`
# fail in a container here) and `--runtime runc` (crun refuses the host's hybrid cgroups). Source
# .deploy/podman.env, then run `podman $PODMAN_FLAGS …`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PODMAN_DIR="$DEPLOY_DIR/podman"
ENV_FILE="$DEPLOY_DIR/podman.env"

install() {
  if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
    if [ "$(id -u)" != 0 ]; then
      echo "podman: podman and runc are missing; install them as root (apt-get install podman runc)" >&2
      return 1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc >/dev/null
  fi
  mkdir -p "$PODMAN_DIR"
  cat > "$PODMAN_DIR/containers.conf" <<CONF
[containers]
default_ulimits = []
CONF
  cat > "$ENV_FILE" <<ENV
# Written by deploy/podman.sh: podman's settings for this host.
export CONTAINERS_CONF=$PODMAN_DIR/containers.conf
export PODMAN_FLAGS="--runtime runc"
ENV
  echo "podman: $(podman --version), runc $(runc --version | awk 'NR == 1 {print $3}'); env in $ENV_FILE"
}

case "${1:-install}" in
  install) install ;;
  *) echo "usage: $0 install" >&2; exit 2 ;;
esac
