#!/usr/bin/env bash
# Server CPU per injection of `outrigger serve`, against a baseline binary, interleaved.
#
# For each size class of pod, starts the server (release, HTTPS + HTTP/2, log level info, Istio's
# chart defaults from the conformance corpus when present, else the embedded default), sends it
# REVIEWS AdmissionReviews with h2load (4 connections x 4 streams, load generator on the same
# machine) and reads the server process's CPU time (utime + stime from /proc/PID/stat) just
# before and just after the measured run. Per run it prints:
#   cpu_us      server CPU time per injection (all threads: TLS, HTTP/2, JSON, injection, patch, logs)
#   rps         reviews per second (h2load)
#   p50_ms, p99_ms  latency of the measured reviews (h2load's per-request log)
#   floor_us    the in-process floor: serde_json parse + serialise of the same review
#               (crates/outrigger-inject/examples/review_floor.rs, measured in the same run)
#   ratio       cpu_us / floor_us
# Runs go baseline, new, baseline, new, ... (ROUNDS of each) so that load from elsewhere falls on
# both alike; the summary gives the medians per class and binary, and new / baseline.
#
# Load modes (MODES): `repeated` sends the class's one AdmissionReview over and over with h2load
# (the pods of one workload reach the webhook identical: the server's memos answer them);
# `distinct` sends pods that differ in a field the sidecar template reads (the `app` label,
# `h000000042`, ...), each seen once, so neither the answer memo nor the render memo hits, with
# crates/outrigger/examples/distinct_load.rs (h2load takes one body); rows are labelled
# CLASS/distinct.
#
# Usage: scripts/cpu-per-injection.sh            (from the repository root or anywhere)
# Environment knobs (defaults in brackets):
#   BASELINE_BIN []           baseline binary; without it BASELINE_REV is built in a temporary
#                             git worktree (target dir target/baseline, kept for later runs)
#   BASELINE_REV [7b4e5d3]    commit before the CPU-per-injection work (issue 22)
#   NEW_BIN [target/release/outrigger]  built with `cargo build --release` unless NO_BUILD is set
#   CLASSES ["hello env-400 containers-16 managedfields-200"]  size classes (see review_floor.rs)
#   REVIEWS [20000]           reviews per run for `hello`; other classes get REVIEWS * (hello
#                             bytes / class bytes), at least 1,000
#   ROUNDS [3]                runs of each binary per class
#   MODES [repeated]          load modes: repeated, distinct or both ("repeated distinct")
#   CLIENTS [4] STREAMS [4]   h2load connections and streams per connection
#   WORKER_THREADS []         the server's --worker-threads (default: one per CPU)
#   CONFIG_DIR []             directory with config.yaml, values.json, mesh.yaml (default: the
#                             corpus' settings/default)
#   PORT [19543]
# Needs h2load (Debian: apt-get install nghttp2-client) and curl.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/lib/serve.sh
CLASSES=${CLASSES:-"hello env-400 containers-16 managedfields-200"}
REVIEWS=${REVIEWS:-20000}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-4}
STREAMS=${STREAMS:-4}
PORT=${PORT:-19543}
MODES=${MODES:-repeated}
BASELINE_REV=${BASELINE_REV:-7b4e5d3}
command -v h2load >/dev/null || { echo "h2load not found: apt-get install nghttp2-client" >&2; exit 2; }

if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p outrigger >&2
  cargo build --release -p outrigger-inject --example review_floor >&2
  case " $MODES " in *" distinct "*) cargo build --release -p outrigger --example distinct_load >&2 ;; esac
fi
target=${CARGO_TARGET_DIR:-$root/target}
NEW_BIN=${NEW_BIN:-$target/release/outrigger}
floor_bin=$target/release/examples/review_floor
load_bin=$target/release/examples/distinct_load
if [ -z "${BASELINE_BIN:-}" ]; then
  tree=$root/target/baseline-src
  BASELINE_BIN=$root/target/baseline/release/outrigger
  if [ ! -x "$BASELINE_BIN" ]; then
    rm -rf "$tree"
    git worktree add --detach "$tree" "$BASELINE_REV" >&2
    (cd "$tree" && CARGO_TARGET_DIR=$root/target/baseline cargo build --release -p outrigger >&2)
    git worktree remove --force "$tree" >&2
  fi
