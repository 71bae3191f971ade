#!/usr/bin/env bash
# `outrigger preview -f` at scale: N Deployments [10000] from scripts/gen-large-manifests.py's
# generator, the corpus' chart defaults in force against release 1.26.8's configuration as the
# candidate, `-o json`, by the release binary. Prints the wall and CPU time and the peak resident
# set (/usr/bin/time -v) and the load average. Then `preview --kube` over 10,000 realistic
# Deployments (3 containers, env, probes, 4 KB of managedFields) read through the tests' fake API
# server, 500 a page (tests/preview_kube.rs, scale_ten_thousand_deployments; SKIP_KUBE=1 skips
# it). Target (issue 20): under 5 s and 200 MiB on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-10000}
corpus=${OUTRIGGER_CORPUS:-../shared/conformance/istio}
[ -f "$corpus/cases.json" ] || { echo "Istio's corpus not found at $corpus" >&2; exit 2; }
[ -n "${NO_BUILD:-}" ] || cargo build --release -p outrigger
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$dir/deployments.yaml" "$N" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("g", "scripts/gen-large-manifests.py")
g = importlib.util.module_from_spec(spec)
spec.loader.exec_module(g)
g.deployments(int(sys.argv[2]), sys.argv[1])
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
d=$corpus/settings/default r=$corpus/releases/1.26.8
status=0
/usr/bin/time -v "${CARGO_TARGET_DIR:-$PWD/target}/release/outrigger" preview -f "$dir/deployments.yaml" -o json \
  --injectConfigFile "$d/config.yaml" --valuesFile "$d/values.json" --meshConfigFile "$d/mesh.yaml" \
  --candidateInjectConfigFile "$r/config.yaml" --candidateValuesFile "$r/values.json" \
  > "$dir/preview.json" 2> "$dir/time.txt" || status=$?
# Exit status 1 means "changes" (expected here); anything else is a failure.
[ "$status" -le 1 ] || { cat "$dir/time.txt" >&2; exit "$status"; }
grep -E 'Elapsed|User time|System time|Maximum resident' "$dir/time.txt"
echo "workloads previewed: $(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$dir/preview.json")"
[ -n "${SKIP_KUBE:-}" ] || OUTRIGGER_SCALE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/release/outrigger" \
  cargo test -p outrigger --test preview_kube -- --ignored --nocapture scale_ten_thousand_deployments
