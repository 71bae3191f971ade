#!/usr/bin/env bash
# Fault scenarios against the release binary of `outrigger serve` on 127.0.0.1, at full size:
#
#   drain     SIGTERM with HTTP/1.1 keep-alive clients and h2load over HTTP/2: failed requests,
#             answers carrying `Connection: close` during the drain, and whether kept-open
#             connections end with TLS close_notify
#   413       20 posts of 3 MiB + 1 over HTTP/1.1 with curl (no `Expect: 100-continue`; it reads
#             while sending) and 20 with a client that writes the whole body before reading: how
#             many read the 413 instead of a connection reset
#   timeouts  how long a TLS connection that sends nothing, one with unfinished headers and an
#             idle keep-alive connection stay open (server defaults unless QUICK=1)
#   memory    peak RSS (VmHWM) of the server for one 3 MiB review (25,000 env vars in one
#             container), then for CONCURRENT such reviews at once (answers counted by status)
#
# Environment knobs (defaults in brackets):
#   SCENARIOS  [drain 413 timeouts memory]
#   PORT       [19543]
#   BIN        [target/release/outrigger]   another binary to measure (e.g. an older build)
#   NO_BUILD   []  set to skip `cargo build --release`
#   QUICK      []  set for short timeouts in the timeouts scenario (3 s / 3 s / 5 s)
#   CONCURRENT [16]
#   SERVER_ARGS [] extra flags for every server started
# Needs python3, curl and h2load (Debian nghttp2-client; installed with apt-get when missing
# and possible). Stops by itself; every server it starts is stopped on exit.
set -euo pipefail

SCENARIOS=${SCENARIOS:-drain 413 timeouts memory}
PORT=${PORT:-19543}
CONCURRENT=${CONCURRENT:-16}
root=$(cd "$(dirname "$0")/.." && pwd)

need() {
  command -v "$1" >/dev/null && return 0
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    apt-get install -y "$2" >/dev/null 2>&1 || { apt-get update >/dev/null 2>&1 && apt-get install -y "$2" >/dev/null 2>&1; }
  fi
  command -v "$1" >/dev/null || { echo "$1 not found: apt-get install $2" >&2; exit 2; }
}
need python3 python3
need curl curl
need h2load nghttp2-client

if [ -z "${NO_BUILD:-}" ] && [ -z "${BIN:-}" ]; then
  (cd "$root" && cargo build --release -p outrigger >&2)
fi
BIN=${BIN:-$root/target/release/outrigger}
work=$(mktemp -d)
pid=
stop_server() {
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; fi
}
trap 'stop_server; rm -rf "$work"' EXIT

# start_server NAME [flags...]: start the binary with the embedded default, wait until it listens.
start_server() {
  local name=$1; shift
  "$BIN" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
    --native-sidecars=false ${SERVER_ARGS:-} "$@" 2>"$work/$name.log" &
  pid=$!
  for _ in $(seq 1 200); do
    grep -q "webhook listening" "$work/$name.log" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "server did not start" >&2; exit 1
}
hwm_mib() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$pid/status"; }

# The client side of the scenarios, in Python (ssl tells close_notify from a bare EOF).
cat > "$work/faults.py" <<'PY'
import json, socket, ssl, sys, threading, time

PORT = int(sys.argv[2]); CA = sys.argv[3]

def ctx(alpn=("http/1.1",)):
    c = ssl.create_default_context(cafile=CA)
    c.set_alpn_protocols(list(alpn))
    return c

def connect():
    s = socket.create_connection(("127.0.0.1", PORT))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ctx().wrap_socket(s, server_hostname="localhost", suppress_ragged_eofs=False)

def review(uid):
    pod = {"metadata": {"name": uid, "labels": {"sidecar.istio.io/inject": "false"}},
           "spec": {"containers": [{"name": "a", "image": "nginx"}]}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                       "request": {"uid": uid, "namespace": "ns", "operation": "CREATE", "object": pod}}).encode()

class Conn:
    def __init__(self):
        self.s = connect(); self.buf = b""
    def request(self, uid):
        body = review(uid)
        self.s.sendall(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                       b"content-length: %d\r\n\r\n" % len(body) + body)
        while b"\r\n\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d: raise EOFError("closed before an answer")
            self.buf += d
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
        n = int(headers.get("content-length", "0"))
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d: raise EOFError("closed in the body")
            self.buf += d
        self.buf = self.buf[n:]
        return status, headers
    def end(self, wait):
        """How the server ends the connection: close_notify, eof (no close_notify), error, open."""
        self.s.settimeout(wait)
        try:
            d = self.s.recv(1)
            return "close_notify" if d == b"" else "data"
        except socket.timeout:
            return "open"
        except ssl.SSLEOFError:
            return "eof"
        except OSError as e:
            return "error: %s" % e

