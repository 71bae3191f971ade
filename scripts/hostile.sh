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
# Two more scenarios (issue 36), each against a fresh server with --health-port:
#   handshake  FLOOD (4,200) TCP connections from 127.0.0.2-.9 that never send a ClientHello,
#              each reopened as soon as the server closes it, for DURATION seconds; meanwhile
#              real reviews at RATE/s, each on a fresh TLS connection from 127.0.0.1, and a
#              /healthz every 100 ms on the health port. Target: >= 99% of the reviews
#              injected within 1 s, every /healthz answered.
#   window0    W0_CONNS (3) HTTP/2 connections from 127.0.0.2.. that advertise a stream window of
#              0 and post W0_STREAMS (100) reviews each whose answer the server cannot send: a
#              `uid` of W0_UID_BYTES (1 MiB, the answer repeats it; refused now) and a pod of
#              W0_CONTAINERS containers with HTTP probes (the patch rewrites them, about 870
#              bytes of answer each: 1,200 make a 1 MiB answer). RSS is read before, while the
#              answers are held, and after --write-timeout. Target: < 64 MiB added.
#
# Environment knobs (defaults in brackets):
#   SCENARIOS [stall handshake window0]
#   STALLED   [8 64 512]
#   FLOOD     [4200]
#   W0_CONNS [3]  W0_STREAMS [100]  W0_UID_BYTES [1048576]  W0_CONTAINERS [1]
#   RATE      [100]        real reviews per second
#   DURATION  [10]         seconds of reviews per scenario
#   KEEPALIVE [4]          connections the real reviews share
#   PORT      [19643]
#   BIN       [target/release/outrigger]   the binary to measure (e.g. an older build)
#   NO_BUILD  []           set to skip `cargo build --release`
#   CONFIG_DIR []          Istio's config/values/mesh files; empty = the embedded default
#   SERVER_ARGS []         extra flags for the server
# Needs python3 (its ssl module), and for window0 the `h2` package (pip install h2). Loopback
# only; every loop is bounded by DURATION (window0: by the server's --write-timeout, at most
# 150 s); the server is stopped on exit.
set -euo pipefail

SCENARIOS=${SCENARIOS:-stall handshake window0}
STALLED=${STALLED:-8 64 512}
FLOOD=${FLOOD:-4200}
W0_CONNS=${W0_CONNS:-3}
W0_STREAMS=${W0_STREAMS:-100}
W0_UID_BYTES=${W0_UID_BYTES:-1048576}
W0_CONTAINERS=${W0_CONTAINERS:-1}
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
# 4,200 flood connections (client and server side) and the server's own descriptors.
ulimit -n 16384 2>/dev/null || ulimit -n 4096 2>/dev/null || true

# No configuration flag: the embedded default (a path given that does not exist stops serve).
cfg=()
if [ -n "$CONFIG_DIR" ]; then
  cfg=(--injectConfigFile "$CONFIG_DIR/config" --valuesFile "$CONFIG_DIR/values" --meshConfigFile "$CONFIG_DIR/mesh")
fi

start_server() {
  local name=$1
  shift
  # shellcheck disable=SC2086
  "$BIN" serve --address 127.0.0.1 --port "$PORT" --caBundleFile "$work/ca.pem" \
    --native-sidecars=false --log-level warn "${cfg[@]}" "$@" ${SERVER_ARGS:-} 2>"$work/$name.log" &
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

cat > "$work/handshake.py" <<'PY'
import asyncio, json, os, ssl, sys, time

PORT, HEALTH, CA, FLOOD, RATE, DURATION = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
    int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6]))
stats = {"flood_connects": 0, "flood_closed_by_server": 0, "flood_connect_errors": 0}

async def silent(i, until):
    # Never sends a byte; reopens as soon as the server closes it.
    ip = "127.0.0.%d" % (2 + i % 8)
    while time.monotonic() < until:
        try:
            r, w = await asyncio.open_connection("127.0.0.1", PORT, local_addr=(ip, 0))
        except OSError:
            stats["flood_connect_errors"] += 1; await asyncio.sleep(0.05); continue
        stats["flood_connects"] += 1
        try:
            await asyncio.wait_for(r.read(1), max(0.01, until - time.monotonic()))
            stats["flood_closed_by_server"] += 1
        except (asyncio.TimeoutError, OSError):
            pass
        w.close()

