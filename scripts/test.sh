#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what is missing, builds, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Every warning of the package's own code fails the run (scripts/check-warnings.sh), in the debug build the tests
# use (every target) and in a release build of `httpdns`, which compiles every library module but the test support.
build_log=$(mktemp)
# The adapters whose dependencies are heavy (grpc-swift, swift-openapi-runtime, Vapor) are built and tested here
# with their package traits on; the sanitizer pass below leaves them off, so it does not build those packages again.
traits=(--traits GRPC,OpenAPI,Vapor)
swift build --build-tests "${traits[@]}" 2>&1 | tee "$build_log"
swift build -c release --product httpdns 2>&1 | tee -a "$build_log"
scripts/check-warnings.sh "$build_log"
rm -f "$build_log"
# docs/MODULES.md names every target and its dependencies as Package.swift declares them.
scripts/check-modules.sh

# `swift test --skip-build ARGS...` under a time limit (HTTPDNS_TEST_TIMEOUT seconds, 25 minutes by default; a
# full run takes about 5). A run that outlives it is stopped, with every process it started, and the tests that
# started and never ended are named, so a hang fails with its culprit instead of running out CI's clock.
run_tests() {
    local limit=${HTTPDNS_TEST_TIMEOUT:-1500} log status run tail_pid runner
    log=$(mktemp)
    set +e
    # To a file, not a pipe: a test process left behind would hold a pipe open, and the script with it. Line by
    # line (stdbuf): the lines a hang leaves unflushed are the ones that name it.
    timeout --kill-after=30 "$limit" stdbuf -oL -eL swift test --skip-build "${traits[@]}" "$@" >"$log" 2>&1 &
    run=$!
    tail -n +1 -f --pid="$run" "$log" &
    tail_pid=$!
    wait "$run"
    status=$?
    wait "$tail_pid"
    set -e
    if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
        echo "error: the test run did not finish within $limit s; tests that started and never ended:"
        awk '
            /^◇ Test case passing/ || /^◇ Test run started/ { next }
            /^◇ Test .* started\.$/ { name = $0; sub(/^◇ Test /, "", name); sub(/ started\.$/, "", name); open[name] = 1; next }
            /^(✔|✘) Test / { name = $0; sub(/^(✔|✘) Test /, "", name); sub(/ (passed|failed) .*$/, "", name); delete open[name] }
            END { for (name in open) print "  " name }
        ' "$log"
        # swift test runs the test binary in a process group of its own, with every server the tests started, and
        # does not stop it when it is stopped itself: stop the whole group.
        for runner in $(pgrep -f "$PWD/.build/.*PackageTests.xctest"); do
            kill -KILL -- "-$runner" 2>/dev/null || kill -KILL "$runner" 2>/dev/null || true
        done
    fi
    rm -f "$log"
    return "$status"
}

# The test that checks shutdown releases every descriptor and thread compares the whole process before and
# after, so it runs in a process of its own, away from the suites that start servers in parallel.
resource_test='CAresSourceTests/Lifecycle/shutdownReleasesResources'
# The README's tour runs alone too, as its reader runs it: its library step keeps the library's defaults (1 s for
# an address of the service), which a machine busy with every other suite's servers has taken.
tour_test='ReadmeTourTests'
run_tests --skip "$resource_test" --skip "$tour_test"
run_tests --filter "$resource_test"
run_tests --filter "$tour_test"

# The API documentation of every library module builds without a warning.
scripts/docs.sh

# Every fuzz target builds and runs over its seeds and regressions for a few seconds, so the harness cannot rot
# (docs/RELIABILITY.md). The first build of Fuzz/ takes about 4 minutes on 2 cores.
scripts/fuzz.sh "${HTTPDNS_FUZZ_SECONDS:-5}"

# The suite again under a sanitizer, when HTTPDNS_SANITIZE names one (thread or address; docs/RELIABILITY.md,
# "Sanitizers"). CI asks for ThreadSanitizer (.ci/run): about 10 minutes more on 2 cores from a fresh clone.
if [ -n "${HTTPDNS_SANITIZE:-}" ]; then
    scripts/sanitize.sh "$HTTPDNS_SANITIZE"
fi
