#!/usr/bin/env bash
# Load test of `outrigger serve` with h2load (Debian package nghttp2-client) over HTTPS + HTTP/2
# on 127.0.0.1. Builds the release binary, starts it, sends AdmissionReviews of the hello pod,
# and reports throughput, p50/p99 latency (from h2load's per-request log), errors, the outcome
# the server recorded (injected / skipped / failed) and the server's peak RSS (VmHWM).
#
# Environment knobs (defaults in brackets):
#   DURATION [10]   seconds of measured load (after a 2 s warm-up)
#   CLIENTS  [8]    h2load connections
#   STREAMS  [8]    concurrent streams per connection
#   THREADS  [1]    h2load threads
#   PORT     [19443]
#   POD      [hello]  hello | skip  (skip: the pod opts out, measuring the server without injection)
#   CONFIG_DIR []   directory with Istio's config/values/mesh files; empty = embedded default
#   LOG_LEVEL [info]
#   NO_BUILD []     set to skip `cargo build --release`
# Stops by itself: h2load runs for DURATION seconds, then the server is sent SIGTERM.
set -euo pipefail

DURATION=${DURATION:-10}
CLIENTS=${CLIENTS:-8}
STREAMS=${STREAMS:-8}
THREADS=${THREADS:-1}
PORT=${PORT:-19443}
POD=${POD:-hello}
CONFIG_DIR=${CONFIG_DIR:-}
LOG_LEVEL=${LOG_LEVEL:-info}

root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/lib/serve.sh"
command -v h2load >/dev/null || { echo "h2load not found: apt-get install nghttp2-client" >&2; exit 2; }
if [ -z "${NO_BUILD:-}" ]; then
  (cd "$root" && cargo build --release -p outrigger >&2)
fi
bin="$root/target/release/outrigger"
work=$(mktemp -d)
trap 'kill -TERM "${pid:-}" 2>/dev/null || true; rm -rf "$work"' EXIT

# No configuration flag: the embedded default (a path given that does not exist stops serve).
cfg=()
if [ -n "$CONFIG_DIR" ]; then
  cfg=(--injectConfigFile "$CONFIG_DIR/config" --valuesFile "$CONFIG_DIR/values" --meshConfigFile "$CONFIG_DIR/mesh")
fi

case "$POD" in
  hello) labels='{"app":"hello"}' ;;
  skip) labels='{"app":"hello","sidecar.istio.io/inject":"false"}' ;;
  *) echo "POD must be hello or skip" >&2; exit 2 ;;
esac
cat > "$work/review.json" <<JSON
{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"load-test","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"default","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"hello-7d4f9-","namespace":"default","labels":$labels,"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"hello-7d4f9","uid":"6b1e0f7e-0000-0000-0000-000000000000","controller":true,"blockOwnerDeletion":true}]},"spec":{"containers":[{"name":"hello","image":"fake.docker.io/google-samples/hello-go-gke:1.0","ports":[{"name":"http","containerPort":80}],"resources":{}}]}}}}
JSON

RUST_LOG=$LOG_LEVEL "$bin" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
  --drain-delay 0s "${cfg[@]}" 2>"$work/server.log" &
pid=$!
wait_listening "$pid" "$work/server.log" 200
url="https://127.0.0.1:$PORT/inject"

# Pre-flight: show what one response looks like.
pre=$(curl -sS --cacert "$work/ca.pem" --http2 -H 'Content-Type: application/json' \
  --data-binary @"$work/review.json" "https://localhost:$PORT/inject" || true)
echo "pre-flight response: $(printf '%s' "$pre" | cut -c1-200)"

h2load -t "$THREADS" -c "$CLIENTS" -m "$STREAMS" -D "$DURATION" --warm-up-time 2 \
  -H 'content-type: application/json' -d "$work/review.json" \
  --log-file "$work/h2load.log" "$url" > "$work/h2load.out"

rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
# Server CPU time (user + system, clock ticks) over its whole life, for CPU cost per request:
# the machine is shared, so throughput alone depends on what else runs.
ticks=$(awk '{print $14 + $15}' "/proc/$pid/stat")
hz=$(getconf CLK_TCK)
metrics=$(curl -sS --cacert "$work/ca.pem" "https://localhost:$PORT/metrics")
kill -TERM "$pid"; wait "$pid" || true

grep -E '^(finished in|requests:|status codes:|traffic:)' "$work/h2load.out"
# h2load log: <start time us> <status> <elapsed us>
read -r n p50 p99 < <(awk '{print $3}' "$work/h2load.log" | sort -n | awk '
  {v[NR]=$1} END {if (NR==0) {print 0, 0, 0; exit}
  i50=int(NR*0.50); if (i50<1) i50=1; i99=int(NR*0.99); if (i99<1) i99=1;
  print NR, v[i50], v[i99]}')
rps=$(grep -E '^finished in' "$work/h2load.out" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
errors=$(grep -E '^requests:' "$work/h2load.out" | sed -E 's/.* ([0-9]+) errored.*/\1/')
non2xx=$(grep -E '^status codes:' "$work/h2load.out" | awk '{gsub(",","",$0); print $5+$7+$9}')
m() { printf '%s\n' "$metrics" | awk -v s="$1" 'index($0, s" ")==1 {print $2}' | head -1; }
echo "---- outrigger load test ($POD pod, ${CLIENTS}x${STREAMS} streams, ${DURATION}s, log level $LOG_LEVEL)"
echo "throughput_rps=$rps"
echo "latency_p50_ms=$(awk -v x="$p50" 'BEGIN {printf "%.3f", x/1000}') latency_p99_ms=$(awk -v x="$p99" 'BEGIN {printf "%.3f", x/1000}') (from $n logged requests)"
echo "errors=$errors non_2xx=$non2xx"
echo "server_injected=$(m outrigger_injections_total) server_requests=$(m sidecar_injection_requests_total)"
printf '%s\n' "$metrics" | grep -E '^sidecar_injection_(skip|failure)_total' || true
reqs=$(m sidecar_injection_requests_total)
echo "server_cpu_s=$(awk -v t="$ticks" -v hz="$hz" 'BEGIN {printf "%.2f", t/hz}') cpu_us_per_request=$(awk -v t="$ticks" -v hz="$hz" -v n="${reqs:-0}" 'BEGIN {if (n>0) printf "%.0f", t/hz*1e6/n; else print "n/a"}')"
echo "load_average=$(cut -d' ' -f1-3 /proc/loadavg) cpus=$(nproc)"
echo "peak_rss_mib=$(awk -v k="$rss_kb" 'BEGIN {printf "%.1f", k/1024}')"
