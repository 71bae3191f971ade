#!/usr/bin/env bash
# drift --kube and preview --kube shown linear in the number of pods (Deployments): each scale
# run (drift_kube's scale_ten_thousand_pods, preview_kube's scale_ten_thousand_deployments, the
# fake API server paging 500 at a time) at N1 and N2 objects, RUNS times each, interleaved, by
# the release binary. Prints each run's figures (the outrigger process' own wall, user and system
# time, peak RSS, by /usr/bin/time), then per command and size the medians of CPU (user+system)
# and peak RSS, the CPU ratio N2/N1 (2.0 is linear for N2 = 2 N1) and the CPU and memory
# extrapolated to TARGET objects (CPU by the per-object slope between N1 and N2, RSS likewise,
# never below the RSS at N2: a page at a time, it is flat and its slope is noise).
# With OUTRIGGER_BASE_BIN (an older build, e.g. main's tip built in a scratch target dir), each
# run also runs that binary right after the new one on the same cluster size, and the summary
# gives both and the new/old CPU ratio measured in the same run. NO_BUILD=1 uses the binary
# built already (as CARGO_TARGET_DIR's release/outrigger). ONLY=drift or ONLY=preview runs one
# command's test (two such invocations may run side by side).
# Usage: scripts/scale-linearity.sh [N1 [N2 [RUNS [TARGET]]]] (defaults 5000 10000 3 150000).
set -euo pipefail
cd "$(dirname "$0")/.."
n1=${1:-5000} n2=${2:-10000} runs=${3:-3} target=${4:-150000}
[ -n "${NO_BUILD:-}" ] || cargo build --release -p outrigger
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/outrigger"
bins="new=$bin"
[ -z "${OUTRIGGER_BASE_BIN:-}" ] || bins="$bins old=$OUTRIGGER_BASE_BIN"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for run in $(seq "$runs"); do
  for n in "$n1" "$n2"; do
    for t in "drift_kube scale_ten_thousand_pods" "preview_kube scale_ten_thousand_deployments"; do
      set -- $t
      case "${ONLY:-}" in "" | "${1%_kube}") ;; *) continue ;; esac
      for b in $bins; do
        line=$(OUTRIGGER_SCALE_BIN="${b#*=}" OUTRIGGER_SCALE_COUNT="$n" \
          cargo test -q -p outrigger --test "$1" -- --ignored --nocapture "$2" 2>/dev/null \
          | grep '^SCALE ')
        echo "${b%%=*} $1 n=$n run=$run: $line"
        echo "${b%%=*} $1 $n $line" >>"$out"
      done
    done
  done
done
python3 - "$out" "$n1" "$n2" "$target" <<'PY'
import re, statistics, sys
path, n1, n2, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
runs = {}
for line in open(path):
    label, test, n, rest = line.split(" ", 3)
    m = re.search(r"user ([\d.]+) s, system ([\d.]+) s, peak RSS (\d+) KiB", rest)
    runs.setdefault((label, test, int(n)), []).append((float(m[1]) + float(m[2]), int(m[3]) / 1024))
cpus = {}
for label, test in sorted({(l, t) for l, t, _ in runs}):
    cpu = {n: statistics.median(c for c, _ in runs[(label, test, n)]) for n in (n1, n2)}
    rss = {n: statistics.median(r for _, r in runs[(label, test, n)]) for n in (n1, n2)}
    cpus[(label, test)] = cpu
    slope_cpu = (cpu[n2] - cpu[n1]) / (n2 - n1)
    slope_rss = (rss[n2] - rss[n1]) / (n2 - n1)
    print(f"{label} {test}: median CPU {cpu[n1]:.2f} s at {n1}, {cpu[n2]:.2f} s at {n2} "
          f"(ratio {cpu[n2] / cpu[n1]:.2f}); median peak RSS {rss[n1]:.1f} MiB, {rss[n2]:.1f} MiB; "
          f"at {target}: CPU ~{cpu[n2] + slope_cpu * (target - n2):.1f} s, "
          f"peak RSS ~{max(rss[n2], rss[n2] + slope_rss * (target - n2)):.0f} MiB")
for test in sorted({t for l, t in cpus if l == "old"}):
    new, old = cpus[("new", test)], cpus[("old", test)]
    print(f"{test}: new/old median CPU " +
          ", ".join(f"{new[n] / old[n]:.2f} at {n}" for n in (n1, n2)))
PY