def drain(load_seconds):
    # Two kept-open connections used once before SIGTERM, one reused during the drain.
    idle, reused = Conn(), Conn()
    for c, u in ((idle, "a"), (reused, "b")):
        st, h = c.request(u); assert st == 200 and "close" not in h.get("connection", ""), (st, h)
    print("ready", flush=True)
    sys.stdin.readline()  # the shell sends SIGTERM, then a line
    stats = {"ok": 0, "failed": 0, "connection_close": 0, "close_notify_after_close": 0, "other_end": 0}
    lock = threading.Lock()
    def loop():
        c = None; i = 0; t_end = time.time() + load_seconds
        while time.time() < t_end:
            i += 1
            try:
                c = c or Conn()
                st, h = c.request("l%d" % i)
            except Exception:
                with lock: stats["failed"] += 1
                c = None; continue
            with lock:
                stats["ok" if st == 200 else "failed"] += 1
            if h.get("connection") == "close":
                end = c.end(5)
                with lock:
                    stats["connection_close"] += 1
                    stats["close_notify_after_close" if end == "close_notify" else "other_end"] += 1
                c = None
    ts = [threading.Thread(target=loop) for _ in range(2)]
    [t.start() for t in ts]
    st, h = reused.request("during")
    during = (st, h.get("connection"), reused.end(5))
    [t.join() for t in ts]
    print(json.dumps({"h1_load": stats, "reused_during_drain": during, "idle_at_listener_close": idle.end(30)}))

def timeouts(wait):
    res = {}
    def silent():
        c = connect(); t = time.time(); e = Conn.end(type("C", (), {"s": c})(), wait); res["no_request"] = (e, round(time.time() - t, 1))
    def partial():
        c = connect(); c.sendall(b"POST /inject HTTP/1.1\r\nhost: localhost\r\n"); t = time.time()
        e = Conn.end(type("C", (), {"s": c})(), wait); res["unfinished_headers"] = (e, round(time.time() - t, 1))
    def keepalive():
        c = Conn(); c.request("k"); t = time.time(); e = c.end(wait); res["idle_keepalive"] = (e, round(time.time() - t, 1))
    def no_tls():
        s = socket.create_connection(("127.0.0.1", PORT)); s.settimeout(wait); t = time.time()
        try: e = "closed" if s.recv(1) == b"" else "data"
        except socket.timeout: e = "open"
        except OSError as x: e = "error: %s" % x
        res["no_tls_handshake"] = (e, round(time.time() - t, 1))
    ts = [threading.Thread(target=f) for f in (no_tls, silent, partial, keepalive)]
    [t.start() for t in ts]; [t.join() for t in ts]
    print(json.dumps(res))

def post_then_read(n, tries):
    """A client that writes the whole request, then reads the answer (no Expect)."""
    body = b" " * n
    seen, errors = 0, {}
    for _ in range(tries):
        try:
            s = connect()
            s.sendall(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                      b"content-length: %d\r\n\r\n" % n)
            s.sendall(body)
            got = b""
            while b"\r\n" not in got:
                d = s.recv(4096)
                if not d: raise EOFError("closed before an answer")
                got += d
            status = int(got.split(b" ")[1])
            if status == 413: seen += 1
            else: errors["status %d" % status] = errors.get("status %d" % status, 0) + 1
            s.close()
        except Exception as e:
            k = type(e).__name__ + ": " + str(e)[:60]
            errors[k] = errors.get(k, 0) + 1
    print(json.dumps({"413_seen": seen, "tries": tries, "errors": errors}))

if sys.argv[1] == "drain": drain(float(sys.argv[4]))
elif sys.argv[1] == "post": post_then_read(int(sys.argv[4]), int(sys.argv[5]))
elif sys.argv[1] == "timeouts": timeouts(float(sys.argv[4]))
PY

echo "binary: $BIN"
echo "load_average=$(cut -d' ' -f1-3 /proc/loadavg) cpus=$(nproc)"

for scenario in $SCENARIOS; do
  case "$scenario" in
  drain)
    echo "---- drain: SIGTERM with HTTP/1.1 keep-alive clients and h2load (HTTP/2), --drain-delay 3s"
    start_server drain --drain-delay 3s --shutdown-grace 10s
    python3 -c 'import json,sys
