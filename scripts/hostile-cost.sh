#!/usr/bin/env bash
# Hostile work against `outrigger serve` on loopback, at full size (issue 36, cost):
#
#  1. many containers: a review of a pod of CONTAINERS containers (each with a port), with
#     --max-list-entries raised above it: the server's CPU seconds per review (utime + stime of
#     the process, read from /proc around each review; the client runs in another process),
#     median of ROUNDS, and the same for CONTAINERS/2 (the ratio shows whether the cost is
#     linear: ~2 is, ~4 is quadratic).
#  2. the same review against the default bound (10,000), REFUSALS times: wall time to the
#     refusal at the client (sending the body included), median; the server's CPU per refusal
#     (TLS and HTTP/2 of the body included), mean; the server's own wall time (review_us in its
#     log: from the body in full to the answer, so the machine's load counts), median.
#  3. a slow template: a configuration whose template loops 2^40 times for pods annotated
#     `slow` (the probe pod of the configuration check is not), SLOW such reviews sent at once
#     while /healthz and hello reviews are sent one after another from another connection for
#     the length of the request deadline (DEADLINE); prints their latency and the answers.
#
# Targets: (1) < 1 CPU-s at 20,000 containers; (2) < 10 ms server-side; (3) every /healthz and hello review
# answered (injected) while the slow reviews run, and each slow review answered 504 at the
# deadline.
#
# Environment knobs (defaults in brackets):
#   CONTAINERS [20000]   ROUNDS [5]   REFUSALS [20]   SLOW [8]   DEADLINE [3s]   PORT [19653]
#   PARTS ["cost refuse slow"]: which of 1, 2, 3 to run
#   BIN        [target/release/outrigger]   NO_BUILD []: skip `cargo build --release`
# Needs python3 only. Loopback only; every loop is bounded; the server is stopped on exit.
set -euo pipefail

CONTAINERS=${CONTAINERS:-20000}
ROUNDS=${ROUNDS:-5}
REFUSALS=${REFUSALS:-20}
PARTS=${PARTS:-"cost refuse slow"}
SLOW=${SLOW:-8}
DEADLINE=${DEADLINE:-3s}
PORT=${PORT:-19653}
root=$(cd "$(dirname "$0")/.." && pwd)

command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 2; }
if [ -z "${NO_BUILD:-}" ] && [ -z "${BIN:-}" ]; then
  (cd "$root" && cargo build --release -p outrigger >&2)
fi
BIN=${BIN:-$root/target/release/outrigger}
work=$(mktemp -d)
pid=
stop_server() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
trap 'stop_server; rm -rf "$work"' EXIT

# start_server NAME CONFIG_DIR|- [FLAGS...]: `-` serves the embedded default (no configuration
# flag: a path that does not exist stops serve at start-up).
start_server() {
  local name=$1 config=$2; shift 2
  local cfg=()
  if [ "$config" != - ]; then
    cfg=(--injectConfigFile "$config/config" --valuesFile "$config/values")
  fi
  rm -f "$work/ca.pem"
  "$BIN" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
    --native-sidecars=false --log-level warn --worker-threads 2 \
    "${cfg[@]}" "$@" 2>"$work/$name.log" &
  pid=$!
  for _ in $(seq 1 200); do
    [ -s "$work/ca.pem" ] && grep -q "BEGIN CERTIFICATE" "$work/ca.pem" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "server did not start" >&2; exit 1
}

mkdir -p "$work/slow"
cat > "$work/slow/config" <<'YAML'
policy: enabled
templates:
  sidecar: |
    {{- if index .ObjectMeta.Annotations "slow" }}{{ range until 1048576 }}{{ range until 1048576 }}{{ end }}{{ end }}{{ end }}
    spec:
      containers:
      - name: shipper
        image: shipper
YAML
echo '{}' > "$work/slow/values"

cat > "$work/cost.py" <<'PY'
import http.client, json, ssl, statistics, sys, threading, time

MODE, PORT, CA, PID = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])

def conn():
    c = ssl.create_default_context(cafile=CA)
    return http.client.HTTPSConnection("127.0.0.1", PORT, context=c, timeout=120)

def review(uid, pod):
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid, "namespace": "default", "operation": "CREATE",
                    "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "object": pod}}).encode()

def pod_of(n):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "many", "namespace": "default"},
            "spec": {"containers": [{"name": f"c{i}", "image": "nginx",
                                     "ports": [{"containerPort": 8000 + i % 1000}]} for i in range(n)]}}

def hello(annotations):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "hello", "annotations": annotations},
            "spec": {"containers": [{"name": "hello", "image": "nginx"}]}}

