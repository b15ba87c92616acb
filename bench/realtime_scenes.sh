#!/usr/bin/env bash
# khz-server in realtime mode on the issue's scenes, one after the other: the
# default scene, the V3 pile, a 240-body pile (bench/peers/gen_piles.py) and
# MuJoCo's 22_humanoids.xml, each for SECONDS (60 by default) at its own rate,
# no controller attached. Prints one table row per scene from the server's
# final statistics: ticks, overruns and missed periods, tick compute p50 / p99
# / max and wake-up lateness p99, and whether the run held its rate (0
# overruns, compute p99 within the period).
#
# Usage: bench/realtime_scenes.sh [--seconds S] [--sleep on|off] [--out FILE] [BUILDDIR]
#   --seconds S   per scene (default 60; 5 for a quick look)
#   --sleep off   scene bodies never sleep (docs/sleeping.md); default: the scenes' own (on)
#   --out FILE    also write the table (markdown) to FILE
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=60 out="" dir=build sleep=""
while [ $# -gt 0 ]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --sleep) sleep=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "realtime_scenes.sh: unknown option '$1'" >&2; exit 2 ;;
    *) dir=$1; shift ;;
  esac
done
case "$sleep" in ""|on|off) ;; *) echo "realtime_scenes.sh: --sleep: expected on or off, got '$sleep'" >&2; exit 2 ;; esac
server=$dir/server/khz-server
[ -x "$server" ] || { echo "realtime_scenes.sh: $server not built" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# the scenes: the V3 pile without its experiment block, a generated 240-pile
sed -e '/^experiment/,$d' -e "s#: \.\./#: $PWD/scenes/#" scenes/validation/v3_pile.yaml > "$tmp/v3_pile.yaml"
python3 bench/peers/gen_piles.py --out "$tmp" 240 > /dev/null
humanoids=/usr/share/mujoco/model/humanoid/22_humanoids.xml
scenes=("default|default" "v3_pile|$tmp/v3_pile.yaml" "pile_240|$tmp/pile_240.yaml")
if [ -f "$humanoids" ]; then scenes+=("22_humanoids|$humanoids"); fi
if [ "$sleep" = off ]; then # a copy of each yaml scene with `sleep: false`
  for i in "${!scenes[@]}"; do
    f=${scenes[$i]#*|}
    case $f in *.yaml) cp "$f" "$tmp/nosleep_$i.yaml"; echo "sleep: false" >> "$tmp/nosleep_$i.yaml"
                       scenes[$i]="${scenes[$i]%%|*}|$tmp/nosleep_$i.yaml" ;; esac
  done
fi

table="| scene | rate Hz | ticks | overruns | missed periods | compute p50 us | p99 us | max us | lateness p99 us | held |
|---|---|---|---|---|---|---|---|---|---|"
for s in "${scenes[@]}"; do
  name=${s%%|*} file=${s#*|}
  echo "realtime_scenes.sh: $name, ${seconds} s" >&2
  "$server" --scene "$file" --mode realtime --duration-s "$seconds" \
    --state-endpoint "ipc://$tmp/state" --command-endpoint "ipc://$tmp/cmd" > "$tmp/out.txt" 2>&1 || true
  row=$(python3 - "$tmp/out.txt" "$name" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def grab(pat):
    m = re.search(pat, text)
    return m.groups() if m else None
ticks = grab(r"ticks\s+(\d+) \(last state \d+, \w+, ([\d.]+) Hz\)")
comp = grab(r"compute\s+p50 ([\d.]+)\s+p99 ([\d.]+)\s+p99\.9 [\d.]+\s+max ([\d.]+)")
late = grab(r"lateness\s+p50 [\d.]+\s+p99 ([\d.]+)")
over = grab(r"overruns\s+(\d+) \(missed periods (\d+)\)")
if not (ticks and comp and over):
    last = text.strip().splitlines()[-1] if text.strip() else "no output"
    print(f"| {sys.argv[2]} | failed: {last} |||||||||")
    sys.exit(0)
hz = float(ticks[1]); period = 1e6 / hz
held = int(over[0]) == 0 and float(comp[1]) <= period
print(f"| {sys.argv[2]} | {hz:g} | {ticks[0]} | {over[0]} | {over[1]} | {comp[0]} | {comp[1]} | {comp[2]} | "
      f"{late[0] if late else '-'} | {'yes' if held else 'no'} |")
EOF
)
  table+=$'\n'"$row"
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
result="khz-server realtime, ${seconds} s per scene, sleeping ${sleep:-as the scenes say (on)}, no controller; load average after: $load
$table"
echo "$result"
if [ -n "$out" ]; then echo "$result" > "$out"; fi
