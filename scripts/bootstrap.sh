#!/usr/bin/env bash
# Installs every Debian package khz's build, tests, benchmarks and examples need.
# Idempotent: when everything is present it only checks (dpkg-query) and returns.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build
  libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libev-dev
  libxml2-dev libyaml-dev libassimp-dev
  libmujoco-dev libmujoco-samples libccd-dev libode-dev libbullet-dev libsiconos-numerics-dev
  libglpk-dev libdart-dev libdart-utils-urdf-dev
  rt-tests python3
  protobuf-compiler python3-zmq python3-protobuf python3-numpy python3-matplotlib
  python3-websockets nodejs chromium
  python3-yaml python3-distributed python3-venv python3-pip python3-setuptools
)
# npm comes with some nodejs builds (NodeSource's); Debian's own nodejs needs the npm package
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -ne 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# the viewer's npm packages (three.js for the page; @mcap/core, playwright-core,
# @foxglove/ws-protocol + ws and @foxglove/schemas for its tests; hyparquet, the
# campaign test's Parquet reader), pinned by clients/viewer/package-lock.json: npm ci only when the lock
# file changed since the last install
viewer="$(dirname "$0")/../clients/viewer"
if [ -f "$viewer/package-lock.json" ] && command -v npm >/dev/null 2>&1 &&
   ! cmp -s "$viewer/package-lock.json" "$viewer/node_modules/.khz-lock"; then
  echo "bootstrap: npm ci in clients/viewer" >&2
  (cd "$viewer" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
   cp package-lock.json node_modules/.khz-lock) ||
    echo "bootstrap: npm ci in clients/viewer failed: khz view has no three.js, its tests skip" >&2
fi
