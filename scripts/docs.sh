#!/usr/bin/env bash
# The DocC documentation of every library module (swift-docc-plugin), which must build without a warning.
# Output: .build/plugins/Swift-DocC/outputs/<Module>.doccarchive. Usage: scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
modules=(HTTPDNSCore HTTPDNSWire HTTPDNSCAres HTTPDNSClient HTTPDNSInterceptor HTTPDNSURLSession HTTPDNSNIO HTTPDNSMetrics HTTPDNSServer HTTPDNSTesting HTTPDNSGRPC HTTPDNSOpenAPI HTTPDNSVapor)
targets=()
for module in "${modules[@]}"; do targets+=(--target "$module"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# The adapters behind traits (gRPC, OpenAPI, Vapor) are documented with their traits on, as scripts/test.sh builds them.
swift package --traits GRPC,OpenAPI,Vapor generate-documentation "${targets[@]}" >"$log" 2>&1 || { cat "$log"; exit 1; }
# DocC's warnings, each with the lines that place it; SwiftPM's own about a dependency's files are not ours.
if grep -v "swift-distributed-tracing" "$log" | grep -q "^warning:"; then
    grep -v "swift-distributed-tracing" "$log" | grep -A8 "^warning:"
    echo "error: the documentation has warnings (above)"
    exit 1
fi
echo "documentation: ${#modules[@]} modules, no warnings"
