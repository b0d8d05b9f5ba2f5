#!/usr/bin/env bash
# Builds the libFuzzer targets in Fuzz/ (swiftc -sanitize=fuzzer,address) and runs each over its checked-in seed
# corpus, then for SECONDS more (default 10) or, with --runs N, for N executions. New inputs go to a scratch corpus,
# never into Fuzz/Corpus. Every input in Fuzz/Regressions/<target>/ (a crash or hang found before, now fixed) is run
# first and must pass. A crash, a leak or a hang (an input taking over 10 s) fails the script, and libFuzzer leaves
# the input as crash-*, leak-* or timeout-* in the scratch directory, which is printed.
# Usage: scripts/fuzz.sh [SECONDS] [--runs N] [--only TARGET]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
seconds=10
runs=""
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    [0-9]*) seconds=$1; shift ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
targets=(FuzzDNSMessage FuzzNativeJSON FuzzCacheControl FuzzCanonicalRequest FuzzQueryParameters FuzzSettings FuzzHTTP1 FuzzHTTP2
  FuzzHTTP2Differential)
[ -n "$only" ] && targets=("$only")

echo "fuzz: building ${targets[*]} (debug, -sanitize=fuzzer,address)" >&2
# Product by product: building everything would also link the package's own executables with libFuzzer.
# The build's warnings are checked like the package's own build's: the fuzz entry points are built only here (the
# package trait `Fuzzing`).
build_log=$(mktemp)
for target in "${targets[@]}"; do
  (cd "$here/Fuzz" && swift build -c debug -Xswiftc -sanitize=fuzzer,address --product "$target" 2>&1 | tee -a "$build_log" >&2)
done
"$here/scripts/check-warnings.sh" "$build_log" >&2
rm -f "$build_log"
bin="$here/Fuzz/.build/debug"
scratch=$(mktemp -d /tmp/httpdns-fuzz.XXXXXX)
echo "fuzz: scratch corpus and findings in $scratch" >&2
# Reports are symbolised by the toolchain's own llvm-symbolizer, named explicitly (left to find one, symbolising can
# hang on these machines); LeakSanitizer's suppressions need the frames' names.
symbolizer="$(dirname "$(readlink -f "$(command -v swift)")")/llvm-symbolizer"
export ASAN_OPTIONS="external_symbolizer_path=$symbolizer:detect_leaks=1:${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$here/scripts/sanitizers/lsan-suppressions.txt:${LSAN_OPTIONS:-}"
# A target that stops on a broken property calls fatalError; Swift's own backtracer would then hang in
# AddressSanitizer's process, where libFuzzer's handler should write the input out.
export SWIFT_BACKTRACE=enable=no

status=0
for target in "${targets[@]}"; do
  mkdir -p "$scratch/$target"
  # The connection targets run NIO's and Swift's thread pools, whose allocations differ from input to input:
  # LeakSanitizer would scan the heap after nearly every one (a hundred times slower), and report the pools.
  leaks=()
  case "$target" in FuzzHTTP1 | FuzzHTTP2 | FuzzHTTP2Differential) leaks=(-detect_leaks=0) ;; esac
  if compgen -G "$here/Fuzz/Regressions/$target/*" >/dev/null; then
    "$bin/$target" -timeout=10 -artifact_prefix="$scratch/" "${leaks[@]}" "$here/Fuzz/Regressions/$target"/* >"$scratch/$target.regressions.log" 2>&1 \
      || { echo "fuzz: $target fails a regression input (log: $scratch/$target.regressions.log)" >&2; status=1; continue; }
  fi
  limit=(-max_total_time="$seconds")
  [ -n "$runs" ] && limit=(-runs="$runs")
  started=$(date +%s)
  if (cd "$scratch" && "$bin/$target" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1 "${leaks[@]}" "${limit[@]}" \
        "$scratch/$target" "$here/Fuzz/Corpus/$target" >"$scratch/$target.log" 2>&1); then
    executions=$(awk '/stat::number_of_executed_units/ {print $2}' "$scratch/$target.log")
    echo "fuzz: $target: ${executions:-?} executions in $(( $(date +%s) - started )) s, no finding" >&2
  else
    echo "fuzz: $target FOUND something (log: $scratch/$target.log; input: $(ls "$scratch" | grep -E '^(crash|leak|timeout|oom)-' | tr '\n' ' '))" >&2
    tail -30 "$scratch/$target.log" >&2
    status=1
  fi
done
[ "$status" -eq 0 ] && [ -z "${FUZZ_KEEP:-}" ] && rm -rf "$scratch"
exit "$status"
