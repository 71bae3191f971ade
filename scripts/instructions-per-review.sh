#!/usr/bin/env bash
# Instructions the whole server executes per admission review (every thread: TLS, HTTP/2, JSON,
# injection, patch, logs), counted by valgrind's callgrind, for a baseline and a new binary.
# Instruction counts do not depend on the machine's load, so this settles what
# scripts/cpu-per-injection.sh's CPU times cannot on a busy machine.
#
# For each binary and size class the server runs under callgrind twice, answering N1 and then N2
# reviews (h2load, 1 connection x 4 streams); per review = (Ir(N2) - Ir(N1)) / (N2 - N1), so
# start-up, certificate generation and shutdown cancel out. The count is exact for the
# instructions executed; the counts of two runs of one binary differ by thread interleaving only
# (reported as the spread of ROUNDS repeats).
#
# Usage: BASELINE_BIN=path [NEW_BIN=target/release/outrigger] scripts/instructions-per-review.sh
# Knobs: CLASSES ["hello env-400"], N1 [100], N2 [600], ROUNDS [1], PORT [19544], CONFIG_DIR as
# in cpu-per-injection.sh. Needs valgrind, h2load and a built review_floor example
# (cargo build --release -p outrigger-inject --example review_floor).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/serve.sh
CLASSES=${CLASSES:-"hello env-400"}
N1=${N1:-100}
N2=${N2:-600}
ROUNDS=${ROUNDS:-1}
PORT=${PORT:-19544}
target=${CARGO_TARGET_DIR:-$root/target}
NEW_BIN=${NEW_BIN:-$target/release/outrigger}
: "${BASELINE_BIN:?set BASELINE_BIN to the binary to compare against}"
floor_bin=$target/release/examples/review_floor
for t in valgrind h2load; do command -v $t >/dev/null || { echo "$t not found" >&2; exit 2; }; done
for b in "$BASELINE_BIN" "$NEW_BIN" "$floor_bin"; do
  [ -x "$b" ] || { echo "missing binary $b" >&2; exit 2; }
done
corpus=${OUTRIGGER_CORPUS:-$root/../shared/conformance/istio}
CONFIG_DIR=${CONFIG_DIR:-$corpus/settings/default}
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
corpus_config "$CONFIG_DIR" "$work"

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.0f\n", (v[NR/2]+v[NR/2+1])/2}'; }

# One server life under callgrind answering n reviews of class -> total instructions.
count() {
  local bin=$1 class=$2 n=$3
  rm -f "$work/server.log" "$work/ca.pem" "$work/cg.out"
  RUST_LOG=info valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" "$bin" serve \
    --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" --drain-delay 0s \
    --worker-threads 2 "${cfg[@]}" 2>"$work/server.log" &
  pid=$!
  wait_listening "$pid" "$work/server.log" 1200 0.1
  h2load -c 1 -m 4 -n "$n" -H 'content-type: application/json' -d "$work/$class.json" \
    "https://127.0.0.1:$PORT/inject" > "$work/h2load.out"
  grep -qE "^requests: $n total, $n started, $n done, $n succeeded" "$work/h2load.out" \
    || { cat "$work/h2load.out" >&2; exit 1; }
  kill -TERM "$pid"; wait "$pid" || true; pid=
  awk '/Collected :/ {print $NF}' "$work/server.log" | tail -1
}

echo "settings: $settings; N1=$N1 N2=$N2; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "baseline: $BASELINE_BIN"
echo "new:      $NEW_BIN"
printf '%-12s %-8s %5s %14s\n' class binary round instr/review
for class in $CLASSES; do
  "$floor_bin" "$class" "$work/$class.json" > /dev/null
  declare -A per=()
  for round in $(seq 1 "$ROUNDS"); do
    for which in baseline new; do
      bin=$BASELINE_BIN; [ "$which" = new ] && bin=$NEW_BIN
      a=$(count "$bin" "$class" "$N1"); b=$(count "$bin" "$class" "$N2")
      r=$(awk -v a="$a" -v b="$b" -v n1="$N1" -v n2="$N2" 'BEGIN {printf "%.0f", (b - a) / (n2 - n1)}')
      per[$which]+="$r "
      printf '%-12s %-8s %5s %14s\n' "$class" "$which" "$round" "$r"
    done
  done
  mb=$(printf '%s\n' ${per[baseline]} | median); mn=$(printf '%s\n' ${per[new]} | median)
  awk -v c="$class" -v b="$mb" -v n="$mn" \
    'BEGIN {printf "%-12s median baseline %.0f, new %.0f: new/baseline %.3fx\n", c, b, n, n / b}'
done
