#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what is missing, build, and
# simulate the embedded default scene (a 7-DoF arm on a table next to loose
# objects) for 5 s, printing the model and a JSON summary.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/build.sh build
./build/tools/khz-sim info default
./build/tools/khz-sim run default --steps "${KHZ_STEPS:-5000}" --out build/default-trajectory.csv
echo "trajectory written to build/default-trajectory.csv" >&2
