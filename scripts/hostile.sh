#!/usr/bin/env bash
# Hostile clients against `outrigger serve` on loopback, at full size: for each count of stalled
# clients (STALLED, default "8 64 512"), a fresh server is started (default flags) and the
# attackers connect from their own loopback addresses (127.0.1.x, 127.0.2.x, ...): half are
# HTTP/1.1 connections, half HTTP/2 streams (up to 16 per connection); each announces a 3 MiB
# review, sends one byte and stalls, and when the server cuts it, connects and stalls again.
# Meanwhile the "API server" on 127.0.0.1 sends real reviews (a hello pod from a ReplicaSet, which
# the embedded default injects) at RATE per second for DURATION seconds over KEEPALIVE HTTP/1.1
# keep-alive connections, open loop (latency counts from the scheduled send, so queueing shows).
#
# Prints per scenario: reviews injected / sent, p50 / p99 / max latency, stall cycles (attacks
# started, cut by the server), and the server's RSS now and peak (VmRSS / VmHWM).
# Targets (issue 17): every review injected, p99 < 100 ms, memory bounded.
#
# Environment knobs (defaults in brackets):
#   STALLED   [8 64 512]
#   RATE      [100]        real reviews per second
#   DURATION  [10]         seconds of reviews per scenario
#   KEEPALIVE [4]          connections the real reviews share
#   PORT      [19643]
#   BIN       [target/release/outrigger]   the binary to measure (e.g. an older build)
#   NO_BUILD  []           set to skip `cargo build --release`
#   CONFIG_DIR []          Istio's config/values/mesh files; empty = the embedded default
#   SERVER_ARGS []         extra flags for the server
# Needs python3 only (its ssl module). Loopback only; every loop is bounded by DURATION; the
# server is stopped on exit.
set -euo pipefail

STALLED=${STALLED:-8 64 512}
RATE=${RATE:-100}
DURATION=${DURATION:-10}
KEEPALIVE=${KEEPALIVE:-4}
PORT=${PORT:-19643}
CONFIG_DIR=${CONFIG_DIR:-}
root=$(cd "$(dirname "$0")/.." && pwd)

command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 2; }
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
# 512 stalled clients and the server's own descriptors.
ulimit -n 4096 2>/dev/null || true

cfg=(--injectConfig "$work/none/config" --injectValues "$work/none/values" --meshConfig "$work/none/mesh")
if [ -n "$CONFIG_DIR" ]; then
  cfg=(--injectConfig "$CONFIG_DIR/config" --injectValues "$CONFIG_DIR/values" --meshConfig "$CONFIG_DIR/mesh")
fi

start_server() {
  local name=$1
  # shellcheck disable=SC2086
  "$BIN" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
    --native-sidecars=false --log-level warn "${cfg[@]}" ${SERVER_ARGS:-} 2>"$work/$name.log" &
  pid=$!
  for _ in $(seq 1 200); do
    # The CA bundle is written once the port is bound.
    [ -s "$work/ca.pem" ] && grep -q "BEGIN CERTIFICATE" "$work/ca.pem" 2>/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/$name.log" >&2; exit 1; }
    sleep 0.05
  done
  echo "server did not start" >&2; exit 1
}

cat > "$work/hostile.py" <<'PY'
import asyncio, json, os, ssl, struct, sys, time

PORT, CA, STALLED, RATE, DURATION, KEEPALIVE = (int(sys.argv[1]), sys.argv[2], int(sys.argv[3]),
    float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6]))
ANNOUNCED = 3 * 1024 * 1024

def ctx(alpn):
    c = ssl.create_default_context(cafile=CA)
    c.set_alpn_protocols([alpn])
    return c

def attacker_ip(i):
    return "127.0.%d.%d" % (1 + i // 250, 2 + i % 250)

stats = {"attacks": 0, "cut": 0, "connect_errors": 0}

async def h1_attacker(i, until):
    while time.monotonic() < until:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", PORT, ssl=ctx("http/1.1"),
                server_hostname="localhost", local_addr=(attacker_ip(i), 0))
        except OSError:
            stats["connect_errors"] += 1; await asyncio.sleep(0.2); continue
        w.write(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n{" % ANNOUNCED)
        stats["attacks"] += 1
        try:
            await asyncio.wait_for(r.read(1), max(0.01, until - time.monotonic()))
            stats["cut"] += 1
        except (asyncio.TimeoutError, OSError, ssl.SSLError):
            pass
        w.close()

def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload

def lit(index, value):
    # HPACK literal header field without indexing, indexed name (4-bit prefix), raw value.
    v = value.encode()
    head = bytes([index]) if index < 15 else bytes([0x0f, index - 15])
    return head + bytes([len(v)]) + v

def request_block():
    # :method POST, :scheme https (static indexed), :path, :authority, content-type, content-length
    return (bytes([0x83, 0x87]) + lit(4, "/inject") + lit(1, "localhost")
            + lit(31, "application/json") + lit(28, str(ANNOUNCED)))

async def h2_attacker(i, streams, until):
    while time.monotonic() < until:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", PORT, ssl=ctx("h2"),
                server_hostname="localhost", local_addr=(attacker_ip(i), 0))
        except OSError:
            stats["connect_errors"] += 1; await asyncio.sleep(0.2); continue
        w.write(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
        block = request_block()
        for s in range(streams):
            sid = 1 + 2 * s
            w.write(frame(1, 0x4, sid, block) + frame(0, 0, sid, b"{"))
        stats["attacks"] += streams
        open_streams = streams
        try:
            while open_streams > 0 and time.monotonic() < until:
                head = await asyncio.wait_for(r.readexactly(9), until - time.monotonic())
                n = int.from_bytes(head[:3], "big"); kind, flags = head[3], head[4]
                payload = await r.readexactly(n)
                if kind == 4 and not flags & 1:
                    w.write(frame(4, 1, 0, b""))           # SETTINGS ack
                elif kind == 6 and not flags & 1:
                    w.write(frame(6, 1, 0, payload))       # PING ack
                elif kind == 1 and flags & 1 or kind == 0 and flags & 1 or kind == 3:
                    stats["cut"] += 1; open_streams -= 1   # answered (END_STREAM) or reset
                elif kind == 7:
                    break                                   # GOAWAY
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, OSError, ssl.SSLError):
            pass
        w.close()

def review(uid):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "hello-7d4f9-",
           "labels": {"app": "hello"}, "ownerReferences": [{"apiVersion": "apps/v1",
           "kind": "ReplicaSet", "name": "hello-7d4f9", "uid": "6b1e0f7e", "controller": True}]},
           "spec": {"containers": [{"name": "hello", "image": "nginx"}]}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid, "namespace": "default", "operation": "CREATE",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"}, "object": pod}}).encode()

