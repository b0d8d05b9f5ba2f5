# Sourced by the DoT benchmarks (bench-dot.sh, bench-upstream.sh): the local unbound they measure against.
#
# start_bench_unbound WORK ADDRESS TLS_PORT CERT KEY [UDP_PORT]
#   unbound on ADDRESS, one thread, answering bench.test from WORK/local-data.conf (which must hold n0.bench.test),
#   DoT on TLS_PORT with CERT and KEY (a certificate for dot.bench.test), plain DNS on UDP_PORT when given. Sets
#   unbound_pid (the caller stops it) and returns once unbound answers n0 over TLS with its name checked (bounded).
start_bench_unbound() {
  local work=$1 address=$2 tls_port=$3 cert=$4 key=$5 udp_port=${6:-}
  {
    echo "server:"
    if [ -n "$udp_port" ]; then echo "  interface: $address@$udp_port"; echo "  port: $udp_port"; fi
    cat <<CONF
  interface: $address@$tls_port
  tls-port: $tls_port
  tls-service-key: "$key"
  tls-service-pem: "$cert"
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
  # dnsdist 1.7's DoT backend opens a connection for each query it has in flight: room for all of them.
  incoming-num-tcp: 4096
  access-control: 127.0.0.0/8 allow
  local-zone: "bench.test." static
  include: "$work/local-data.conf"
remote-control:
  control-enable: no
CONF
  } > "$work/unbound.conf"
  unbound-checkconf "$work/unbound.conf" >/dev/null || return 1
  unbound -d -c "$work/unbound.conf" >"$work/unbound.log" 2>&1 &
  unbound_pid=$!
  # unbound says nothing when it is ready: ask over TLS, the name checked, until it answers (bounded).
  local attempt
  for attempt in $(seq 1 100); do
    if kdig +short +time=1 +retry=0 @"$address" -p "$tls_port" +tls +tls-ca="$cert" +tls-hostname=dot.bench.test \
      n0.bench.test A 2>/dev/null | grep -q 192.0.2.1; then return 0; fi
    kill -0 "$unbound_pid" 2>/dev/null || { echo "unbound exited:" >&2; cat "$work/unbound.log" >&2; return 1; }
    sleep 0.1
  done
  echo "unbound did not answer over TLS within 100 tries:" >&2
  cat "$work/unbound.log" >&2
  return 1
}
