#!/usr/bin/env bash
# Cold lookups of distinct names (A), N in flight, through DoTSource against c-ares over UDP, both to the same local
# unbound (one thread, local data, DoT on a second port with a certificate made now), in alternating rounds.
# Prints each round's rates and the ratio of DoT's time to c-ares's (docs/PERFORMANCE.md, "DNS over TLS"), then
# DoT's resident memory: 64 idle connections (each of its own DoTSource) to unbound, and 1,000 queries in flight on one
# connection to a server that reads them and answers none (a Python TLS server, the fault it injects a silent resolver).
# No root needed: unbound listens on 127.0.0.78 at high ports.
# Usage: scripts/bench-dot.sh [NAMES] [IN_FLIGHT] [ROUNDS]    (HTTPDNS_BENCH_BIN=… to use another httpdns-bench binary)
set -euo pipefail
names=${1:-20000}
inflight=${2:-64}
rounds=${3:-3}
address=127.0.0.78
port=${HTTPDNS_BENCH_PORT:-25853}
tls_port=$((port + 1))
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-bench-dot.XXXXXX)
unbound_pid=""
holder_pid=""
cleanup() {
  for pid in $unbound_pid $holder_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in unbound openssl kdig python3; do
  command -v "$tool" >/dev/null || { echo "bench-dot: $tool is missing (scripts/install-deps.sh)" >&2; exit 2; }
done

. "$here/scripts/bench-binary.sh"

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=dot \
  -addext subjectAltName=DNS:dot.bench.test -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# One names file per round and way: every lookup is of a name neither way has asked before (unbound's answers from
# local data are alike for all).
python3 - "$work" "$names" "$rounds" <<'PY'
import sys
work, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
total = count * rounds * 2
with open(f"{work}/local-data.conf", "w") as data:
    for i in range(total):
        data.write(f'local-data: "n{i}.bench.test. 300 IN A 192.0.2.{i % 250 + 1}"\n')
for part in range(rounds * 2):
    with open(f"{work}/names-{part}.txt", "w") as names:
        for i in range(part * count, (part + 1) * count):
            names.write(f"n{i}.bench.test A\n")
PY

# shellcheck source=scripts/bench-unbound.sh
. "$here/scripts/bench-unbound.sh"
start_bench_unbound "$work" "$address" "$tls_port" "$work/cert.pem" "$work/key.pem" "$port" || exit 1

# What the server itself gives, by a client none of us wrote: dnsperf over UDP and over DoT (one connection, like
# DoTSource; it does not check the certificate), the same in-flight count, run in every round beside the two ways.
dnsperf_rate() {
  command -v dnsperf >/dev/null || { echo 0; return; }
  dnsperf -m "$1" -s "$address" -p "$2" -d "$3" -n 1 -q "$inflight" -c 1 2>&1 | awk '/Queries per second/ {print $4}'
}

results=()
part=0
for round in $(seq 1 "$rounds"); do
  # Which way goes first alternates.
  if [ $((round % 2)) -eq 1 ]; then order="cares dot"; else order="dot cares"; fi
  for way in $order; do
    if [ "$way" = cares ]; then
      json=$("$bench" cold --resolver cares --dns "$address:$port" --names-file "$work/names-$part.txt" --concurrency "$inflight" --json)
    else
      json=$("$bench" cold --resolver dot --dot "tls://$address:$tls_port" --server-name dot.bench.test --cacert "$work/cert.pem" \
        --names-file "$work/names-$part.txt" --concurrency "$inflight" --json)
    fi
    results+=("$round $way $json")
    part=$((part + 1))
  done
  results+=("$round dnsperf {\"udp\": $(dnsperf_rate udp "$port" "$work/names-0.txt"), \"dot\": $(dnsperf_rate dot "$tls_port" "$work/names-0.txt")}")
done

printf '%s\n' "${results[@]}" | python3 -c '
import json, sys, statistics
rows = {}
for line in sys.stdin:
    round_, way, text = line.split(" ", 2)
    rows.setdefault(int(round_), {})[way] = json.loads(text)
print(f"cold lookups, '"$names"' distinct names (A) per round and way, '"$inflight"' in flight, one local unbound (1 thread)")
print("round  c-ares UDP/s  DoTSource/s  failures  dnsperf UDP/s  dnsperf DoT/s  DoT/c-ares time  DoTSource/dnsperf DoT time")
ratios, ceilings, failed = [], [], 0
for r in sorted(rows):
    c, d, p = rows[r]["cares"], rows[r]["dot"], rows[r]["dnsperf"]
    cr, dr, cf, df = c["lookupsPerSecond"], d["lookupsPerSecond"], c["failures"], d["failures"]
    failed += cf + df
    ratio = cr / dr
    ratios.append(ratio)
    # Time per lookup, DoTSource over dnsperf: the rate of dnsperf over the rate of DoTSource.
    ceiling = p["dot"] / dr if dr and p["dot"] else float("nan")
    ceilings.append(ceiling)
    pu, pd = p["udp"], p["dot"]
    print(f"{r:<6} {cr:<13.0f} {dr:<12.0f} {cf}/{df:<7} {pu:<14.0f} {pd:<14.0f} {ratio:<16.2f} {ceiling:.2f}")
print(f"median DoT time / c-ares time: {statistics.median(ratios):.2f}x  (target <= 1.50x)")
print(f"median DoTSource time / dnsperf DoT time: {statistics.median(ceilings):.2f}x")
if failed:
    print(f"bench-dot: {failed} lookups failed: the rates above count them as done, and are not to be quoted", file=sys.stderr)
    sys.exit(1)
'

# Memory. The holding server: TLS with unbound's certificate on the next port, reads length-prefixed queries on any
# connection and answers none; once it has read IN_FLIGHT of them it creates held-file, the bench's sign that all are in
# flight.
memory_in_flight=1000
python3 - "$address" "$((tls_port + 1))" "$work/cert.pem" "$work/key.pem" "$memory_in_flight" "$work/held" "$work/holder-ready" <<'PY' &
import socket, ssl, sys, threading
address, port, cert, key, expected, held_file, ready_file = sys.argv[1], int(sys.argv[2]), *sys.argv[3:5], int(sys.argv[5]), *sys.argv[6:8]
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind((address, port))
listener.listen(16)
open(ready_file, "w").close()
lock, read = threading.Lock(), [0]
def hold(connection):
    try:
        with context.wrap_socket(connection, server_side=True) as tls:
            pending = b""
            while data := tls.recv(65536):
                pending += data
                while len(pending) >= 2 and len(pending) >= 2 + int.from_bytes(pending[:2], "big"):
                    pending = pending[2 + int.from_bytes(pending[:2], "big"):]
                    with lock:
                        read[0] += 1
                        if read[0] == expected:
                            open(held_file, "w").close()
    except (OSError, ssl.SSLError):
        pass
while True:
    connection, _ = listener.accept()
    threading.Thread(target=hold, args=(connection,), daemon=True).start()
PY
holder_pid=$!
for attempt in $(seq 1 100); do
  [ -e "$work/holder-ready" ] && break
  [ "$attempt" -lt 100 ] || { echo "bench-dot: the holding server did not start" >&2; exit 1; }
  sleep 0.1
done
"$bench" dot-memory --dot "tls://$address:$tls_port" --hold "tls://$address:$((tls_port + 1))" --held-file "$work/held" \
  --server-name dot.bench.test --cacert "$work/cert.pem" --idle-connections 64 --in-flight "$memory_in_flight"
