#!/usr/bin/env bash
# Runs the libFuzzer targets (fuzz/) for a bounded time each: builds
# build-fuzz with clang, -Dfuzz=true and AddressSanitizer + UBSan, seeds each
# corpus from the repo's own files, and fuzzes. Findings (crash-*, leak-*,
# timeout-*) land in build-fuzz/findings/TARGET/; the exit status is non-zero
# when there is one.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET (60)] [TARGET...]
#   targets: urdf mjcf scene mesh server
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=${*:-urdf mjcf scene mesh server}
dir=build-fuzz
if [ ! -f "$dir/build.ninja" ]; then
  CC=clang meson setup "$dir" -Dfuzz=true -Dbench=false -Doracle=disabled \
    -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null || exit 1
fi
ninja -C "$dir" $(for t in $targets; do echo fuzz/fuzz_$t; done) >/dev/null || exit 1

seeds() { # target -> seed files and directories
  case $1 in
    urdf) echo scenes tests/loader/data ;;
    mjcf) echo tests/loader/data ;;
    scene) echo scenes ;;
    mesh) echo tests/loader/data/scene_mesh.obj tests/loader/data/pkg/khz_test_pkg/meshes/part.stl ;;
    server) echo fuzz/seeds/server ;;
  esac
}

status=0
for t in $targets; do
  corpus=$dir/corpus/$t
  findings=$dir/findings/$t
  rm -rf "$findings"
  mkdir -p "$corpus" "$findings"
  for s in $(seeds "$t"); do
    if [ -d "$s" ]; then find "$s" -type f -size -256k -exec cp {} "$corpus/" \; ; else cp "$s" "$corpus/"; fi
  done
  echo "== fuzz_$t: $secs s, corpus $(ls "$corpus" | wc -l) files"
  lsan=""
  [ "$t" = mesh ] && lsan="suppressions=$PWD/fuzz/lsan.supp" # assimp's own leaks (fuzz/lsan.supp)
  ASAN_OPTIONS=detect_leaks=1 LSAN_OPTIONS="$lsan" "$dir/fuzz/fuzz_$t" "$corpus" -max_total_time="$secs" \
    -max_len=65536 -timeout=10 -rss_limit_mb=2048 -artifact_prefix="$findings/" \
    -print_final_stats=1 2>&1 | grep -E "^#[0-9]+ *DONE|stat::number_of_executed_units|ERROR|SUMMARY" | head -5
  if ls "$findings"/* >/dev/null 2>&1; then
    echo "fuzz_$t: findings in $findings" >&2
    status=1
  fi
done
exit $status
