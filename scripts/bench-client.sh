#!/usr/bin/env bash
# The client side against one local dnsmasq, in one run (docs/PERFORMANCE.md):
#   - cold lookups through the HTTPDNS clients (native API and DoH, kept-alive, to `httpdns serve` over TLS, whose
#     cache is cold too) against c-ares straight to the service's own upstream;
#   - h2load's misses from the same service (names of its own), the ceiling any client meets there;
#   - pre-resolution of NAMES names through HostResolver: /resolve batches, /d, DoH (time and HTTP requests);
#   - cached lookups through HostResolver against ResolverCache hits.
# Usage: scripts/bench-client.sh [NAMES_PER_ROUND] [IN_FLIGHT] [PRERESOLVE_NAMES]
#   (HTTPDNS_BIN=… for another httpdns to serve, HTTPDNS_BENCH_BIN=… for another httpdns-bench)
set -euo pipefail
per_round=${1:-2000}
inflight=${2:-64}
preresolve=${3:-1000}
rounds=3
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-bench-client.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in dnsmasq openssl python3; do
  command -v "$tool" >/dev/null || { echo "bench-client: $tool is missing (scripts/install-deps.sh)" >&2; exit 2; }
done
if [ -n "${HTTPDNS_BIN:-}" ]; then
  httpdns=$HTTPDNS_BIN
else
  (cd "$here" && swift build -c release --product httpdns >/dev/null)
  httpdns="$here/.build/release/httpdns"
fi
. "$here/scripts/bench-binary.sh"

# Distinct names: the cold rounds take none twice, and pre-resolution has names of its own.
python3 - "$work" $((per_round * rounds * 3)) $((preresolve * 3)) <<'PY'
import sys
work, cold, pre = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(f"{work}/cold.txt", "w") as names:
    names.writelines(f"c{i}.bench.test\n" for i in range(cold))
with open(f"{work}/pre.txt", "w") as names:
    names.writelines(f"p{i}.bench.test\n" for i in range(pre))
PY

# The upstream: every name under bench.test has an A and an AAAA record, answered from dnsmasq's configuration.
dns_port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.78", 0)); print(s.getsockname()[1])')
dnsmasq --no-daemon --conf-file=/dev/null --no-resolv --no-hosts --bind-interfaces --listen-address=127.0.0.78 \
  --port="$dns_port" --address=/bench.test/192.0.2.1 --address=/bench.test/2001:db8::1 --cache-size=0 2>"$work/dnsmasq.log" &
pids+=($!)

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
HTTPDNS_RATE_LIMIT_PER_SECOND=0 HTTPDNS_LOG_LEVEL=warning "$httpdns" serve --listen 127.0.0.1:0 \
  --upstream "127.0.0.78:$dns_port" --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --log-level info 2>"$work/serve.log" &
pids+=($!)
for _ in $(seq 100); do grep -q "listening" "$work/serve.log" && break; sleep 0.1; done
port=$(sed -n 's/.*port=\([0-9]*\).*listening.*/\1/p' "$work/serve.log" | head -1)
[ -n "$port" ] || { echo "bench-client: httpdns serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }

echo "== cold lookups: HTTPDNS clients against c-ares, one upstream (dnsmasq at 127.0.0.78:$dns_port)"
"$bench" client --dns "127.0.0.78:$dns_port" --server "https://127.0.0.1:$port" --cacert "$work/cert.pem" \
  --names-file "$work/cold.txt" --names "$per_round" --rounds "$rounds" --concurrency "$inflight"
# What a client written in C gets from the same service: h2load asking for misses of names of its own (one
# connection, IN_FLIGHT streams), three times. The service's miss path bounds every client's ratio from below.
if command -v h2load >/dev/null; then
  echo "== h2load: /d misses from the same service, $per_round names, one connection, $inflight streams"
  for round in 1 2 3; do
    python3 -c "import sys; sys.stdout.writelines(f'https://127.0.0.1:$port/d?host=h$round-{i}.bench.test&query=4\\n' for i in range($per_round))" >"$work/h2load-$round.txt"
    h2load -n "$per_round" -c 1 -m "$inflight" -i "$work/h2load-$round.txt" 2>&1 | grep -E '^finished in' | sed 's/^/  /'
  done
else
  echo "== h2load is missing (scripts/install-deps.sh --bench): no ceiling for the service's misses"
fi
echo "== pre-resolution"
"$bench" preresolve --server "https://127.0.0.1:$port" --cacert "$work/cert.pem" --names-file "$work/pre.txt" --names "$preresolve"
echo "== cached lookups through the policy"
"$bench" policy
