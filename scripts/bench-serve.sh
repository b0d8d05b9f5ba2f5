#!/usr/bin/env bash
# The service under load, each figure a ratio against a reference server measured in the same run:
#   /d cache hits over HTTP/1.1 keep-alive (wrk)   vs nginx returning the same JSON body
#   RFC 8484 GET cache hits over HTTP/2 (h2load)   vs dnsdist's DoH frontend with its packet cache
#   the same with mixed types: A, AAAA (no data), MX, TXT, SRV, HTTPS (no data), NXDOMAIN; the service relays
#   all but A and AAAA
#   resident memory of httpdns under that load and after it
# Everything listens on 127.0.0.x; dnsmasq is the upstream of both DNS servers. Needs Debian's wrk, nginx,
# nghttp2-client (h2load), dnsdist, dnsmasq-base and openssl (scripts/install-deps.sh --bench installs them).
# Usage: scripts/bench-serve.sh [SECONDS] [CONNECTIONS]    (HTTPDNS_BIN=… to use another httpdns binary)
set -euo pipefail
seconds=${1:-10}
connections=${2:-64}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-bench-serve.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in wrk nginx h2load dnsdist dnsmasq openssl curl python3; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || { echo "bench-serve: $tool is missing (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
if [ -z "${HTTPDNS_BIN:-}" ]; then
  (cd "$here" && swift build -c release --product httpdns >/dev/null)
  HTTPDNS_BIN="$here/.build/release/httpdns"
fi

wait_for() { # URL or "dns ADDRESS PORT": ask until it answers, at most 10 s
  for _ in $(seq 1 100); do
    if [ "$1" = dns ]; then dig +short +time=1 +tries=1 @"$2" -p "$3" bench.test A 2>/dev/null | grep -q 127.0.0.1 && return 0
    else curl -sk -o /dev/null "$1" && return 0; fi
    sleep 0.1
  done
  echo "bench-serve: $* did not come up" >&2; exit 1
}
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
cpu_ticks() { # user + system CPU ticks of the given processes and their children's threads so far
  local total=0 pid
  for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$total"
}

# Upstream: dnsmasq with one name, and records of other types for the mixed run.
cat > "$work/dnsmasq.conf" <<CONF
port=25391
listen-address=127.0.0.91
bind-interfaces
no-resolv
no-hosts
user=root
local=/test/
local=/invalid/
host-record=bench.test,127.0.0.1,3600
mx-host=bench.test,mx.bench.test,10
txt-record=bench.test,"v=spf1 -all"
srv-host=_sip._tcp.bench.test,sip.bench.test,5060,1,5
local-ttl=3600
CONF
/usr/sbin/dnsmasq --no-daemon --conf-file="$work/dnsmasq.conf" 2>/dev/null &
pids+=($!)
wait_for dns 127.0.0.91 25391

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" -out "$work/cert.pem" \
  -days 1 -subj "/CN=bench" -addext "subjectAltName=IP:127.0.0.1" 2>/dev/null

# httpdns: plain on 18053, TLS (h2) on 18443; no rate limit, so the benchmark measures the service.
HTTPDNS_RATE_LIMIT_PER_SECOND=0 HTTPDNS_LOG_LEVEL=warning "$HTTPDNS_BIN" serve --listen 127.0.0.1:18053 --upstream 127.0.0.91:25391 &
pids+=($!); plain_pid=$!
HTTPDNS_RATE_LIMIT_PER_SECOND=0 HTTPDNS_LOG_LEVEL=warning "$HTTPDNS_BIN" serve --listen 127.0.0.1:18443 --upstream 127.0.0.91:25391 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" &
pids+=($!); tls_pid=$!
wait_for "http://127.0.0.1:18053/healthz"
wait_for "https://127.0.0.1:18443/healthz"
rss_idle=$(rss_kib "$plain_pid")
body=$(curl -s "http://127.0.0.1:18053/d?host=bench.test")

# nginx: the same body, the same headers, keep-alive, one worker per core.
mkdir -p "$work/nginx"
cat > "$work/nginx.conf" <<CONF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx; proxy_temp_path $work/nginx; fastcgi_temp_path $work/nginx;
  uwsgi_temp_path $work/nginx; scgi_temp_path $work/nginx;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:18080;
    location = /d { default_type application/json; add_header Cache-Control "max-age=3600"; return 200 '$body'; }
  }
}
CONF
nginx -c "$work/nginx.conf" -g "daemon off;" &
pids+=($!); nginx_pid=$!
wait_for "http://127.0.0.1:18080/d?host=bench.test"

