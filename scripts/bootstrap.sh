#!/usr/bin/env bash
# Installs every Debian package khz's build, tests, benchmarks and examples need.
# Idempotent: when everything is present it only checks (dpkg-query) and returns.
set -euo pipefail

packages=(
  build-essential pkg-config meson ninja-build
  libzmq3-dev libprotobuf-c-dev protobuf-c-compiler libev-dev
  libxml2-dev libyaml-dev libassimp-dev
  libmujoco-dev libmujoco-samples libccd-dev libode-dev libbullet-dev libsiconos-numerics-dev
  rt-tests python3
  protobuf-compiler python3-zmq python3-protobuf python3-numpy python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "bootstrap: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
