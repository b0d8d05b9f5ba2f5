#!/usr/bin/env bash
# What the interceptor's own code costs in CPU: `httpdns-bench interceptor` run twice under `perf record`, once with
# `--control` (a plain AsyncHTTPClient in the interceptor's place) and once as it is. Both runs send the same number
# of requests. The symbols of the benchmark binary that the control's run hardly touches (at most 2 samples: even
# with `--control` the benchmark warms the resolver and sends its four per-host requests through the interceptor)
# are code that only the interceptor's path runs. Printed largest first, in µs of CPU a request (perf's own CPU time
# of each symbol, the control's few samples taken off, over the requests sent), with their sum. A symbol both ways
# run that costs only hundredths of a µs can land in the list by chance, which is within the sum's spread between
# runs (about ±1.5 µs). Totals are not compared: between two runs of the same binary, the whole process's CPU a
# request (the kernel's above all) differs by tens of µs.
# Needs Debian's linux-perf (`perf`) and python3; perf_event_paranoid at most 2 (as Debian's default).
# Usage: scripts/profile-interceptor.sh [ROUNDS] [TOP]    (HTTPDNS_BENCH_BIN=… to use another httpdns-bench)
set -euo pipefail
rounds=${1:-3}
top=${2:-40}
frequency=4999
requests_a_kind=5000
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT

for tool in perf python3; do
  command -v "$tool" >/dev/null || { echo "profile-interceptor: $tool is missing (apt-get install linux-perf python3)" >&2; exit 2; }
done
. "$here/scripts/bench-binary.sh"

for way in control interceptor; do
  flags=(interceptor --rounds "$rounds" --requests "$requests_a_kind" --hosts 2)
  [ "$way" = control ] && flags+=(--control)
  if ! perf record -q -F "$frequency" -o "$work/$way.data" -- "$bench" "${flags[@]}" >"$work/$way.log" 2>&1; then
    echo "profile-interceptor: the $way run failed:" >&2
    cat "$work/$way.log" >&2
    exit 1
  fi
  grep -E "^  ratio" "$work/$way.log" | sed "s/^/$way: /"
  perf report -i "$work/$way.data" --no-children --sort dso,symbol -F sample,period,dso,symbol --stdio 2>/dev/null \
    | grep -v '^#' >"$work/$way.txt"
done

# Requests through the measured way: the warm-up (500 one after another, 1,000 concurrent), then per round
# `--requests` of each kind; the per-host phase (4 requests) is left out.
requests=$((500 + 1000 + rounds * 2 * requests_a_kind))
python3 - "$work" "$requests" "$top" "$(basename "$bench")" <<'EOF' | (command -v swift >/dev/null && swift demangle --simplified || cat)
import collections, re, sys
work, requests, top, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
# samples, period (CPU time in ns, exact whatever rate perf could keep), library, symbol
line = re.compile(r"\s*(\d+)\s+(\d+)\s+(\S+)\s+\[.\]\s+(.*?)\s+-\s+-\s*$")

def load(way):
    samples, nanoseconds = collections.Counter(), collections.Counter()
    for text in open(f"{work}/{way}.txt"):
        match = line.match(text)
        if match:
            key = (match.group(3), match.group(4).strip())
            samples[key] += int(match.group(1))
            nanoseconds[key] += int(match.group(2))
    if not samples:
        sys.exit(f"profile-interceptor: no symbol read from perf's report of the {way} run (has its format changed?)")
    return samples, nanoseconds

(control, control_ns), (subject, subject_ns) = load("control"), load("interceptor")
own = sorted(
    ((subject_ns[key] - control_ns[key], key[1]) for key in subject if key[0] == binary and control[key] <= 2),
    reverse=True,
)

def us(nanoseconds):
    return nanoseconds / 1000 / requests

print(f"{requests} requests a way")
print(f"in {binary} and (almost) only in the interceptor's run: {us(sum(ns for ns, _ in own)):.2f} µs a request")
for nanoseconds, symbol in own[:top]:
    print(f"  {us(nanoseconds):5.2f}  {symbol}")
EOF