def review(uid):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "hello-7d4f9-",
           "labels": {"app": "hello"}}, "spec": {"containers": [{"name": "hello", "image": "nginx"}]}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid, "namespace": "default", "operation": "CREATE", "object": pod}}).encode()

async def fresh_review(i, scheduled, results):
    c = ssl.create_default_context(cafile=CA); c.set_alpn_protocols(["http/1.1"])
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", PORT, ssl=c,
            server_hostname="localhost", local_addr=("127.0.0.1", 0)), 10)
        body = review("real-%d" % i)
        w.write(b"POST /inject HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
        data = await asyncio.wait_for(r.read(), 10)
        ok = data.startswith(b"HTTP/1.1 200") and b'"patch"' in data
        w.close()
        results.append((ok, time.monotonic() - scheduled))
    except Exception as e:
        results.append((False, time.monotonic() - scheduled))

async def healthz(scheduled, results):
    try:
        r, w = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", HEALTH), 5)
        w.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        data = await asyncio.wait_for(r.read(), 5)
        w.close()
        results.append((data.startswith(b"HTTP/1.1 200"), time.monotonic() - scheduled))
    except Exception:
        results.append((False, time.monotonic() - scheduled))

async def paced(every, until, make):
    tasks, i, start = [], 0, time.monotonic()
    while True:
        at = start + i * every
        if at >= until:
            break
        await asyncio.sleep(max(0, at - time.monotonic()))
        tasks.append(asyncio.create_task(make(i, at)))
        i += 1
    await asyncio.gather(*tasks)

def main():
    settle = 2.0
    until = time.monotonic() + settle + DURATION
    rfd, wfd = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(rfd)
        async def flood():
            await asyncio.gather(*(silent(i, until) for i in range(FLOOD)))
        asyncio.run(flood())
        os.write(wfd, json.dumps(stats).encode())
        os._exit(0)
    os.close(wfd)
    reviews, health = [], []
    async def measure():
        await asyncio.sleep(settle)
        await asyncio.gather(
            paced(1 / RATE, until, lambda i, at: fresh_review(i, at, reviews)),
            paced(0.1, until, lambda i, at: healthz(at, health)))
    asyncio.run(measure())
    with os.fdopen(rfd) as f:
        flood_stats = json.loads(f.read() or "{}")
    os.waitpid(child, 0)
    lat = sorted(t for ok, t in reviews if ok)
    within = sum(1 for ok, t in reviews if ok and t <= 1.0)
    pct = lambda p: round(lat[min(len(lat) - 1, int(p * len(lat)))] * 1000, 1) if lat else None
    print(json.dumps({"flood": FLOOD, "reviews_sent": len(reviews), "injected": len(lat),
        "injected_within_1s": within,
        "share_within_1s": round(within / max(1, len(reviews)), 4),
        "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1.0),
        "healthz_sent": len(health), "healthz_ok": sum(1 for ok, _ in health if ok),
        "healthz_max_ms": round(max((t for _, t in health), default=0) * 1000, 1),
        **flood_stats}))

main()
PY

cat > "$work/window0.py" <<'PY'
import asyncio, json, ssl, sys, time
import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings

PORT, CA, CONNS, STREAMS, UID_BYTES, CONTAINERS, PID = (int(sys.argv[1]), sys.argv[2],
    int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])

def rss():
    with open("/proc/%s/status" % PID) as f:
        return {l.split(":")[0]: int(l.split()[1]) // 1024 for l in f if l.startswith(("VmRSS", "VmHWM"))}

def review(i):
    containers = [{"name": "c%d" % c, "image": "nginx", "ports": [{"containerPort": 8000 + c}],
                   "readinessProbe": {"httpGet": {"path": "/ready", "port": 8000 + c}},
                   "livenessProbe": {"httpGet": {"path": "/live", "port": 8000 + c}}}
                  for c in range(CONTAINERS)]
    uid = ("%d-" % i).ljust(UID_BYTES, "u")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "big-",
           "labels": {"app": "big"}}, "spec": {"containers": containers}}
    return json.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
        "request": {"uid": uid, "namespace": "default", "operation": "CREATE", "object": pod}}).encode()

statuses = {}
def count(k):
    statuses[k] = statuses.get(k, 0) + 1