# dnsdist: DoH frontend, packet cache, the same upstream; no security polling (it would leave the machine).
cat > "$work/dnsdist.conf" <<CONF
setSecurityPollSuffix("")
setLocal("127.0.0.92:25392")
addDOHLocal("127.0.0.1:18444", "$work/cert.pem", "$work/key.pem", "/dns-query", { reusePort = true })
newServer({ address = "127.0.0.91:25391", healthCheckMode = "up" })
getPool(""):setCache(newPacketCache(10000, { maxTTL = 86400 }))
CONF
dnsdist --supervised --disable-syslog -C "$work/dnsdist.conf" >/dev/null 2>&1 &
pids+=($!); dnsdist_pid=$!
# A DoH GET query (base64url) for NAME TYPE.
doh_query() {
  python3 -c "import base64,struct,sys; q=struct.pack('>HHHHHH',0,0x100,1,0,0,0)+b''.join(bytes([len(l)])+l.encode() for l in sys.argv[1].split('.'))+b'\x00'+struct.pack('>HH',int(sys.argv[2]),1); print(base64.urlsafe_b64encode(q).decode().rstrip('='))" "$1" "$2"
}
query=$(doh_query bench.test 1)
mixed=("bench.test 1" "bench.test 28" "bench.test 15" "bench.test 16" "_sip._tcp.bench.test 33" "bench.test 65" "nosuch.bench.test 15")
: > "$work/httpdns-uris"; : > "$work/dnsdist-uris"
for question in "${mixed[@]}"; do
  q=$(doh_query $question)
  echo "https://127.0.0.1:18443/dns-query?dns=$q" >> "$work/httpdns-uris"
  echo "https://127.0.0.1:18444/dns-query?dns=$q" >> "$work/dnsdist-uris"
done
wait_for "https://127.0.0.1:18444/dns-query?dns=$query"
wait_for "https://127.0.0.1:18443/dns-query?dns=$query"

wrk_rps() { wrk -t2 -c"$connections" -d"${seconds}s" "$1" | awk '/Requests\/sec/ {print $2}'; }
h2_rps() { h2load -n 1000000000 -D "$seconds" -c "$connections" -m 10 -t 2 "$@" 2>/dev/null | awk '/finished in/ {print $4}'; }

# httpdns's runs sample its resident memory halfway through. Every run also counts the CPU time the server
# spent (user + system, nginx's workers included), a figure less at the mercy of a busy machine than req/s.
nginx_pids=("$nginx_pid" $(pgrep -P "$nginx_pid" || true))
ticks_before=$(cpu_ticks "$plain_pid")
wrk_rps "http://127.0.0.1:18053/d?host=bench.test" > "$work/httpdns-d" &
sleep $((seconds / 2)); rss_load=$(rss_kib "$plain_pid"); wait $!
httpdns_d=$(cat "$work/httpdns-d")
httpdns_ticks=$(( $(cpu_ticks "$plain_pid") - ticks_before ))
ticks_before=$(cpu_ticks "${nginx_pids[@]}")
nginx_d=$(wrk_rps "http://127.0.0.1:18080/d?host=bench.test")
nginx_ticks=$(( $(cpu_ticks "${nginx_pids[@]}") - ticks_before ))
ticks_before=$(cpu_ticks "$tls_pid")
h2_rps "https://127.0.0.1:18443/dns-query?dns=$query" > "$work/httpdns-doh" &
sleep $((seconds / 2)); rss_tls_load=$(rss_kib "$tls_pid"); wait $!
httpdns_doh=$(cat "$work/httpdns-doh")
httpdns_doh_ticks=$(( $(cpu_ticks "$tls_pid") - ticks_before ))
ticks_before=$(cpu_ticks "$dnsdist_pid")
dnsdist_doh=$(h2_rps "https://127.0.0.1:18444/dns-query?dns=$query")
dnsdist_ticks=$(( $(cpu_ticks "$dnsdist_pid") - ticks_before ))
# The mixed run: every question asked once first, so both answer from their caches.
while read -r uri; do curl -s -o /dev/null --cacert "$work/cert.pem" "$uri"; done < "$work/httpdns-uris"
while read -r uri; do curl -s -o /dev/null --cacert "$work/cert.pem" "$uri"; done < "$work/dnsdist-uris"
ticks_before=$(cpu_ticks "$tls_pid")
httpdns_mixed=$(h2_rps -i "$work/httpdns-uris")
httpdns_mixed_ticks=$(( $(cpu_ticks "$tls_pid") - ticks_before ))
ticks_before=$(cpu_ticks "$dnsdist_pid")
dnsdist_mixed=$(h2_rps -i "$work/dnsdist-uris")
dnsdist_mixed_ticks=$(( $(cpu_ticks "$dnsdist_pid") - ticks_before ))
rss_after=$(rss_kib "$plain_pid")
rss_tls_after=$(rss_kib "$tls_pid")

