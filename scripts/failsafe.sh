#!/usr/bin/env bash
# Fault load: the release binary on 127.0.0.1 with Istio's mounted layout (the embedded default
# config and values written to files, a mesh file with a marker in proxyMetadata), reviews of a
# plain pod sent continuously by THREADS keep-alive HTTPS clients while the configuration is
# broken the way operators break it, and restored HOLD seconds later:
#   values    `global: 42` written into the values file
#   truncate  the config file truncated (as `cp` does first), then written HOLD seconds later
#   mesh      the mesh file deleted, then written back
# For each scenario it prints the requests answered, failed (HTTP error or allowed:false),
# admitted without an istio-proxy patch, and injected without the mesh marker, and the server's
# failed-reload counter. Needs python3 (standard library only).
#
# Knobs: BIN (default target/release/outrigger, built unless NO_BUILD=1), THREADS (4),
# HOLD (seconds the breakage lasts, 1), SCENARIOS ("values truncate mesh").
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/release/outrigger}
THREADS=${THREADS:-4}
HOLD=${HOLD:-1}
SCENARIOS=${SCENARIOS:-values truncate mesh}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p outrigger >&2
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

printf '%-9s %9s %7s %11s %10s %16s\n' scenario requests failed uninjected mesh_lost reload_failures
for scenario in $SCENARIOS; do
  cp crates/outrigger-inject/defaults/config.yaml "$work/config"
  cp crates/outrigger-inject/defaults/values.json "$work/values"
  printf 'defaultConfig:\n  proxyMetadata:\n    FAILSAFE_MARK: kept\n' > "$work/mesh"
  rm -f "$work/ca.pem" "$work/server.log"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$BIN" serve --address 127.0.0.1 --port "$port" --log-format json --native-sidecars false \
    --injectConfigFile "$work/config" --valuesFile "$work/values" --meshConfigFile "$work/mesh" \
    --caBundleFile "$work/ca.pem" --drain-delay 0s 2> "$work/server.log" &
  server_pid=$!
  for _ in $(seq 100); do
    grep -q 'outrigger webhook listening' "$work/server.log" 2>/dev/null && break
    sleep 0.1
  done
  grep -q 'outrigger webhook listening' "$work/server.log" || { cat "$work/server.log" >&2; exit 1; }
  python3 - "$scenario" "$port" "$work" "$THREADS" "$HOLD" <<'PY'
import base64, http.client, json, os, ssl, sys, threading, time

scenario, port, work, threads, hold = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
ctx = ssl.create_default_context(cafile=os.path.join(work, "ca.pem"))
counts = {"requests": 0, "failed": 0, "uninjected": 0, "mesh_lost": 0}
lock = threading.Lock()
stop = time.monotonic() + hold + 2.5  # bounded: 1 s before the fault, HOLD, 1.5 s after

def client(worker):
    conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
    i = 0
    while time.monotonic() < stop:
        i += 1
        name = f"w{worker}-{i}"
        review = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                  "request": {"uid": name, "namespace": "team", "operation": "CREATE",
                              "kind": {"group": "", "version": "v1", "kind": "Pod"},
                              "resource": {"group": "", "version": "v1", "resource": "pods"},
                              "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                                         "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}}
        outcome = "failed"
        try:
            conn.request("POST", "/inject", body=json.dumps(review), headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            body = r.read()
            if r.status == 200:
                resp = json.loads(body)["response"]
                if resp.get("allowed") is True:
                    patch = base64.b64decode(resp.get("patch", "")).decode()
                    if '"istio-proxy"' not in patch:
                        outcome = "uninjected"
                    elif "FAILSAFE_MARK" not in patch:
                        outcome = "mesh_lost"
                    else:
                        outcome = "ok"
        except Exception:
            conn.close()
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
        with lock:
            counts["requests"] += 1
            if outcome != "ok":
                counts[outcome] += 1

workers = [threading.Thread(target=client, args=(w,)) for w in range(threads)]
for w in workers:
    w.start()
time.sleep(1)
path = lambda name: os.path.join(work, name)
good = {name: open(path(name)).read() for name in ("config", "values", "mesh")}
if scenario == "values":
    open(path("values"), "w").write("global: 42\n")
    time.sleep(hold)
    open(path("values"), "w").write(good["values"])
elif scenario == "truncate":
    f = open(path("config"), "w")  # O_TRUNC, as cp does
    f.flush()
    time.sleep(hold)
    f.write(good["config"])
    f.close()
elif scenario == "mesh":
    os.remove(path("mesh"))
    time.sleep(hold)
    open(path("mesh"), "w").write(good["mesh"])
for w in workers:
    w.join()
metrics = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=10)
metrics.request("GET", "/metrics")
text = metrics.getresponse().read().decode()
series = 'outrigger_reloads_total{kind="config",result="failure"} '
failures = next((l[len(series):] for l in text.splitlines() if l.startswith(series)), "0")
print(f"{scenario:<9} {counts['requests']:>9} {counts['failed']:>7} {counts['uninjected']:>11} {counts['mesh_lost']:>10} {failures:>16}")
PY
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
done
