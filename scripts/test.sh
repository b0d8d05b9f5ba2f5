#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
# The test that checks shutdown releases every descriptor and thread compares the whole process before and
# after, so it runs in a process of its own, away from the suites that start servers in parallel.
resource_test='CAresSourceTests/Lifecycle/shutdownReleasesResources'
swift test --skip-build --skip "$resource_test"
swift test --skip-build --filter "$resource_test"
