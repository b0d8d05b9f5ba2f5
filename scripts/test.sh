#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests

# `swift test --skip-build ARGS...` under a time limit (HTTPDNS_TEST_TIMEOUT seconds, 25 minutes by default; a
# full run takes about 5). A run that outlives it is stopped, with every process it started, and the tests that
# started and never ended are named, so a hang fails with its culprit instead of running out CI's clock.
run_tests() {
    local log status
    log=$(mktemp)
    set +e
    timeout --kill-after=30 "${HTTPDNS_TEST_TIMEOUT:-1500}" swift test --skip-build "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "error: the test run did not finish within ${HTTPDNS_TEST_TIMEOUT:-1500} s; tests that started and never ended:"
        awk '
            /^◇ Test case passing/ { next }
            /^◇ Test .* started\.$/ { name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1; next }
            /^(✔|✘) Test / { name = $0; sub(/^(✔|✘) Test /, "", name); sub(/ (passed|failed) .*$/, "", name); delete open[name] }
            END { for (name in open) print "  " name }
        ' "$log"
    fi
    rm -f "$log"
    return "$status"
}

# The test that checks shutdown releases every descriptor and thread compares the whole process before and
# after, so it runs in a process of its own, away from the suites that start servers in parallel.
resource_test='CAresSourceTests/Lifecycle/shutdownReleasesResources'
run_tests --skip "$resource_test"
run_tests --filter "$resource_test"