fi
bins=("$BASELINE_BIN" "$NEW_BIN" "$floor_bin")
case " $MODES " in *" distinct "*) bins+=("$load_bin") ;; esac
for b in "${bins[@]}"; do
  [ -x "$b" ] || { echo "missing binary $b" >&2; exit 2; }
done

corpus=${OUTRIGGER_CORPUS:-$root/../shared/conformance/istio}
CONFIG_DIR=${CONFIG_DIR:-$corpus/settings/default}
work=$(mktemp -d)
pid=
trap 'if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
corpus_config "$CONFIG_DIR" "$work"
threads=()
[ -n "${WORKER_THREADS:-}" ] && threads=(--worker-threads "$WORKER_THREADS")
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
metric() { curl -sS --cacert "$work/ca.pem" "https://localhost:$PORT/metrics" | awk -v s="$1" 'index($0, s" ")==1 {print $2}' | head -1; }

# One run: binary, class, reviews, mode -> "cpu_us rps p50_ms p99_ms"
run() {
  local bin=$1 class=$2 n=$3 mode=$4 url="https://127.0.0.1:$PORT/inject"
  rm -f "$work/server.log" "$work/ca.pem"
  RUST_LOG=info "$bin" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
    --drain-delay 0s "${threads[@]}" "${cfg[@]}" 2>"$work/server.log" &
  pid=$!
  wait_listening "$pid" "$work/server.log"
  local warm=$((n / 10 > 200 ? n / 10 : 200)) before_inj before after errors rps p50 p99
  if [ "$mode" = distinct ]; then
    # Warm-up with other distinct pods (numbered from n on), not measured.
    "$load_bin" "127.0.0.1:$PORT" "$work/ca.pem" "$work/$class.json" "$warm" "$CLIENTS" "$STREAMS" "$n" > /dev/null
    before_inj=$(metric outrigger_injections_total)
    before=$(ticks "$pid")
    "$load_bin" "127.0.0.1:$PORT" "$work/ca.pem" "$work/$class.json" "$n" "$CLIENTS" "$STREAMS" 0 \
      > "$work/load.out" || { cat "$work/load.out" >&2; exit 1; }
    after=$(ticks "$pid")
    errors=$(sed -E 's/.* errors=([0-9]+) .*/\1/' "$work/load.out")
    read -r rps p50 p99 < <(sed -E 's/.* rps=([0-9.]+) p50_ms=([0-9.]+) p99_ms=([0-9.]+).*/\1 \2 \3/' "$work/load.out")
  else
    # Warm-up (connections, caches, allocator), not measured.
    h2load -c "$CLIENTS" -m "$STREAMS" -n "$warm" -H 'content-type: application/json' \
      -d "$work/$class.json" "$url" > /dev/null
    before_inj=$(metric outrigger_injections_total)
    before=$(ticks "$pid")
    # h2load appends to its log: without this, percentiles would mix in every earlier run.
    rm -f "$work/h2load.log"
    h2load -c "$CLIENTS" -m "$STREAMS" -n "$n" -H 'content-type: application/json' \
      -d "$work/$class.json" --log-file "$work/h2load.log" "$url" > "$work/h2load.out"
    after=$(ticks "$pid")
    errors=$(grep -E '^requests:' "$work/h2load.out" | sed -E 's/.* ([0-9]+) errored.*/\1/')
    rps=$(grep -E '^finished in' "$work/h2load.out" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
    read -r p50 p99 < <(awk '{print $3}' "$work/h2load.log" | sort -n | awk '{v[NR]=$1} END {
      i50=int(NR*0.50); if (i50<1) i50=1; i99=int(NR*0.99); if (i99<1) i99=1; printf "%.3f %.3f\n", v[i50]/1000, v[i99]/1000}')
  fi
  local inj=$(( $(metric outrigger_injections_total) - before_inj ))
  kill -TERM "$pid"; wait "$pid" || true; pid=
  [ "$errors" = 0 ] && [ "$inj" = "$n" ] || { echo "run failed ($mode): $errors errors, $inj of $n injected" >&2; cat "$work/h2load.out" "$work/load.out" >&2 2>/dev/null; exit 1; }
  awk -v t=$((after - before)) -v hz="$hz" -v n="$n" -v r="$rps" -v a="$p50" -v b="$p99" \
    'BEGIN {printf "%.1f %.0f %s %s\n", t/hz*1e6/n, r, a, b}'
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR%2) print v[(NR+1)/2]; else printf "%.2f\n", (v[NR/2]+v[NR/2+1])/2}'; }

