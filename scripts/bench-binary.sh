# Sourced by the benchmark scripts once `here` (the repository) is set: `bench` is $HTTPDNS_BENCH_BIN when given,
# else a release build of httpdns-bench, made now.
if [ -n "${HTTPDNS_BENCH_BIN:-}" ]; then
  bench=$HTTPDNS_BENCH_BIN
else
  (cd "$here" && swift build -c release --product httpdns-bench >/dev/null)
  bench="$here/.build/release/httpdns-bench"
fi
