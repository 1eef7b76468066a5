#!/usr/bin/env bash
# Passes `go test -v` output through and ends with one summary line:
# "N passed, N failed, N skipped" (subtests included), then the failures.
set -uo pipefail
log=$(mktemp); trap 'rm -f "$log"' EXIT
tee "$log"
passed=$(grep -cE '^\s*--- PASS' "$log")
failed=$(grep -cE '^\s*--- FAIL' "$log")
skipped=$(grep -cE '^\s*--- SKIP' "$log")
echo
if [ "$failed" -gt 0 ]; then
  echo "failures:"; grep -E '^\s*--- FAIL' "$log"
fi
grep -E '^(FAIL|ok)\s' "$log" | sed 's/^/  /'
echo "${passed} passed, ${failed} failed, ${skipped} skipped"