pod={"metadata":{"name":"p","labels":{"sidecar.istio.io/inject":"false"}},"spec":{"containers":[{"name":"a"}]}}
json.dump({"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","namespace":"ns","object":pod}},open(sys.argv[1],"w"))' "$work/skip.json"
    coproc PY { python3 "$work/faults.py" drain "$PORT" "$work/ca.pem" 2.5; }
    read -r ready <&"${PY[0]}"
    h2load -c 2 -m 4 -D 2 -H 'content-type: application/json' -d "$work/skip.json" \
      "https://127.0.0.1:$PORT/inject" > "$work/h2load-drain.out" 2>&1 &
    h2=$!
    sleep 0.3
    kill -TERM "$pid"
    echo go >&"${PY[1]}"
    read -r result <&"${PY[0]}"
    wait "$h2" || true
    wait "$PY_PID" || true
    echo "http1: $result"
    echo "http2 (h2load): $(grep -E '^requests:' "$work/h2load-drain.out")"
    wait "$pid" && echo "server exit: 0" || echo "server exit: $?"
    pid=
    ;;
  413)
    echo "---- 413: 20 posts of 3 MiB + 1 over HTTP/1.1, curl without Expect: 100-continue"
    start_server big
    head -c $((3 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' > "$work/over.json"
    seen=0; resets=0; other=0
    for _ in $(seq 1 20); do
      code=$(curl -sS --http1.1 -H 'Expect:' -H 'Content-Type: application/json' --cacert "$work/ca.pem" \
        --data-binary @"$work/over.json" -o /dev/null -w '%{http_code}' "https://localhost:$PORT/inject" 2>>"$work/curl.err" || true)
      case "$code" in 413) seen=$((seen + 1)) ;; 000) resets=$((resets + 1)) ;; *) other=$((other + 1)) ;; esac
    done
    echo "curl: 413 seen $seen of 20; transport errors: $resets; other statuses: $other"
    sort "$work/curl.err" 2>/dev/null | uniq -c | sed 's/^/  curl: /' || true
    echo "write-all-then-read client: $(python3 "$work/faults.py" post "$PORT" "$work/ca.pem" $((3 * 1024 * 1024 + 1)) 20)"
    stop_server
    ;;
  timeouts)
    if [ -n "${QUICK:-}" ]; then
      flags=(--handshake-timeout 3s --header-read-timeout 3s --idle-timeout 5s); wait_s=30
    else
      flags=(); wait_s=150
    fi
    echo "---- timeouts: seconds until the server closes (flags: ${flags[*]:-defaults})"
    start_server timeouts "${flags[@]}"
    echo "$(python3 "$work/faults.py" timeouts "$PORT" "$work/ca.pem" "$wait_s")"
    stop_server
    ;;
  memory)
    echo "---- memory: one 3 MiB review (25,000 env vars), then $CONCURRENT at once"
    python3 - "$work/big.json" <<'PY'
import json, sys
env = [{"name": "ENV_VAR_%06d" % i, "value": "value-%06d-" % i + "x" * 75} for i in range(25000)]
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "big-7d4f9-", "namespace": "default",
       "labels": {"app": "big"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
       "name": "big-7d4f9", "uid": "6b1e0f7e", "controller": True, "blockOwnerDeletion": True}]},
       "spec": {"containers": [{"name": "app", "image": "nginx", "env": env, "resources": {}}]}}
doc = {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": {"uid": "big",
       "kind": {"group": "", "version": "v1", "kind": "Pod"}, "resource": {"group": "", "version": "v1",
       "resource": "pods"}, "namespace": "default", "operation": "CREATE", "object": pod}}
open(sys.argv[1], "w").write(json.dumps(doc, separators=(",", ":")))
PY
    start_server memory
    echo "review size: $(stat -c %s "$work/big.json") bytes; idle server peak RSS: $(hwm_mib) MiB"
    for i in 1 2 3; do
      curl -sS --cacert "$work/ca.pem" -H 'Content-Type: application/json' --data-binary @"$work/big.json" \
        -o "$work/resp.json" -w "review $i: %{http_code} in %{time_total}s\n" "https://localhost:$PORT/inject"
    done
    echo "peak RSS after 3 sequential reviews: $(hwm_mib) MiB"
    h2load -c "$CONCURRENT" -m 1 -n $((CONCURRENT * 2)) -H 'content-type: application/json' -d "$work/big.json" \
      "https://127.0.0.1:$PORT/inject" > "$work/h2load-mem.out" 2>&1 || true
    echo "$CONCURRENT at once ($((CONCURRENT * 2)) reviews): $(grep -E '^status codes:' "$work/h2load-mem.out")"
    echo "peak RSS with $CONCURRENT reviews at once: $(hwm_mib) MiB"
    stop_server
    ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
  esac
done