echo "settings: $settings; load ${CLIENTS}x${STREAMS} ($MODES); $ROUNDS rounds interleaved; load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "baseline: $BASELINE_BIN"
echo "new:      $NEW_BIN"
printf '%-20s %-8s %5s %8s %9s %7s %7s %7s %8s %6s\n' class binary round reviews cpu_us rps p50_ms p99_ms floor_us ratio
"$floor_bin" hello "$work/hello.json" 1 > /dev/null
hello_bytes=$(stat -c %s "$work/hello.json")
declare -A res floor
labels=()
for class in $CLASSES; do
  read -r f bytes < <("$floor_bin" "$class" "$work/$class.json" | sed -E 's/floor_us=([0-9.]+) bytes=([0-9]+)/\1 \2/')
  n=$(awk -v r="$REVIEWS" -v h="$hello_bytes" -v b="$bytes" 'BEGIN {n=int(r*h/b); if (n<1000) n=1000; if (n>r) n=r; print n}')
  for mode in $MODES; do
    row=$class; [ "$mode" = distinct ] && row=$class/distinct
    labels+=("$row"); floor[$row]=$f
    for round in $(seq 1 "$ROUNDS"); do
      for which in baseline new; do
        bin=$BASELINE_BIN; [ "$which" = new ] && bin=$NEW_BIN
        read -r cpu rps p50 p99 < <(run "$bin" "$class" "$n" "$mode")
        res[$row,$which]+="$cpu $rps $p50 $p99;"
        printf '%-20s %-8s %5s %8s %9s %7s %7s %7s %8s %6s\n' "$row" "$which" "$round" "$n" "$cpu" "$rps" "$p50" "$p99" "$f" \
          "$(awk -v c="$cpu" -v f="$f" 'BEGIN {printf "%.1f", c/f}')"
      done
    done
  done
done
echo "---- medians"
printf '%-20s %-8s %9s %7s %7s %7s %8s %6s\n' class binary cpu_us rps p50_ms p99_ms floor_us ratio
for class in "${labels[@]}"; do
  declare -A med=()
  for which in baseline new; do
    rows=$(printf '%s' "${res[$class,$which]}" | tr ';' '\n' | sed '/^$/d')
    for k in 1 2 3 4; do med[$which,$k]=$(printf '%s\n' "$rows" | awk -v k=$k '{print $k}' | median); done
    printf '%-20s %-8s %9s %7s %7s %7s %8s %6s\n' "$class" "$which" "${med[$which,1]}" "${med[$which,2]}" "${med[$which,3]}" \
      "${med[$which,4]}" "${floor[$class]}" "$(awk -v c="${med[$which,1]}" -v f="${floor[$class]}" 'BEGIN {printf "%.1f", c/f}')"
  done
  awk -v c="$class" -v b="${med[baseline,1]}" -v n="${med[new,1]}" -v rb="${med[baseline,2]}" -v rn="${med[new,2]}" \
    'BEGIN {printf "%-20s new/baseline: cpu %.2fx, reviews/s %.2fx\n", c, n/b, rn/rb}'
done