async def one_review(conn, uid):
    r, w = conn
    body = review(uid)
    w.write(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n" % len(body) + body)
    head = await r.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    length = next(int(l.split(":", 1)[1]) for l in lines if l.lower().startswith("content-length:"))
    data = await r.readexactly(length)
    return status == 200 and b'"patch"' in data, status

async def api_server(until, results):
    pool = asyncio.Queue()
    for _ in range(KEEPALIVE):
        pool.put_nowait(None)
    async def send(i, scheduled):
        conn = await pool.get()
        try:
            if conn is None:
                conn = await asyncio.open_connection("127.0.0.1", PORT, ssl=ctx("http/1.1"),
                    server_hostname="localhost", local_addr=("127.0.0.1", 0))
            ok, status = await asyncio.wait_for(one_review(conn, "real-%d" % i), 10)
            results.append((ok, time.monotonic() - scheduled, status))
        except Exception as e:
            results.append((False, time.monotonic() - scheduled, type(e).__name__))
            conn = None
        pool.put_nowait(conn)
    tasks, i, start = [], 0, time.monotonic()
    while True:
        scheduled = start + i / RATE
        if scheduled >= until:
            break
        await asyncio.sleep(max(0, scheduled - time.monotonic()))
        tasks.append(asyncio.create_task(send(i, scheduled)))
        i += 1
    await asyncio.gather(*tasks)

async def attack(until):
    attackers = []
    h1 = STALLED // 2
    h2_streams = STALLED - h1
    for i in range(h1):
        attackers.append(asyncio.create_task(h1_attacker(i, until)))
    conn = h1
    while h2_streams > 0:
        n = min(16, h2_streams)
        attackers.append(asyncio.create_task(h2_attacker(conn, n, until)))
        h2_streams -= n; conn += 1
    await asyncio.gather(*attackers)

async def send_reviews(until, settle):
    await asyncio.sleep(settle)            # let the stalls take hold first
    results = []
    await api_server(until, results)
    return results

def main():
    # The attackers and the "API server" run in two processes, each with its own event loop, so
    # the attackers' TLS handshakes (Python does them on its event loop) do not delay the real
    # reviews inside the client: the latencies measured are the server's.
    settle = 1.0 + STALLED / 200
    until = time.monotonic() + settle + DURATION
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(rfd)
        asyncio.run(attack(until))
        os.write(wfd, json.dumps(stats).encode())
        os._exit(0)
    os.close(wfd)
    results = asyncio.run(send_reviews(until, settle))
    with os.fdopen(rfd) as f:
        attack_stats = json.loads(f.read() or "{}")
    os.waitpid(child, 0)
    h1 = STALLED // 2
    h2 = (STALLED - h1 + 15) // 16
    lat = sorted(r[1] for r in results if r[0])
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")
    failures = {}
    for ok, _, status in results:
        if not ok:
            failures[str(status)] = failures.get(str(status), 0) + 1
    print(json.dumps({"stalled": STALLED, "h1_connections": h1, "h2_connections": h2,
        "injected": len(lat), "sent": len(results), "failures": failures,
        "p50_ms": round(pct(0.50), 2), "p99_ms": round(pct(0.99), 2),
        "max_ms": round(lat[-1] * 1000, 2) if lat else None, **attack_stats}))

main()
PY

echo "binary: $BIN"
echo "config: ${CONFIG_DIR:-embedded default}; server flags: defaults ${SERVER_ARGS:-}"
echo "reviews: $RATE/s for ${DURATION}s over $KEEPALIVE HTTP/1.1 keep-alive connections from 127.0.0.1"
for n in $STALLED; do
  rm -f "$work/ca.pem"
  start_server "stall-$n"
  echo "---- $n stalled clients (half HTTP/1.1 connections, half HTTP/2 streams, 16 per connection)"
  echo "load_average_before=$(cut -d' ' -f1-3 /proc/loadavg) cpus=$(nproc)"
  out=$(python3 "$work/hostile.py" "$PORT" "$work/ca.pem" "$n" "$RATE" "$DURATION" "$KEEPALIVE")
  echo "$out"
  awk '/VmRSS|VmHWM/ {printf "%s %.1f MiB  ", $1, $2/1024} END {print ""}' "/proc/$pid/status"
  echo "load_average_after=$(cut -d' ' -f1-3 /proc/loadavg)"
  stop_server
done
