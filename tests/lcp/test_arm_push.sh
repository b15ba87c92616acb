#!/usr/bin/env bash
# test_arm_push.sh — the 7-DoF arm pushing a box (scenes/validation/v4_arm_push.yaml,
# issue 21's robot scene) under the LCP method and the penalty method, checked
# against the sweep's geometry rather than against each other: the arm's base
# yaw turns 0.8 rad and the paddle, 2 cm behind the box, pushes it round the
# base. A box pushed face on ends at the polar angle start + 0.8 rad - the gap
# closed before contact (2 cm at the box's radius, 0.75 m: 0.027 rad), at
# about its starting radius, flat on the floor, at rest after the sweep.
# Usage: test_arm_push.sh KHZ_SIM
set -u
SIM=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
for method in lcp penalty; do
  if ! "$SIM" run scenes/validation/v4_arm_push.yaml --method "$method" >"$TMP/$method.json"; then
    echo "FAIL: khz-sim run v4_arm_push --method $method" >&2
    status=1
    continue
  fi
  /usr/bin/python3 - "$TMP/$method.json" "$method" <<'PY' || status=1
import json, math, sys
j, method = json.load(open(sys.argv[1])), sys.argv[2]
fails = []
def check(ok, what):
    print(("ok   " if ok else "FAIL ") + f"{method}: {what}")
    if not ok:
        fails.append(what)
x0, y0 = j["box_start"][:2]
x1, y1 = j["box_end"][:2]
r0, r1 = math.hypot(x0, y0), math.hypot(x1, y1)
turned = math.atan2(y1, x1) - math.atan2(y0, x0)
expect = 0.8 - 0.02 / r0
check(abs(turned - expect) <= 0.04, f"box turned {turned:.4f} rad round the base (sweep minus gap {expect:.4f})")
check(abs(r1 - r0) <= 0.05, f"box radius {r0:.4f} -> {r1:.4f} m")
check(j["box_max_tilt_rad"] <= 0.01, f"box tilt {j['box_max_tilt_rad']:.3g} rad")
check(abs(j["box_max_height_change"]) <= 1e-3, f"box height change {j['box_max_height_change']:.3g} m")
path = j["box_path"]
last = [p for p in path if p[0] >= 3.0]
moved = max(math.hypot(p[1] - last[0][1], p[2] - last[0][2]) for p in last)
check(moved <= 1e-3, f"box at rest after the sweep (moved {moved:.3g} m from 3 s on)")
check(j["max_tracking_error_rad"] <= 0.05, f"sweep tracking error {j['max_tracking_error_rad']:.4f} rad")
check(j["max_penetration_end"] <= 1e-3, f"penetration at the end {j['max_penetration_end']:.3g} m")
if method == "lcp":
    fb = j["warnings"]["lcp"]
    check(fb <= 0.01 * j["steps"], f"{fb} of {j['steps']} steps fell back to the penalty method")
sys.exit(1 if fails else 0)
PY
done
exit $status
