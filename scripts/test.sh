#!/usr/bin/env bash
# Every test on a fresh Debian machine: install what is missing, then build and
# run the whole suite twice — a release build, and a build with
# AddressSanitizer + UndefinedBehaviorSanitizer — and print one closing line
# "N passed, N failed" over both.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh || exit 1

passed=0
failed=0
status=0

run_suite() { # name builddir [meson setup options...]
  local name=$1 dir=$2
  shift 2
  echo "== $name build ($dir)"
  if ! ./scripts/build.sh "$dir" "$@"; then
    echo "$name build failed" >&2
    failed=$((failed + 1))
    status=1
    return
  fi
  local log="$dir/meson-logs/testlog.txt"
  meson test -C "$dir" --print-errorlogs --num-processes 2 | tee "$dir/test-summary.txt"
  local rc=${PIPESTATUS[0]}
  local ok fail timeout
  ok=$(awk '/^Ok:/ {print $2}' "$dir/test-summary.txt")
  fail=$(awk '/^Fail:/ {print $2}' "$dir/test-summary.txt")
  timeout=$(awk '/^Timeout:/ {print $2}' "$dir/test-summary.txt")
  passed=$((passed + ${ok:-0}))
  failed=$((failed + ${fail:-0} + ${timeout:-0}))
  if [ "$rc" -ne 0 ]; then
    status=1
    [ -n "$ok$fail" ] || failed=$((failed + 1))
    echo "see $log" >&2
  fi
}

run_suite release build -Dbuildtype=release
run_suite sanitizers build-sanitize -Db_sanitize=address,undefined -Db_lundef=false \
  -Dc_args=-fno-sanitize-recover=all -Dbuildtype=debugoptimized

echo "$passed passed, $failed failed"
exit $status
