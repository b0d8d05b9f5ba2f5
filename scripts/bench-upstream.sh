#!/usr/bin/env bash
# The service's cold misses over an encrypted upstream, against dnsdist doing the same (docs/PERFORMANCE.md, "The
# service's DoT upstream"): one local unbound (one thread, local data) serving DoT with a certificate made now;
# `httpdns serve` with `--upstream tls://…#NAME` and dnsdist 1.7 with a DoT backend (the name checked, no packet
# cache), both serving DoH on loopback; h2load asks each for distinct names (one connection, IN_FLIGHT streams, every
# name asked once), the order turning each round. Prints each round's rates, the ratio and the servers' CPU time.
# Beside them, as a control, each with a plain upstream (UDP to the same unbound): what the encryption itself costs
# each, and so whether a gap is the DoT path's or the service's.
# No root needed. Usage: scripts/bench-upstream.sh [NAMES] [IN_FLIGHT] [ROUNDS]   (HTTPDNS_BIN=… for another httpdns)
set -euo pipefail
names=${1:-20000}
inflight=${2:-64}
rounds=${3:-3}
address=127.0.0.79
tls_port=${HTTPDNS_BENCH_PORT:-25863}
udp_port=$((tls_port + 1))
# Each server's DoH port; the plain ones are the control.
servers=(httpdns dnsdist httpdns-plain dnsdist-plain)
declare -A port=([httpdns]=18463 [dnsdist]=18464 [httpdns-plain]=18465 [dnsdist-plain]=18466)
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-bench-upstream.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}" ${unbound_pid:-}; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

for tool in unbound dnsdist h2load openssl kdig curl python3; do
  command -v "$tool" >/dev/null || { echo "bench-upstream: $tool is missing (scripts/install-deps.sh --bench)" >&2; exit 2; }
done
if [ -n "${HTTPDNS_BIN:-}" ]; then
  httpdns=$HTTPDNS_BIN
else
  (cd "$here" && swift build -c release --product httpdns >/dev/null)
  httpdns="$here/.build/release/httpdns"
fi

# unbound's certificate holds its name only; the DoH frontends' hold 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=dot \
  -addext subjectAltName=DNS:dot.bench.test -keyout "$work/dot-key.pem" -out "$work/dot-cert.pem" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=doh \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# Local data for every name, and for each round and server a file of DoH GET URIs, each of a name asked only there.
pairs=(); for server in "${servers[@]}"; do pairs+=("$server=${port[$server]}"); done
python3 - "$work" "$names" "$rounds" "${pairs[@]}" <<'PY'
import base64, struct, sys
work, count, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
servers = [pair.split("=") for pair in sys.argv[4:]]
with open(f"{work}/local-data.conf", "w") as data:
    for i in range(count * rounds * len(servers) + 1):
        data.write(f'local-data: "n{i}.bench.test. 300 IN A 192.0.2.{i % 250 + 1}"\n')
def query(name):
    wire = struct.pack(">HHHHHH", 0, 0x100, 1, 0, 0, 0)
    wire += b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\x00" + struct.pack(">HH", 1, 1)
    return base64.urlsafe_b64encode(wire).decode().rstrip("=")
part = 0
for round_ in range(1, rounds + 1):
    for server, port in servers:
        with open(f"{work}/{server}-{round_}.txt", "w") as uris:
            for i in range(part * count + 1, (part + 1) * count + 1):
                uris.write(f"https://127.0.0.1:{port}/dns-query?dns={query(f'n{i}.bench.test')}\n")
        part += 1
PY

# shellcheck source=scripts/bench-unbound.sh
. "$here/scripts/bench-unbound.sh"
start_bench_unbound "$work" "$address" "$tls_port" "$work/dot-cert.pem" "$work/dot-key.pem" "$udp_port" || exit 1

# httpdns: no rate limit, so the benchmark measures the service; its upstream unbound over DoT, the name checked (the
# control: over UDP).
declare -A pid
serve() {
  HTTPDNS_RATE_LIMIT_PER_SECOND=0 HTTPDNS_LOG_LEVEL=warning "$httpdns" serve --listen "127.0.0.1:${port[$1]}" \
    --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" "${@:2}" 2>"$work/$1.log" &
  pids+=($!); pid[$1]=$!
}
serve httpdns --upstream "tls://$address:$tls_port#dot.bench.test" --upstream-cacert "$work/dot-cert.pem"
serve httpdns-plain --upstream "$address:$udp_port"

