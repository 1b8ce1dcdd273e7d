#!/usr/bin/env bash
# Make the private TLS material the TLS tests use (idempotent), under .deploy/tls/:
#
#   ca.pem / ca.key                 a private CA
#   server.pem / server.key         signed by it, for DNS:localhost and IP:127.0.0.1
#   client.pem / client.key         signed by it, for client authentication (mTLS)
#   other-ca.pem / other-ca.key     a second CA nothing trusts (an "untrusted server" test)
#   wrong-name.pem / wrong-name.key signed by ca.pem for DNS:wrong.example only
#
# Every leaf is X.509 v3 (rustls refuses v1 certificates). Needs only `openssl`.
#   deploy/certs.sh         # prints the directory
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TLS_DIR="$DEPLOY_DIR/tls"

# Install Debian packages "$@" (as root, or through sudo), running `apt-get update` first once.
apt_install() {
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  if [ ! -f "$DEPLOY_DIR/.apt-updated" ]; then
    "${sudo[@]}" apt-get update -qq && touch "$DEPLOY_DIR/.apt-updated"
  fi
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "$@" >/dev/null
}

# A self-signed CA $1 (file stem) named $2.
make_ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=$2" \
    -keyout "$TLS_DIR/$1.key" -out "$TLS_DIR/$1.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
}

# A leaf $1 (file stem) named $2, signed by ca.pem, with the v3 extensions in $3.
make_leaf() {
  local ext="$TLS_DIR/$1.ext"
  printf '%s\n' "$3" > "$ext"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" \
    -keyout "$TLS_DIR/$1.key" -out "$TLS_DIR/$1.csr" 2>/dev/null
  openssl x509 -req -in "$TLS_DIR/$1.csr" -CA "$TLS_DIR/ca.pem" -CAkey "$TLS_DIR/ca.key" \
    -CAcreateserial -days 3650 -extfile "$ext" -out "$TLS_DIR/$1.pem" 2>/dev/null
  rm -f "$TLS_DIR/$1.csr" "$ext"
}

ensure_certs() {
  [ -f "$TLS_DIR/wrong-name.pem" ] && return 0
  command -v openssl >/dev/null || apt_install openssl
  rm -rf "$TLS_DIR.tmp" && mkdir -p "$TLS_DIR.tmp"
  local final="$TLS_DIR"
  TLS_DIR="$TLS_DIR.tmp"
  make_ca ca "Overspill test CA"
  make_ca other-ca "Overspill untrusted CA"
  local leaf="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment"
  make_leaf server localhost "$leaf
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1"
  make_leaf client overspill-worker "$leaf
extendedKeyUsage=clientAuth"
  make_leaf wrong-name wrong.example "$leaf
extendedKeyUsage=serverAuth
subjectAltName=DNS:wrong.example"
  chmod 600 "$TLS_DIR"/*.key
  # Appear whole or not at all: a concurrent start never sees half the files.
  TLS_DIR="$final"
  rm -rf "$TLS_DIR" && mv "$TLS_DIR.tmp" "$TLS_DIR"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  ensure_certs
  echo "$TLS_DIR"
fi
