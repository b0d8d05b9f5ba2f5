#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages swift-httpdns builds, tests and benchmarks with, if any is missing.
#   libc-ares-dev, pkg-config   build: the c-ares C library the CAres module wraps
#   dnsmasq-base                tests: a real DNS server the integration tests start on 127.0.0.x
#   curl, openssl, knot-dnsutils, nghttp2-client, prometheus   tests of the service: an HTTP/2 and DoH client,
#                               test certificates, kdig (DoH), nghttp and h2load (HTTP/2), promtool (checks /metrics)
#   nginx-light                 tests of the interceptor: a real HTTPS origin with name-based virtual hosts
#   unbound, dnsperf, bind9-dnsutils   benchmarks: the local resolver, the load generator, dig
#   with --bench also: wrk, dnsdist   the service's benchmarks
#   dnspython[doh] (PyPI)       tests of the service: a DoH client none of us wrote
set -euo pipefail
packages=(libc-ares-dev pkg-config dnsmasq-base curl openssl knot-dnsutils nghttp2-client prometheus nginx-light unbound dnsperf bind9-dnsutils)
if [ "${1:-}" = "--bench" ]; then packages+=(wrk dnsdist); fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
# A DoH client and a raw HTTP/2 client (scripts/hostile-h2.py) from PyPI for the tests, into the python3 on PATH.
if ! python3 -c 'import h2, dns.query, sys; sys.exit(0 if dns.query.have_doh else 1)' 2>/dev/null; then
  echo "installing: dnspython[doh] h2 (pip)" >&2
  python3 -m pip install --quiet --disable-pip-version-check 'dnspython[doh]>=2.6' 'h2>=4.1' >&2
fi
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}" >&2
# Several of these packages ship a service (unbound, prometheus, nginx, dnsdist) that Debian starts on install,
# some on every interface. The tests and benchmarks start their own instances on loopback, so keep the packaged
# services from starting: policy-rc.d for the install, and disabled afterwards where systemd runs.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod +x "$policy"
  trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ -d /run/systemd/system ]; then
  for service in unbound prometheus nginx dnsdist; do
    $sudo systemctl disable --now "$service" >/dev/null 2>&1 || true
  done
fi
