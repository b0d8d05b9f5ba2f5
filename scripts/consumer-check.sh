#!/usr/bin/env bash
# A package outside the repository that depends on this one as a user's would, built from the README's library
# example (Examples/Tour/main.swift, word for word) and run against the tour's service: the proof that the products
# stand on their own and that the scoped lifecycle needs no shutdown call of the user's. Prints the build's time.
#   scripts/consumer-check.sh [WORK_DIR]     (default: a new temporary directory; removed at the end)
# Needs the repository's debug build of `httpdns` (swift build) and dnsmasq, openssl, curl (scripts/install-deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd -P)
keep=${1:-}
work=${1:-$(mktemp -d /tmp/httpdns-consumer.XXXXXX)}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do timeout 30 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
  [ -n "$keep" ] || rm -rf "$work"
}
trap cleanup EXIT
httpdns="$here/.build/debug/httpdns"
[ -x "$httpdns" ] || { echo "consumer-check: build httpdns first (swift build)" >&2; exit 2; }

mkdir -p "$work/consumer/Sources/Tour"
cp "$here/Examples/Tour/main.swift" "$work/consumer/Sources/Tour/main.swift"
cat >"$work/consumer/Package.swift" <<MANIFEST
// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "consumer",
    dependencies: [
        .package(path: "$here"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        .executableTarget(
            name: "Tour",
            dependencies: [
                .product(name: "HTTPDNSClient", package: "$(basename "$here")"),
                .product(name: "HTTPDNSCore", package: "$(basename "$here")"),
                .product(name: "HTTPDNSInterceptor", package: "$(basename "$here")"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
MANIFEST
start=$(date +%s)
(cd "$work/consumer" && swift build >"$work/build.log" 2>&1) || { tail -n 40 "$work/build.log"; exit 1; }
tail -n 3 "$work/build.log"
echo "consumer-check: built in $(($(date +%s) - start)) s (a fresh build of the products and their dependencies)"
# Nobody builds what they do not use: the adapters' packages (Vapor, grpc-swift, swift-openapi-runtime) sit behind
# traits this consumer does not enable, so not one of their modules may have been compiled.
built_adapters=$(find "$work/consumer/.build/debug" -maxdepth 1 -type d \( -name 'Vapor.build' -o -name 'GRPCCore.build' \
  -o -name 'GRPCNIOTransportCore.build' -o -name 'OpenAPIRuntime.build' -o -name 'RoutingKit.build' \) | sort)
if [ -n "$built_adapters" ]; then
  echo "consumer-check: a consumer of the interceptor built an adapter's package:" >&2
  echo "$built_adapters" >&2
  exit 1
fi
echo "consumer-check: no adapter package built (Vapor, grpc-swift, swift-openapi-runtime)"

# The tour's service, as the README starts it.
cd "$work"
/usr/sbin/dnsmasq --conf-file=/dev/null --listen-address=127.0.0.153 --port=5354 --bind-interfaces --no-resolv \
  --no-hosts --address=/tour.test/127.0.0.154 --keep-in-foreground &
pids+=($!)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=tour \
  -addext subjectAltName=DNS:tour.test,IP:127.0.0.154 -keyout key.pem -out cert.pem 2>/dev/null
"$httpdns" serve --listen 127.0.0.154:8443 --upstream 127.0.0.153:5354 --tls-cert cert.pem --tls-key key.pem 2>serve.log &
pids+=($!)
timeout 30 sh -c 'until curl -sf --cacert cert.pem https://127.0.0.154:8443/healthz >/dev/null; do sleep 0.2; done' ||
  { cat serve.log; exit 1; }
output=$(timeout 60 "$work/consumer/.build/debug/Tour" 2>"$work/tour.log") || { cat "$work/tour.log"; exit 1; }
echo "consumer-check: the tour printed: $output"
case "$output" in
  "200 127.0.0.154 "*) ;;
  *) echo "consumer-check: expected a 200 from 127.0.0.154" >&2; exit 1 ;;
esac
if grep -q "dropped without being shut down" "$work/tour.log"; then
  echo "consumer-check: something was dropped without shutdown:" >&2; cat "$work/tour.log" >&2; exit 1
fi
echo "consumer-check: ok"
