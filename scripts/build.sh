#!/usr/bin/env bash
# Configures and builds khz (warnings are errors; buildtype release unless given).
# Usage: scripts/build.sh [BUILDDIR] [extra meson setup options...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
  meson setup "$dir" -Dwerror=true "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null