python3 - "$httpdns_d" "$nginx_d" "$httpdns_doh" "$dnsdist_doh" "$rss_idle" "$rss_load" "$rss_after" "$rss_tls_load" "$rss_tls_after" "$seconds" "$connections" "$httpdns_ticks" "$nginx_ticks" "$httpdns_doh_ticks" "$dnsdist_ticks" "$(getconf CLK_TCK)" "$httpdns_mixed" "$dnsdist_mixed" "$httpdns_mixed_ticks" "$dnsdist_mixed_ticks" <<'PY'
import sys
d, nginx, doh, dnsdist, idle, load, after, tls_load, tls_after, seconds, connections, d_ticks, nginx_ticks, doh_ticks, dnsdist_ticks, hz, mixed, dnsdist_mixed, mixed_ticks, dnsdist_mixed_ticks = sys.argv[1:]
d, nginx, doh, dnsdist, mixed, dnsdist_mixed = (float(x.replace("k", "e3")) for x in (d, nginx, doh, dnsdist, mixed, dnsdist_mixed))
per_request_us = lambda ticks, rate: int(ticks) / int(hz) * 1e6 / (rate * int(seconds))
mib = lambda kib: int(kib) / 1024
print(f"service load, {seconds} s per run, {connections} connections, cache hits only")
print(f"  /d over HTTP/1.1 keep-alive (wrk):  httpdns {d:9.0f} req/s   nginx {nginx:9.0f} req/s   ratio {d / nginx:.2f}x  (target >= 0.50x)")
print(f"     CPU per /d request:              httpdns {per_request_us(d_ticks, d):6.1f} us       nginx {per_request_us(nginx_ticks, nginx):6.1f} us       ratio {per_request_us(nginx_ticks, nginx) / per_request_us(d_ticks, d):.2f}x")
print(f"  DoH GET over HTTP/2 (h2load -m 10): httpdns {doh:9.0f} req/s   dnsdist {dnsdist:9.0f} req/s   ratio {doh / dnsdist:.2f}x  (target >= 1.00x)")
print(f"     CPU per DoH request:             httpdns {per_request_us(doh_ticks, doh):6.1f} us       dnsdist {per_request_us(dnsdist_ticks, dnsdist):6.1f} us       ratio {per_request_us(dnsdist_ticks, dnsdist) / per_request_us(doh_ticks, doh):.2f}x")
print(f"  DoH GET, mixed types (A, AAAA, MX, TXT, SRV, HTTPS, NXDOMAIN): httpdns {mixed:9.0f} req/s   dnsdist {dnsdist_mixed:9.0f} req/s   ratio {mixed / dnsdist_mixed:.2f}x")
print(f"     CPU per mixed DoH request:       httpdns {per_request_us(mixed_ticks, mixed):6.1f} us       dnsdist {per_request_us(dnsdist_mixed_ticks, dnsdist_mixed):6.1f} us       ratio {per_request_us(dnsdist_mixed_ticks, dnsdist_mixed) / per_request_us(mixed_ticks, mixed):.2f}x")
print(f"  httpdns resident memory: {mib(idle):.1f} MiB idle, {mib(load):.1f} MiB under wrk, {mib(after):.1f} MiB after; TLS instance {mib(tls_load):.1f} MiB under h2load, {mib(tls_after):.1f} MiB after")
PY
