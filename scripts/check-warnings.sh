#!/usr/bin/env bash
# Fails when a build log holds a compiler warning from the package's own code (Sources/, Tests/, Examples/,
# Fuzz/Sources/; not the packages it depends on), printing each once. Warnings are defects here: one of ours hid a
# bug. A fresh build prints every file's warnings; an incremental one only those of the files it compiled again.
#   scripts/check-warnings.sh BUILD_LOG...
set -euo pipefail
cd "$(dirname "$0")/.."
# SwiftPM prints physical paths: compare with this checkout's, by prefix, not as a pattern.
root=$(pwd -P)
for log in "$@"; do
    [ -r "$log" ] || { echo "check-warnings: cannot read $log" >&2; exit 2; }
done
warnings=$(awk -v root="$root/" '
    index($0, root) == 1 && / warning: / {
        rest = substr($0, length(root) + 1)
        if (rest ~ /^(Sources|Tests|Examples|Fuzz\/Sources)\/[^:]+:[0-9]+:[0-9]+: warning: /) print
    }
' "$@" | sort -u)
if [ -n "$warnings" ]; then
    echo "error: the build warned in the package's own code:" >&2
    echo "$warnings" >&2
    exit 1
fi
echo "no warnings in the package's own code ($*)"
