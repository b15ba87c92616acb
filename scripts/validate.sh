#!/usr/bin/env bash
# Runs the contact validation scenes (scenes/validation/) with the multi-point
# penalty method and the deepest-point baseline, and writes the results table
# docs/validation-results.md (figure, the paper's figure, khz's figures).
# The JSON of every run is kept in build/validation/.
#   scripts/validate.sh [BUILDDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
dir=${1:-build}
./scripts/build.sh "$dir" -Dbuildtype=release
out=$dir/validation
mkdir -p "$out"
for scene in scenes/validation/*.yaml; do
  name=$(basename "$scene" .yaml)
  for method in penalty deepest; do
    echo "running $name ($method)" >&2
    "$dir/tools/khz-sim" run "$scene" --method "$method" >"$out/$name.$method.json"
  done
done
# the LCP method (Stewart & Trinkle; docs/lcp.md); the pile runs one LCP per
# contact island since lcp21, slowly (bounded like the stack)
for name in v1_block_penetration v2_block_forces v3_pile stack v4_diffdrive v4_humanoid v4_arm_push st_rod st_four_balls; do
  echo "running $name (lcp)" >&2
  # bounded: the 60 s stack once ran for more than 10 minutes when it fell
  # back on a third of its steps (since lcp21's patches it takes about 9 s of
  # CPU); the pile's 10 s take about 105 s of CPU (lcp21, docs/lcp.md), so on
  # a loaded machine they may still reach the bound
  timeout 300 "$dir/tools/khz-sim" run "scenes/validation/$name.yaml" --method lcp >"$out/$name.lcp.json" ||
    echo '{"timeout": 300}' >"$out/$name.lcp.json"
done
echo "running bench/lcp_figures" >&2
"$dir/bench/lcp_figures" rod balls >"$out/lcp_figures.txt"
echo "running bench/v2_gain_sweep.py" >&2
python3 bench/v2_gain_sweep.py "$dir" --json "$out/v2_gain_sweep.json" >"$out/v2_gain_sweep.txt"
python3 - "$out" >docs/validation-results.md <<'PY'
import json, os, platform, subprocess, sys
out = sys.argv[1]
def load(name, method):
    with open(os.path.join(out, f"{name}.{method}.json")) as f:
        return json.load(f)
def g(x, fmt="{:.3g}"):
    return "—" if x is None else fmt.format(x)
cpu = "unknown"
try:
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip(); break
except OSError:
    pass
rows = []
v1p, v1d = load("v1_block_penetration", "penalty"), load("v1_block_penetration", "deepest")
rows.append(("V1 block penetrating a plane: mean penetration, last 2000 steps (m)", "Fig. 9 (plot)",
             g(v1p["mean_penetration"]), g(v1d["mean_penetration"])))
rows.append(("V1: mean kinetic energy, last 2000 steps (J)", "Fig. 8 (plot)",
             g(v1p["mean_kinetic_energy"]), g(v1d["mean_kinetic_energy"])))
v2p, v2d = load("v2_block_forces", "penalty"), load("v2_block_forces", "deepest")
rows.append(("V2 block with applied forces: mean penetration, unforced halves (m)",
             "5.9e-3 multi-point, 9.0e-2 deepest, 1.5e-4 LCP",
             g(v2p["unforced"]["mean_penetration"]), g(v2d["unforced"]["mean_penetration"])))
rows.append(("V2: mean kinetic energy, unforced halves (J)", "Fig. 11 (plot)",
             g(v2p["unforced"]["mean_kinetic_energy"]), g(v2d["unforced"]["mean_kinetic_energy"])))
with open(os.path.join(out, "v2_gain_sweep.json")) as f:
    sw = json.load(f)
rows.append(("V2 over a gain sweep (`bench/v2_gain_sweep.py`), each method at its least penetration "
             "without lift-off: mean penetration, unforced halves (m) [kp_per_kg]",
             "5.9e-3 multi-point, 9.0e-2 deepest (each method's own gains)",
             f"{g(sw['penalty']['mean_penetration'])} [{g(sw['penalty']['kp_per_kg'])}]",
             f"{g(sw['deepest']['mean_penetration'])} [{g(sw['deepest']['kp_per_kg'])}]"))
rows.append(("V2 over the gain sweep: deepest / multi-point mean penetration", "15 (9.0e-2 / 5.9e-3)",
             g(sw["ratio"], "{:.1f}"), "—"))
pp, pd = load("v3_pile", "penalty"), load("v3_pile", "deepest")
rows.append((f"V3 pile of {pp['bodies']} bodies: time to rest, KE < 1e-3 J (s)", "Fig. 13 (picture)",
             g(pp["rest_time_s"]), g(pd["rest_time_s"])))
rows.append((f"V3: kinetic energy, mean over the last second / at {pp['steps'] * pp['dt']:.0f} s (J)", "—",
             f"{g(pp['mean_kinetic_energy_last_second'])} / {g(pp['kinetic_energy_end'])}",
             f"{g(pd['mean_kinetic_energy_last_second'])} / {g(pd['kinetic_energy_end'])}"))
rows.append(("V3: bodies escaped / max penetration in the last second / over the run (m)", "—",
             f"{pp['escaped']} / {g(pp['max_penetration_last_second'])} / {g(pp['max_penetration'])}",
             f"{pd['escaped']} / {g(pd['max_penetration_last_second'])} / {g(pd['max_penetration'])}"))
for name, label, paper in (("v4_diffdrive", "V4 differential-drive robot", "80.6 steps/s penalty, 32.6 LCP (2008)"),
                           ("v4_humanoid", "V4 humanoid", "30.7 steps/s penalty, 4.4 LCP (2008)")):
    a, b = load(name, "penalty"), load(name, "deepest")
    rows.append((f"{label} ({a['nv']} DoF): median µs per step", paper,
                 g(a["median_us_per_step"], "{:.1f}"), g(b["median_us_per_step"], "{:.1f}")))
    rows.append((f"{label}: base height change over {a['steps'] * a['dt']:.0f} s (m)", "—",
                 g(a["base_height_change"]), g(b["base_height_change"])))
sp, sd = load("stack", "penalty"), load("stack", "deepest")
rows.append(("Stack of 5 boxes, 60 s: max horizontal drift / sink (m)", "—",
             f"{g(sp['max_horizontal_drift'])} / {g(sp['max_sink'])}",
             f"{g(sd['max_horizontal_drift'])} / {g(sd['max_sink'])}"))
rows.append(("Stack: max kinetic energy in the second half (J)", "—",
             g(sp["max_kinetic_energy_second_half"]), g(sd["max_kinetic_energy_second_half"])))
print("# Contact validation results\n")
print("Produced by `scripts/validate.sh` (scenes in `scenes/validation/`, figures as")
print("JSON in `build/validation/`); see docs/validation.md for what each scene does.")
print(f"Machine: {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}.\n")
print("| figure | paper | khz multi-point | khz deepest-point |")
print("|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
# the LCP method beside the multi-point penalty method
lrows = []
def lw(j):
    return j["warnings"]["lcp"]
l1 = load("v1_block_penetration", "lcp")
lrows.append(("V1: mean penetration, last 2000 steps (m) [steps that fell back to penalty]", "—",
              f"{g(l1['mean_penetration'])} [{lw(l1)}]", g(v1p["mean_penetration"])))
l2 = load("v2_block_forces", "lcp")
lrows.append(("V2: mean penetration, unforced halves (m) [fallbacks]", "1.5e-4 LCP",
              f"{g(l2['unforced']['mean_penetration'])} [{lw(l2)}]", g(v2p["unforced"]["mean_penetration"])))
lrows.append(("V2: mean kinetic energy, unforced halves (J)", "—",
              g(l2["unforced"]["mean_kinetic_energy"]), g(v2p["unforced"]["mean_kinetic_energy"])))
for name, label, paper in (("v4_diffdrive", "V4 differential-drive robot", "32.6 / 80.6 steps/s LCP / penalty (2008)"),
                           ("v4_humanoid", "V4 humanoid", "4.4 / 30.7 steps/s LCP / penalty (2008)")):
    a, b = load(name, "lcp"), load(name, "penalty")
    lrows.append((f"{label}: median µs per step (steps/s) [fallbacks]", paper,
                  f"{a['median_us_per_step']:.1f} ({1e6 / a['median_us_per_step']:.0f}) [{lw(a)}]",
                  f"{b['median_us_per_step']:.1f} ({1e6 / b['median_us_per_step']:.0f})"))
    lrows.append((f"{label}: base height change (m)", "—", g(a["base_height_change"]), g(b["base_height_change"])))
la, pa = load("v4_arm_push", "lcp"), load("v4_arm_push", "penalty")
lrows.append(("V4 7-DoF arm pushing a box: median µs per step (steps/s) [fallbacks]", "—",
              f"{la['median_us_per_step']:.1f} ({1e6 / la['median_us_per_step']:.0f}) [{lw(la)}]",
              f"{pa['median_us_per_step']:.1f} ({1e6 / pa['median_us_per_step']:.0f})"))
lrows.append(("V4 arm pushing a box: box displacement / end position x, y (m)", "—",
              f"{g(la['box_displacement'])} / {g(la['box_end'][0])}, {g(la['box_end'][1])}",
              f"{g(pa['box_displacement'])} / {g(pa['box_end'][0])}, {g(pa['box_end'][1])}"))
l3 = load("v3_pile", "lcp")
lrows.append(("V3 pile: time to rest (s) / escaped / max penetration (m) / median µs per step [fallbacks]", "—",
              "did not finish in 300 s" if "timeout" in l3 else
              f"{g(l3['rest_time_s'])} / {l3['escaped']} / {g(l3['max_penetration'])} / "
              f"{g(l3.get('median_us_per_step'))} [{lw(l3)}]",
              f"{g(pp['rest_time_s'])} / {pp['escaped']} / {g(pp['max_penetration'])} / "
              f"{g(pp.get('median_us_per_step'))}"))
ls = load("stack", "lcp")
lrows.append(("Stack of 5 boxes, 60 s: max horizontal drift / sink (m) [fallbacks]", "—",
              "did not finish in 300 s" if "timeout" in ls else
              f"{g(ls['max_horizontal_drift'])} / {g(ls['max_sink'])} [{lw(ls)}]",
              f"{g(sp['max_horizontal_drift'])} / {g(sp['max_sink'])}"))
lr, pr = load("st_rod", "lcp"), load("st_rod", "penalty")
lrows.append(("Rod (centre 1 m up): first impact / other end lands / sliding after it (s)", "0.383 / 0.548 / 0.02",
              f"{lr['first_impact']} / {lr['second_end_lands']} / {lr['slide_after_second_end']}",
              f"{pr['first_impact']} / {pr['second_end_lands']} / {pr['slide_after_second_end']}"))
lb, pb = load("st_four_balls", "lcp"), load("st_four_balls", "penalty")
lrows.append(("Four balls: thrown ball lands / reaches the line (s)", "0.42 / 0.59",
              f"{lb['thrown_lands']} / {lb['thrown_hits_line']}", f"{pb['thrown_lands']} / {pb['thrown_hits_line']}"))
print("\n## The LCP method (Stewart & Trinkle; docs/lcp.md)\n")
print("Penetrations of the LCP method are the depths its collision pass finds at the predicted")
print("positions q + h v_free (what each step's LCP removes). `bench/lcp_figures` (rod started at the")
print("height whose free flight ends at 0.383 s, balls, Table I, solve times) is in")
print("`build/validation/lcp_figures.txt`.\n")
print("| figure | paper | khz LCP | khz multi-point |")
print("|---|---|---|---|")
for r in lrows:
    print("| " + " | ".join(r) + " |")
PY
echo "wrote docs/validation-results.md" >&2
