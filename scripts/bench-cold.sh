#!/usr/bin/env bash
# Cold lookups of distinct names against one local unbound, three ways in one run:
#   dnsperf (the ceiling), httpdns through c-ares, and getaddrinfo on a thread pool.
# Prints each rate and the ratios. Needs root (unbound on port 53 of 127.0.0.77, so that a resolv.conf can
# point glibc at it, and a private mount namespace for that resolv.conf) and Debian's unbound and dnsperf.
# Usage: scripts/bench-cold.sh [NAMES] [IN_FLIGHT]    (HTTPDNS_BENCH_BIN=… to use another httpdns-bench binary)
set -euo pipefail
names=${1:-50000}
inflight=${2:-64}
address=127.0.0.77
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-bench-cold.XXXXXX)
unbound_pid=""
cleanup() {
  if [ -n "$unbound_pid" ]; then kill "$unbound_pid" 2>/dev/null || true; wait "$unbound_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

for tool in unbound dnsperf unshare python3; do
  command -v "$tool" >/dev/null || { echo "bench-cold: $tool is missing (apt-get install unbound dnsperf)" >&2; exit 2; }
done

. "$here/scripts/bench-binary.sh"

python3 - "$work" "$names" <<'PY'
import sys
work, count = sys.argv[1], int(sys.argv[2])
with open(f"{work}/local-data.conf", "w") as data, open(f"{work}/names.txt", "w") as names:
    for i in range(count):
        name = f"n{i}.bench.test"
        data.write(f'local-data: "{name}. 300 IN A 192.0.2.{i % 250 + 1}"\n')
        names.write(f"{name} A\n")
PY

cat > "$work/unbound.conf" <<CONF
server:
  interface: $address
  port: 53
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "$work"
  pidfile: ""
  use-syslog: no
  logfile: ""
  verbosity: 0
  num-threads: 1
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  local-zone: "bench.test." static
  include: "$work/local-data.conf"
remote-control:
  control-enable: no
CONF
unbound-checkconf "$work/unbound.conf" >/dev/null
unbound -d -c "$work/unbound.conf" &
unbound_pid=$!
# unbound says nothing when it is ready: ask until it answers (bounded).
for _ in $(seq 1 100); do
  if dig +short +time=1 +tries=1 @"$address" n0.bench.test A 2>/dev/null | grep -q 192.0.2.1; then break; fi
  kill -0 "$unbound_pid" 2>/dev/null || { echo "bench-cold: unbound exited" >&2; exit 1; }
  sleep 0.1
done
printf 'nameserver %s\noptions timeout:1 attempts:2\n' "$address" > "$work/resolv.conf"

dnsperf_qps=$(dnsperf -s "$address" -p 53 -d "$work/names.txt" -n 1 -q "$inflight" -c 1 2>&1 | awk '/Queries per second/ {print $4}')
cares_json=$("$bench" cold --resolver cares --dns "$address:53" --names-file "$work/names.txt" --concurrency "$inflight" --json)
gai_json=$(unshare -m sh -c "mount --bind '$work/resolv.conf' /etc/resolv.conf && exec '$bench' cold --resolver getaddrinfo --names-file '$work/names.txt' --concurrency '$inflight' --json")
# Also at the size of a default blocking-I/O pool (SwiftNIO's NIOThreadPool, which its getaddrinfo resolver uses,
# has one thread per core): what a backend resolving through getaddrinfo typically gets.
cores=$(nproc)
gai_pool_json=$(unshare -m sh -c "mount --bind '$work/resolv.conf' /etc/resolv.conf && exec '$bench' cold --resolver getaddrinfo --names-file '$work/names.txt' --concurrency '$cores' --json")

python3 - "$dnsperf_qps" "$cares_json" "$gai_json" "$names" "$inflight" "$gai_pool_json" "$cores" <<'PY'
import json, sys
dnsperf = float(sys.argv[1]); cares = json.loads(sys.argv[2]); gai = json.loads(sys.argv[3])
names, inflight = sys.argv[4], sys.argv[5]
pool, cores = json.loads(sys.argv[6]), sys.argv[7]
c, g = cares["lookupsPerSecond"], gai["lookupsPerSecond"]
print(f"cold lookups, {names} distinct names (A), {inflight} in flight, one local unbound (1 thread)")
print(f"  dnsperf (ceiling):          {dnsperf:10.0f} queries/s")
print(f"  httpdns via c-ares:         {c:10.0f} lookups/s  ({cares['failures']} failed)  ratio to dnsperf {c / dnsperf:.2f}x  (target >= 0.30x)")
print(f"  getaddrinfo, {inflight} threads:   {g:10.0f} lookups/s  ({gai['failures']} failed)  c-ares / getaddrinfo {c / g:.2f}x  (target >= 3.00x)")
p = pool["lookupsPerSecond"]
print(f"  getaddrinfo, {cores} threads (one per core, a default blocking pool): {p:10.0f} lookups/s  c-ares / that {c / p:.2f}x")
PY
