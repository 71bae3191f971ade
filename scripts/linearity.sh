#!/usr/bin/env bash
# Linear in the pod (issue 33, item 3), over the full range: the instructions of one
# AdmissionReview (decode, decide, render, merge, finish, patch, response: webhook::review, in
# process) for pods of N containers (`containers-N`: 10 env vars, a port and a readiness probe
# each), counted by callgrind over examples/review_instructions.rs (the optimised build with
# symbols), for N = 16, 32, ..., 8192 and 5,000 -> 10,000. Prints each count, the ratio for 2N
# against N (2.0 is linear; the bound is 2.2) and the instructions per container. Deterministic
# (instruction counts do not depend on the machine's load); tests/linearity.rs asserts the same
# bound on the unoptimised test build for 16 to 512 containers.
# Usage: scripts/linearity.sh [BIN] (default: builds the example with --profile bench).
# Knobs: SIZES ["16 32 ... 8192"], PAIRS ["5000:10000"]. Needs valgrind.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
bin=${1:-}
if [ -z "$bin" ]; then
  cargo build -q --profile bench -p outrigger-inject --example review_instructions
  bin="${CARGO_TARGET_DIR:-$root/target}/release/examples/review_instructions"
fi
SIZES=${SIZES:-"16 32 64 128 256 512 1024 2048 4096 8192"}
PAIRS=${PAIRS:-"5000:10000"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# count N -> instructions inside review_instructions::measured for containers-N.
count() {
  valgrind --tool=callgrind --callgrind-out-file="$work/cg.out" --collect-atstart=no \
    --toggle-collect='review_instructions::measured' "$bin" "containers-$1" \
    >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
  awk '/Collected :/ {print $NF}' "$work/log" | tail -1
}

echo "binary: $bin; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%8s %8s %14s %14s %8s %12s\n' N 2N 'instr(N)' 'instr(2N)' ratio 'per cont.'
declare -A memo=()
get() { [ -n "${memo[$1]:-}" ] || memo[$1]=$(count "$1"); echo "${memo[$1]}"; }
pairs=()
prev=
for n in $SIZES; do
  [ -n "$prev" ] && pairs+=("$prev:$n")
  prev=$n
done
pairs+=($PAIRS)
worst=0
for p in "${pairs[@]}"; do
  a=${p%%:*} b=${p##*:}
  ia=$(get "$a"); ib=$(get "$b")
  line=$(awk -v a="$a" -v b="$b" -v ia="$ia" -v ib="$ib" \
    'BEGIN {printf "%8d %8d %14d %14d %8.3f %12.0f", a, b, ia, ib, ib / ia, ib / b}')
  echo "$line"
  worst=$(awk -v w="$worst" -v r="$(echo "$line" | awk '{print $5}')" 'BEGIN {print (r > w) ? r : w}')
done
echo "largest ratio for 2N against N: $worst (bound 2.2)"
awk -v w="$worst" 'BEGIN {exit !(w <= 2.2)}'
