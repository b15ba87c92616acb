#!/usr/bin/env bash
# The server, loop and client tests under ThreadSanitizer: builds build-tsan
# (-Db_sanitize=thread) and runs the suites server and loop, the step's
# worker threads' test (test_threads) and the C client's test with tests/server/tsan.supp, which names only uninstrumented libraries
# (libzmq, libev). Not part of scripts/test.sh (it takes a while).
# Usage: scripts/tsan.sh [meson test arguments, e.g. test_server_flood]
set -uo pipefail
cd "$(dirname "$0")/.."
dir=build-tsan
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Db_sanitize=thread -Db_lundef=false -Dbuildtype=debugoptimized \
    -Dbench=false -Doracle=disabled >/dev/null || exit 1
fi
ninja -C "$dir" >/dev/null || exit 1
export TSAN_OPTIONS="suppressions=$PWD/tests/server/tsan.supp halt_on_error=1 second_deadlock_stack=1"
if [ $# -gt 0 ]; then
  meson test -C "$dir" --print-errorlogs --num-processes 1 "$@"
else
  # every server and loop test, and the C client's (test_client_alloc
  # replaces malloc, which TSan's runtime owns: not run here)
  meson test -C "$dir" --print-errorlogs --num-processes 1 --suite server --suite loop || status=1
  meson test -C "$dir" --print-errorlogs --num-processes 1 test_client || status=1
  meson test -C "$dir" --print-errorlogs --num-processes 1 test_threads || status=1
  exit ${status:-0}
fi