# dnsdist: a DoH frontend and unbound as a DoT backend, its certificate checked against the name (the control: a
# plain backend); no packet cache, so every query goes to the backend as every miss does for httpdns; no security
# polling (it would leave the machine).
dnsdist_with() {
  cat > "$work/$1.conf" <<CONF
setSecurityPollSuffix("")
setLocal("127.0.0.93:$((25393 + ${port[$1]} - 18464))")
addDOHLocal("127.0.0.1:${port[$1]}", "$work/cert.pem", "$work/key.pem", "/dns-query")
newServer({ $2, checkName = "n0.bench.test." }):setUp()
CONF
  dnsdist --supervised --disable-syslog -C "$work/$1.conf" >"$work/$1.log" 2>&1 &
  pids+=($!); pid[$1]=$!
}
dnsdist_with dnsdist "address = \"$address:$tls_port\", tls = \"openssl\", subjectName = \"dot.bench.test\", caStore = \"$work/dot-cert.pem\", validateCertificates = true"
dnsdist_with dnsdist-plain "address = \"$address:$udp_port\""

# Both answer n0 (which no round asks) over DoH before the runs start (bounded).
probe=$(python3 -c 'import base64,struct; w=struct.pack(">HHHHHH",0,0x100,1,0,0,0)+b"\x02n0\x05bench\x04test\x00"+struct.pack(">HH",1,1); print(base64.urlsafe_b64encode(w).decode().rstrip("="))')
for server in "${servers[@]}"; do
  for attempt in $(seq 1 100); do
    if curl -sf --cacert "$work/cert.pem" -o /dev/null "https://127.0.0.1:${port[$server]}/dns-query?dns=$probe"; then break; fi
    [ "$attempt" -lt 100 ] || { echo "bench-upstream: $server answers no DoH on ${port[$server]}" >&2; cat "$work/$server.log" >&2; exit 1; }
    sleep 0.1
  done
done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# One h2load run over FILE's URIs: "<requests per second> <2xx answers>"; a run that fails, or prints no rate, ends the
# script with h2load's output.
h2_run() {
  local out=$work/h2load.out
  if ! h2load -n "$names" -c 1 -m "$inflight" -i "$1" >"$out" 2>&1; then
    echo "bench-upstream: h2load failed on $1:" >&2; cat "$out" >&2; return 1
  fi
  awk '/^finished in/ { rate = $4 } /^status codes:/ { s2xx = $3 } END { if (rate == "" || s2xx == "") exit 1; print rate, s2xx }' "$out" \
    || { echo "bench-upstream: no rate in h2load's output:" >&2; cat "$out" >&2; return 1; }
}

results=()
for round in $(seq 1 "$rounds"); do
  # The order turns: each server goes first in one round of four (so give at least four rounds).
  for step in 0 1 2 3; do
    server=${servers[$(( (round - 1 + step) % 4 ))]}
    before=$(cpu_ticks "${pid[$server]}")
    line=$(h2_run "$work/$server-$round.txt") || exit 1
    read -r rate ok <<<"$line"
    results+=("$round $server $rate $ok $(( $(cpu_ticks "${pid[$server]}") - before ))")
  done
done

printf '%s\n' "${results[@]}" | python3 -c '
import sys, statistics
names, hz = int(sys.argv[1]), int(sys.argv[2])
rows = {}
for line in sys.stdin:
    round_, server, rate, ok, ticks = line.split()
    rows.setdefault(int(round_), {})[server] = (float(rate), int(ok.rstrip(",")), 0, int(ticks))
print(f"cold misses: {names} distinct names (A) per round and server, DoH GET from h2load (1 connection, '"$inflight"' streams)")
print("round  httpdns DoT/s  dnsdist DoT/s  httpdns/dnsdist  CPU per query: httpdns  dnsdist  | plain upstream (control): httpdns/s  dnsdist/s  ratio")
ratios, controls, bad = [], [], 0
for r in sorted(rows):
    h, d, hp, dp = (rows[r][server] for server in ("httpdns", "dnsdist", "httpdns-plain", "dnsdist-plain"))
    ratios.append(h[0] / d[0])
    controls.append(hp[0] / dp[0])
    bad += sum(names - row[1] for row in (h, d, hp, dp))
    cpu = lambda row: row[3] / hz / names * 1e6
    print(f"{r:<6} {h[0]:<14.0f} {d[0]:<14.0f} {ratios[-1]:<16.2f} {cpu(h):8.1f} us {cpu(d):8.1f} us  | {hp[0]:<10.0f} {dp[0]:<10.0f} {controls[-1]:.2f}")
print(f"median httpdns/dnsdist over DoT: {statistics.median(ratios):.2f}x  (target >= 1.00x); with a plain upstream: {statistics.median(controls):.2f}x")
if bad:
    print(f"bench-upstream: {bad} queries were not answered 2xx: the rates above are not to be quoted", file=sys.stderr)
    sys.exit(1)
' "$names" "$(getconf CLK_TCK)"
