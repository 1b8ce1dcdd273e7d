#!/usr/bin/env bash
# A second SeaweedFS serving S3 over HTTPS with a private CA (deploy/certs.sh's), for the tests of
# `--store-ca-bundle` / `AWS_CA_BUNDLE`: deploy/seaweedfs.sh on SEAWEEDFS_HTTPS_PORT (8443), its
# state in .deploy/seaweedfs-https/, its variables (OVERSPILL_TEST_S3_HTTPS_ENDPOINT, …_CA, …_URL;
# the credentials are seaweedfs.sh's defaults) in .deploy/seaweedfs-https.env.
#
#   deploy/seaweedfs-https.sh start|stop|status
source "$(dirname "${BASH_SOURCE[0]}")/certs.sh"
ensure_certs
SEAWEEDFS_S3_PORT="${SEAWEEDFS_HTTPS_PORT:-8443}" SEAWEEDFS_DIR="$DEPLOY_DIR/seaweedfs-https" \
  SEAWEEDFS_ENV_FILE="$DEPLOY_DIR/seaweedfs-https.env" SEAWEEDFS_TLS_DIR="$TLS_DIR" \
  exec "$OVERSPILL_ROOT/deploy/seaweedfs.sh" "$@"
