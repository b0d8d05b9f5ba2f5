#!/usr/bin/env bash
# The test suite under a sanitizer, in a build directory of its own (.build-SANITIZER), so the ordinary build is
# left alone. Usage: scripts/sanitize.sh address|thread [swift test arguments…]
#   address  AddressSanitizer: out-of-bounds, use-after-free, double free. LeakSanitizer is off (detect_leaks=0).
#   thread   ThreadSanitizer. Synchronization.Mutex is invisible to it on Linux, so this build defines
#            HTTPDNS_THREAD_SANITIZER, and the package's `Mutex` (module HTTPDNSSynchronization) becomes a
#            pthread mutex, which TSan understands.
# Reports are symbolised by the toolchain's own llvm-symbolizer, named explicitly (left to find one, symbolising
# can hang on these machines). Tests run one at a time: in parallel, a sanitizer's slowdown (5-15x) pushes tests
# with budgets of a second past them, which says nothing about memory or threads. Tests that measure resident
# memory cancel themselves (HTTPDNS_SANITIZER is set): under a sanitizer it is the sanitizer's.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:?usage: scripts/sanitize.sh address|thread [swift test arguments…]}
shift
symbolizer="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-symbolizer"
[ -x "$symbolizer" ] || { echo "sanitize.sh: no llvm-symbolizer beside swift ($symbolizer)" >&2; exit 2; }
export HTTPDNS_SANITIZER="$sanitizer"
# Every report, the test runner's and those of the processes it starts (httpdns serve, resolve, …), goes to a file
# here, so that none is lost in a child's discarded stderr; any file at the end fails the run.
# The options after the user's own, so that they win.
case "$sanitizer" in address | thread) ;; *) echo "sanitize.sh: address or thread, not $sanitizer" >&2; exit 2 ;; esac
reports=$(mktemp -d /tmp/httpdns-sanitize.XXXXXX)
trap 'rm -rf "$reports"' EXIT
case "$sanitizer" in
  address)
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}external_symbolizer_path=$symbolizer:detect_leaks=0:log_path=$reports/report"
    defines=() ;;
  thread)
    # halt_on_error=0: every report of a run, not only the first. The suppressions file says why each is there.
    export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}external_symbolizer_path=$symbolizer:halt_on_error=0:suppressions=$PWD/scripts/sanitizers/tsan-suppressions.txt:log_path=$reports/report"
    defines=(-Xswiftc -DHTTPDNS_THREAD_SANITIZER) ;;
esac
scripts/install-deps.sh
started=$(date +%s)
swift build --build-tests --sanitize="$sanitizer" --scratch-path ".build-$sanitizer" "${defines[@]}"
built=$(date +%s)
echo "sanitize: built in $((built - started)) s" >&2
# The service's own child processes (httpdns serve, resolve …) are built with the sanitizer too.
status=0
# Under a time limit (HTTPDNS_TEST_TIMEOUT seconds, 25 minutes by default; a run takes about 4), so a hang fails
# rather than running out CI's clock.
timeout --kill-after=30 "${HTTPDNS_TEST_TIMEOUT:-1500}" \
  swift test --skip-build --sanitize="$sanitizer" --scratch-path ".build-$sanitizer" --no-parallel "$@" || status=$?
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "sanitize: the tests did not finish within ${HTTPDNS_TEST_TIMEOUT:-1500} s" >&2
fi
echo "sanitize: tests ran in $(( $(date +%s) - built )) s, status $status" >&2
if compgen -G "$reports/report.*" >/dev/null; then
  echo "sanitize: $(ls "$reports" | wc -l) report file(s), from the test runner or a process it started:" >&2
  cat "$reports"/report.* >&2
  echo "sanitize: digest of the report(s) above (the package's own frames):" >&2
  awk -v root="$PWD/" -f scripts/sanitizers/digest.awk "$reports"/report.* >&2 || true
  status=1
else
  echo "sanitize: no report" >&2
fi
exit "$status"
