#!/usr/bin/env bash
# What the adapters cost a backend's build: two packages outside the repository, each built fresh (debug, every
# dependency included), one after the other on an otherwise idle machine:
#   interceptor  depends on HTTPDNSInterceptor alone, with no trait of ours enabled;
#   adapters     depends on HTTPDNSInterceptor, HTTPDNSNIO, HTTPDNSGRPC, HTTPDNSOpenAPI and HTTPDNSVapor, with the
#                traits GRPC, OpenAPI and Vapor enabled.
# Prints each build's wall time and the ratio (docs/PERFORMANCE.md, "What the adapters cost a build").
#   scripts/bench-build.sh [WORK_DIR]     (default: a new temporary directory; removed at the end)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd -P)
keep=${1:-}
work=${1:-$(mktemp -d /tmp/httpdns-build-bench.XXXXXX)}
cleanup() { [ -n "$keep" ] || rm -rf "$work"; }
trap cleanup EXIT
name=$(basename "$here")

# consumer NAME TRAITS PRODUCTS...: a package whose one executable imports each of PRODUCTS.
consumer() {
  local dir="$work/$1" traits=$2
  shift 2
  mkdir -p "$dir/Sources/Consumer"
  local products="" imports=""
  for product in "$@"; do
    products+="                .product(name: \"$product\", package: \"$name\"),"$'\n'
    imports+="import $product"$'\n'
  done
  printf '%s\nprint("built")\n' "$imports" >"$dir/Sources/Consumer/main.swift"
  cat >"$dir/Package.swift" <<MANIFEST
// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "consumer",
    dependencies: [.package(path: "$here", traits: [$traits])],
    targets: [
        .executableTarget(
            name: "Consumer",
            dependencies: [
$products            ]
        )
    ],
    swiftLanguageModes: [.v6]
)
MANIFEST
}

consumer interceptor "" HTTPDNSInterceptor
consumer adapters '"GRPC", "OpenAPI", "Vapor"' HTTPDNSInterceptor HTTPDNSNIO HTTPDNSGRPC HTTPDNSOpenAPI HTTPDNSVapor

declare -A seconds
for which in interceptor adapters; do
  # Resolved first, so that the figure is the build alone, not the fetch of the packages.
  (cd "$work/$which" && swift package resolve >"$work/$which.log" 2>&1) || { tail -n 40 "$work/$which.log"; exit 1; }
  start=$(date +%s)
  (cd "$work/$which" && swift build >>"$work/$which.log" 2>&1) || { tail -n 40 "$work/$which.log"; exit 1; }
  seconds[$which]=$(($(date +%s) - start))
  modules=$(ls -d "$work/$which"/.build/debug/*.build | wc -l)
  echo "bench-build: $which: built in ${seconds[$which]} s ($modules modules)"
done
awk -v a="${seconds[adapters]}" -v i="${seconds[interceptor]}" \
  'BEGIN { printf "bench-build: every adapter / the interceptor alone: %.2fx (nproc %d)\n", a / i, '"$(nproc)"' }'