async def conn(ci):
    c = ssl.create_default_context(cafile=CA); c.set_alpn_protocols(["h2"])
    r, w = await asyncio.open_connection("127.0.0.1", PORT, ssl=c, server_hostname="localhost",
        local_addr=("127.0.0.%d" % (2 + ci), 0))
    h = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    h.initiate_connection()
    # Stream window 0: the server can send no answer byte; received data is never acknowledged.
    h.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0})
    pending = {}
    for s in range(STREAMS):
        sid = h.get_next_available_stream_id()
        body = review(ci * 1000 + s)
        h.send_headers(sid, [(":method", "POST"), (":scheme", "https"), (":authority", "localhost"),
            (":path", "/inject"), ("content-type", "application/json"),
            ("content-length", str(len(body)))])
        pending[sid] = [body, 0]
    def pump():
        for sid in list(pending):
            body, off = pending[sid]
            try:
                while off < len(body):
                    room = min(h.local_flow_control_window(sid), h.max_outbound_frame_size)
                    if room <= 0:
                        break
                    chunk = body[off:off + room]
                    off += len(chunk)
                    h.send_data(sid, chunk, end_stream=off >= len(body))
            except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError):
                off = len(body)
            pending[sid][1] = off
            if off >= len(body):
                del pending[sid]
        w.write(h.data_to_send())
    pump()
    try:
        while True:
            data = await asyncio.wait_for(r.read(65536), 120)
            if not data:
                count("closed_by_server"); break
            for e in h.receive_data(data):
                if isinstance(e, h2.events.ResponseReceived):
                    count(dict(e.headers).get(b":status", b"?").decode())
                elif isinstance(e, h2.events.StreamReset):
                    pending.pop(e.stream_id, None); count("reset")
                elif isinstance(e, h2.events.ConnectionTerminated):
                    count("goaway")
            pump()
    except (asyncio.TimeoutError, OSError, ssl.SSLError, h2.exceptions.ProtocolError) as e:
        count(type(e).__name__)

async def main():
    before = rss()
    tasks = [asyncio.create_task(conn(i)) for i in range(CONNS)]
    peak = before["VmRSS"]
    t0 = time.monotonic()
    while not all(t.done() for t in tasks) and time.monotonic() - t0 < 150:
        await asyncio.sleep(0.2)
        peak = max(peak, rss()["VmRSS"])
    await asyncio.gather(*tasks, return_exceptions=True)
    after = rss()
    print(json.dumps({"connections": CONNS, "streams": STREAMS, "uid_bytes": UID_BYTES,
        "containers": CONTAINERS, "statuses": statuses, "seconds": round(time.monotonic() - t0, 1),
        "rss_before_mib": before["VmRSS"], "rss_peak_mib": peak, "rss_after_mib": after["VmRSS"],
        "added_mib": peak - before["VmRSS"], "vmhwm_mib": after["VmHWM"]}))

asyncio.run(main())
PY

echo "binary: $BIN"
echo "config: ${CONFIG_DIR:-embedded default}; server flags: defaults ${SERVER_ARGS:-}"
for scenario in $SCENARIOS; do
  case $scenario in
  stall)
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
    ;;
  handshake)
    rm -f "$work/ca.pem"
    health=$((PORT + 1))
    start_server "handshake" --health-port "$health"
    echo "---- $FLOOD silent TCP connections from 127.0.0.2-.9 (reopened when closed); reviews at $RATE/s on fresh TLS connections, /healthz every 100 ms, ${DURATION}s"
    echo "load_average_before=$(cut -d' ' -f1-3 /proc/loadavg) cpus=$(nproc)"
    python3 "$work/handshake.py" "$PORT" "$health" "$work/ca.pem" "$FLOOD" "$RATE" "$DURATION"
    awk '/VmRSS|VmHWM/ {printf "%s %.1f MiB  ", $1, $2/1024} END {print ""}' "/proc/$pid/status"
    echo "load_average_after=$(cut -d' ' -f1-3 /proc/loadavg)"
    stop_server
    ;;
  window0)
    rm -f "$work/ca.pem"
    start_server "window0"
    echo "---- $W0_CONNS HTTP/2 connections x $W0_STREAMS streams at window 0: uid $W0_UID_BYTES bytes, $W0_CONTAINERS containers"
    python3 "$work/window0.py" "$PORT" "$work/ca.pem" "$W0_CONNS" "$W0_STREAMS" "$W0_UID_BYTES" "$W0_CONTAINERS" "$pid"
    stop_server
    ;;
  *) echo "unknown scenario $scenario" >&2; exit 2 ;;
  esac
done