def post(c, body):
    c.request("POST", "/inject", body=body, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()

def cpu():
    f = open(f"/proc/{PID}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100.0  # utime + stime, clock ticks of 10 ms

def outcome(status, data):
    if status != 200:
        return f"{status}"
    r = json.loads(data)["response"]
    return "injected" if "patch" in r else ("refused" if not r["allowed"] else "allowed")

if MODE == "cost":
    n, rounds = int(sys.argv[5]), int(sys.argv[6])
    body = review("many", pod_of(n))
    c = conn()
    post(c, review("warm", hello({})))
    used, answers = [], set()
    for _ in range(rounds):
        before = cpu()
        status, data = post(c, body)
        used.append(cpu() - before)
        answers.add(outcome(status, data))
    print(f"{n} containers ({len(body)} bytes): {sorted(answers)}, server CPU per review median "
          f"{statistics.median(used):.2f} s (min {min(used):.2f}, max {max(used):.2f}; 10 ms ticks)")
    print(f"RESULT {statistics.median(used)}")
elif MODE == "refuse":
    n, rounds = int(sys.argv[5]), int(sys.argv[6])
    body = review("many", pod_of(n))
    c = conn()
    post(c, review("warm", hello({})))
    times, answers = [], set()
    before = cpu()
    for _ in range(rounds):
        t = time.perf_counter()
        status, data = post(c, body)
        times.append(time.perf_counter() - t)
        answers.add(outcome(status, data))
    used = (cpu() - before) / rounds
    print(f"{n} containers at the default bound: {sorted(answers)}, answered in median "
          f"{statistics.median(times) * 1000:.1f} ms (min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f}) "
          f"at the client; server CPU per refusal (TLS and HTTP/2 of the {len(body)} bytes included) "
          f"{used * 1000:.1f} ms, mean of {rounds}")
else:
    slow, deadline = int(sys.argv[5]), float(sys.argv[6])
    results = []
    def attack(i):
        c = conn()
        t = time.perf_counter()
        status, data = post(c, review(f"slow-{i}", hello({"slow": "yes"})))
        results.append((time.perf_counter() - t, outcome(status, data)))
    threads = [threading.Thread(target=attack, args=(i,)) for i in range(slow)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    c = conn()
    lat, health, failures = [], [], []
    end = time.perf_counter() + deadline
    i = 0
    while time.perf_counter() < end:
        t = time.perf_counter()
        c.request("GET", "/healthz")
        r = c.getresponse(); r.read()
        health.append(time.perf_counter() - t)
        if r.status != 200:
            failures.append(f"healthz {r.status}")
        t = time.perf_counter()
        status, data = post(c, review(f"real-{i}", hello({})))
        lat.append(time.perf_counter() - t)
        if outcome(status, data) != "injected":
            failures.append(f"review {status}")
        i += 1
    for t in threads:
        t.join()
    ms = lambda xs: f"p50 {statistics.median(xs) * 1000:.1f} ms, max {max(xs) * 1000:.1f} ms"
    print(f"{slow} slow reviews: answers {sorted(set(o for _, o in results))}, after "
          f"{min(d for d, _ in results):.2f}-{max(d for d, _ in results):.2f} s")
    print(f"meanwhile {len(health)} /healthz ({ms(health)}) and {len(lat)} hello reviews "
          f"({ms(lat)}); failures: {len(failures)} {failures[:3]}")
PY

if [[ " $PARTS " == *" cost "* ]]; then
start_server raised - --max-list-entries $((CONTAINERS * 2)) --request-timeout 60s
big=$(python3 "$work/cost.py" cost "$PORT" "$work/ca.pem" "$pid" "$CONTAINERS" "$ROUNDS")
half=$(python3 "$work/cost.py" cost "$PORT" "$work/ca.pem" "$pid" $((CONTAINERS / 2)) "$ROUNDS")
stop_server
echo "$half" | grep -v '^RESULT'
echo "$big" | grep -v '^RESULT'
awk -v a="$(echo "$half" | awk '/^RESULT/ {print $2}')" -v b="$(echo "$big" | awk '/^RESULT/ {print $2}')" \
  -v n="$CONTAINERS" 'BEGIN { if (a > 0) printf "CPU for %d containers / for %d: %.2fx (2 = linear)\n", n, n / 2, b / a }'

fi

if [[ " $PARTS " == *" refuse "* ]]; then
start_server bound -
python3 "$work/cost.py" refuse "$PORT" "$work/ca.pem" "$pid" "$CONTAINERS" "$REFUSALS"
stop_server
# The server's own time for each refusal (review_us: from the body in full to the answer; the
# client's time above includes sending the body).
grep -o 'review_us=[0-9]*' "$work/bound.log" | cut -d= -f2 | sort -n | awk -v n="$CONTAINERS" '
  {v[NR] = $1} END {
    if (NR == 0) { print "no review_us in the server log" > "/dev/stderr"; exit 1 }
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "%d containers refused server-side (review_us, %d refusals): median %.2f ms (min %.2f, max %.2f)\n",
      n, NR, m / 1000, v[1] / 1000, v[NR] / 1000 }'
fi

if [[ " $PARTS " == *" slow "* ]]; then
start_server slow "$work/slow" --request-timeout "$DEADLINE"
python3 "$work/cost.py" slow "$PORT" "$work/ca.pem" "$pid" "$SLOW" "${DEADLINE%s}"
stop_server
fi
