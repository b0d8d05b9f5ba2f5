#!/usr/bin/env bash
# Every benchmark in docs/PERFORMANCE.md, release build, each a ratio against a baseline from the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
# The benchmarks are their own executable, httpdns-bench, which `httpdns` does not ship.
swift build -c release --product httpdns-bench >/dev/null
.build/release/httpdns-bench cache
.build/release/httpdns-bench memory
.build/release/httpdns-bench canonical
scripts/bench-cold.sh 50000 64
scripts/bench-serve.sh 10 64
scripts/bench-client.sh 2000 64 1000
