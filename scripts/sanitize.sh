#!/usr/bin/env bash
# The test suite under a sanitizer, in a build directory of its own (.build-SANITIZER), so the ordinary build is
# left alone. Usage: scripts/sanitize.sh address|thread [swift test arguments…]
#   address  AddressSanitizer (and LeakSanitizer at exit): out-of-bounds, use-after-free, leaks.
#   thread   ThreadSanitizer. Synchronization.Mutex is invisible to it on Linux, so this build defines
#            HTTPDNS_THREAD_SANITIZER, and the package's `Mutex` (module HTTPDNSSynchronization) becomes a
#            pthread mutex, which TSan understands.
# Symbolising a report can hang on these machines, so reports carry addresses (symbolize=0); re-run one test with
# ASAN_OPTIONS/TSAN_OPTIONS=symbolize=1 to read its frames.
set -euo pipefail
cd "$(dirname "$0")/.."
sanitizer=${1:?usage: scripts/sanitize.sh address|thread [swift test arguments…]}
shift
case "$sanitizer" in
  address)
    export ASAN_OPTIONS="symbolize=0:detect_leaks=0:${ASAN_OPTIONS:-}"
    defines=() ;;
  thread)
    export TSAN_OPTIONS="symbolize=0:halt_on_error=0:${TSAN_OPTIONS:-}"
    defines=(-Xswiftc -DHTTPDNS_THREAD_SANITIZER) ;;
  *) echo "sanitize.sh: address or thread, not $sanitizer" >&2; exit 2 ;;
esac
scripts/install-deps.sh
started=$(date +%s)
swift build --build-tests --sanitize="$sanitizer" --scratch-path ".build-$sanitizer" "${defines[@]}"
built=$(date +%s)
echo "sanitize: built in $((built - started)) s" >&2
# The service's own child processes (httpdns serve, resolve …) are built with the sanitizer too; a report in one
# makes it exit with the sanitizer's status, which the test that started it sees.
status=0
swift test --skip-build --sanitize="$sanitizer" --scratch-path ".build-$sanitizer" "$@" || status=$?
echo "sanitize: tests ran in $(( $(date +%s) - built )) s, status $status" >&2
exit "$status"
