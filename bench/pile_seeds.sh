#!/usr/bin/env bash
# pile_seeds.sh — V3 (the pile) over several piles instead of one: the pile is
# chaotic, and any change to contact moves one pile's figures by 2-3x either
# way, so a change is judged on the median over many. Draws piles with
# scenes/validation/gen_pile.py SEED for seeds FIRST .. FIRST+COUNT-1, runs
# `khz-sim run PILE --method METHOD` on each (two at a time), prints each
# pile's figures and then the median over them.
# Usage: bench/pile_seeds.sh [BUILD_DIR=build] [FIRST=13] [COUNT=12] [METHOD=penalty]
# About 1 minute per 12 piles on 2 cores (release build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
FIRST=${2:-13}
COUNT=${3:-12}
METHOD=${4:-penalty}
SIM=$BUILD/tools/khz-sim
[ -x "$SIM" ] || { echo "pile_seeds.sh: $SIM not found (build first: scripts/build.sh $BUILD)" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

for ((s = FIRST; s < FIRST + COUNT; s++)); do
  python3 scenes/validation/gen_pile.py "$s" >"$TMP/pile_$s.yaml"
done
for ((s = FIRST; s < FIRST + COUNT; s++)); do echo "$s"; done |
  xargs -P 2 -I{} sh -c "'$SIM' run '$TMP/pile_{}.yaml' --method '$METHOD' > '$TMP/pile_{}.json'"

python3 - "$TMP" "$FIRST" "$COUNT" "$METHOD" <<'EOF'
import json, statistics, sys
tmp, first, count, method = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = []
print("V3 piles, gen_pile.py seeds %d-%d, --method %s" % (first, first + count - 1, method))
print("%5s %14s %10s %12s %12s %8s" % ("seed", "KE last s (J)", "rest (s)", "max pen (m)", "pen last s", "escaped"))
for s in range(first, first + count):
    j = json.load(open("%s/pile_%d.json" % (tmp, s)))
    rows.append(j)
    rest = j["rest_time_s"]
    print("%5d %14.3g %10s %12.3g %12.3g %8d" % (s, j["mean_kinetic_energy_last_second"],
          "-" if rest is None else "%.2f" % rest, j["max_penetration"], j["max_penetration_last_second"], j["escaped"]))
ke = [j["mean_kinetic_energy_last_second"] for j in rows]
pen = [j["max_penetration"] for j in rows]
print("median KE over the last second %.3g J; piles below 1e-3 J: %d of %d; at rest (KE < 1e-3 J from some time to the end): %d of %d"
      % (statistics.median(ke), sum(k < 1e-3 for k in ke), len(ke), sum(j["rest_time_s"] is not None for j in rows), len(rows)))
print("max penetration over the run: median %.3g m, worst %.3g m; piles with a body escaped: %d"
      % (statistics.median(pen), max(pen), sum(j["escaped"] > 0 for j in rows)))
EOF
