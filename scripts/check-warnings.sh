#!/usr/bin/env bash
# Fails when a build log holds a compiler warning from the package's own code (Sources/, Tests/, Examples/, Fuzz/
# but not the packages it depends on), printing each once. Warnings are defects here: one of ours hid a bug.
#   scripts/check-warnings.sh BUILD_LOG...
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
warnings=$(grep -hE "^$root/(Sources|Tests|Examples|Fuzz/Sources)/[^:]+:[0-9]+:[0-9]+: warning:" "$@" | sort -u || true)
if [ -n "$warnings" ]; then
    echo "error: the build warned in the package's own code:" >&2
    echo "$warnings" >&2
    exit 1
fi
echo "no warnings in the package's own code ($*)"
