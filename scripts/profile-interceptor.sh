#!/usr/bin/env bash
# What the interceptor's own code costs in CPU: `httpdns-bench interceptor` run twice under `perf record`, once with
# `--control` (a plain AsyncHTTPClient in the interceptor's place) and once as it is. Both runs send the same number
# of requests. The symbols of the benchmark binary with samples in the interceptor's run and none in the control's
# are code that only the interceptor's path runs: printed largest first, in µs of CPU a request (from the sampling
# rate and the requests sent), with their sum. Totals are not compared: between two runs of the same binary, the
# whole process's CPU a request (the kernel's above all) differs by tens of µs.
# Needs Debian's linux-perf (`perf`) and python3; perf_event_paranoid at most 2 (as Debian's default).
# Usage: scripts/profile-interceptor.sh [ROUNDS] [TOP]    (HTTPDNS_BENCH_BIN=… to use another httpdns-bench)
set -euo pipefail
rounds=${1:-3}
top=${2:-40}
frequency=4999
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/httpdns-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT

for tool in perf python3; do
  command -v "$tool" >/dev/null || { echo "profile-interceptor: $tool is missing (apt-get install linux-perf python3)" >&2; exit 2; }
done
. "$here/scripts/bench-binary.sh"

for way in control interceptor; do
  flags=(interceptor --rounds "$rounds" --hosts 2)
  [ "$way" = control ] && flags+=(--control)
  perf record -q -F "$frequency" -o "$work/$way.data" -- "$bench" "${flags[@]}" >"$work/$way.log" 2>&1
  grep -E "^  ratio" "$work/$way.log" | sed "s/^/$way: /"
  perf report -i "$work/$way.data" --no-children --sort dso,symbol -F sample,dso,symbol --stdio 2>/dev/null \
    | grep -v '^#' >"$work/$way.txt"
done

# Requests through the measured way: the warm-up (500 one after another, 1,000 concurrent), then per round 5,000 of
# each kind; the per-host phase (4 requests) is left out.
requests=$((1500 + rounds * 10000))
python3 - "$work" "$frequency" "$requests" "$top" "$(basename "$bench")" <<'EOF' | (command -v swift >/dev/null && swift demangle --simplified || cat)
import collections, re, sys
work, frequency, requests, top, binary = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
line = re.compile(r"\s*(\d+)\s+(\S+)\s+\[.\]\s+(.*?)\s+-\s+-\s*$")

def load(way):
    samples = collections.Counter()
    for text in open(f"{work}/{way}.txt"):
        match = line.match(text)
        if match:
            samples[(match.group(2), match.group(3).strip())] += int(match.group(1))
    return samples

def us(samples):
    return samples / frequency / requests * 1e6

control, subject = load("control"), load("interceptor")
print(f"{requests} requests a way; {frequency} samples a second")
own = sorted(((samples, key[1]) for key, samples in subject.items() if key[0] == binary and control[key] == 0), reverse=True)
print(f"in {binary} and only in the interceptor's run: {us(sum(samples for samples, _ in own)):.2f} µs a request")
for samples, symbol in own[:top]:
    print(f"  {us(samples):5.2f}  {symbol}")
EOF
