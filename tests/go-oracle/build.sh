#!/usr/bin/env bash
# Build the Go oracle in GOPATH mode against Debian's packaged sources (no network):
#   apt-get install golang-go golang-k8s-sigs-yaml-dev golang-gopkg-yaml.v2-dev \
#     golang-github-masterminds-sprig-dev
# Output: target/go-oracle/go-oracle (or $1). Exits non-zero when Go or a package is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-$here/../../target/go-oracle/go-oracle}"
mkdir -p "$(dirname "$out")"
cd "$here"
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="${GOCACHE:-$here/../../target/go-oracle/cache}" \
  go build -o "$out" .
echo "built $out ($(go version))"
