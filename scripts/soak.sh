#!/usr/bin/env bash
# The soak: `httpdns serve` over TLS for MINUTES (default 10) at about half its measured peak, HTTP/2 and
# HTTP/1.1, hits, misses, NXDOMAIN, bad requests and resets, with its upstream restarted halfway. Prints, per
# minute, what was sent, the unexpected errors, p50/p99 latency and resident memory; exits 1 when there was an
# unexpected error or memory moved more than 10% after the first minute (docs/RELIABILITY.md, "Soak").
# Everything listens on 127.0.0.96-97. Needs dnsmasq, h2load, dig, curl, openssl and python's h2
# (scripts/install-deps.sh --bench). Usage: scripts/soak.sh [MINUTES] [--client] [soak.py options…]
# (HTTPDNS_BIN=… to use another httpdns binary). --client soaks the library instead: HostResolver lookups through
# the service, which is stopped and started again halfway, by `httpdns-bench soak-client` (HTTPDNS_BENCH_BIN=… to
# use another httpdns-bench binary).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
minutes=10
if [[ ${1:-} =~ ^[0-9]+$ ]]; then minutes=$1; shift; fi
for tool in dnsmasq h2load dig curl openssl python3; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "soak: $tool is missing (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
python3 -c "import h2" 2>/dev/null || { echo "soak: python's h2 is missing (scripts/install-deps.sh)" >&2; exit 2; }
if [ -z "${HTTPDNS_BIN:-}" ]; then
  (cd "$here" && swift build -c release --product httpdns >/dev/null)
  HTTPDNS_BIN="$here/.build/release/httpdns"
fi
bench=()
if [[ " $* " == *" --client "* ]]; then
  if [ -z "${HTTPDNS_BENCH_BIN:-}" ]; then
    (cd "$here" && swift build -c release --product httpdns-bench >/dev/null)
    HTTPDNS_BENCH_BIN="$here/.build/release/httpdns-bench"
  fi
  bench=(--httpdns-bench "$HTTPDNS_BENCH_BIN")
fi
PATH="$PATH:/usr/sbin" exec python3 "$here/scripts/soak.py" "$minutes" --httpdns "$HTTPDNS_BIN" "${bench[@]}" "$@"
