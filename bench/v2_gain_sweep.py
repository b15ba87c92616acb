#!/usr/bin/env python3
"""v2_gain_sweep.py — V2 (block with applied forces) over a sweep of contact
stiffness, for the multi-point method and the deepest-point baseline.

The paper (Drumwright, section IV-A/B) tuned each method's gains on its own,
"a compromise between penetration and popping", and found no gains with which
the deepest-point method came near the multi-point method. This program does
that search in the open: it runs scenes/validation/v2_block_forces.yaml with
kp_per_kg over a grid (kv_per_kg as in the scene, ki_per_kg = kp_per_kg / 50
as in the scene), both methods, and prints every run. A run "pops" when the
block leaves the ground in the unforced halves (airborne_steps > 0: no
contact at all for a step while nothing pushes it). For each method it then
takes the gains of the grid with the least mean penetration in the unforced
halves among those that do not pop, and prints the ratio deepest /
multi-point of those two penetrations.

Usage: bench/v2_gain_sweep.py [BUILD_DIR=build] [--sim KHZ_SIM] [--seed N] [--json FILE]
About 2 s on 2 cores (release build; 28 runs of 11000 steps).
"""
import argparse, json, os, re, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENE = os.path.join(ROOT, "scenes", "validation", "v2_block_forces.yaml")
GRID = [2e4, 5e4, 1e5, 2e5, 3e5, 4e5, 5e5, 7e5, 1e6, 1.5e6, 2e6, 2.5e6, 3e6, 4e6]
METHODS = ("penalty", "deepest")
GAINS = re.compile(r"kp_per_kg: *([0-9.e+]+), *kv_per_kg: *([0-9.e+]+), *ki_per_kg: *([0-9.e+]+)")
SEED = re.compile(r"^( *seed:) *\d+ *$", re.M)


def scene_with(text, kp, seed):
    m = GAINS.search(text)
    if not m:
        sys.exit(f"v2_gain_sweep.py: {SCENE}: no 'kp_per_kg: .., kv_per_kg: .., ki_per_kg: ..' to replace")
    text = text[:m.start()] + f"kp_per_kg: {kp:g}, kv_per_kg: {m.group(2)}, ki_per_kg: {kp / 50:g}" + text[m.end():]
    if seed is not None:
        text, n = SEED.subn(rf"\1 {seed}", text)
        if n != 1:
            sys.exit(f"v2_gain_sweep.py: {SCENE}: expected one 'seed:' line, found {n}")
    return text


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--sim", help="the khz-sim to run (default: BUILD_DIR/tools/khz-sim)")
    ap.add_argument("--seed", type=int, help="the experiment's seed (default: the scene's)")
    ap.add_argument("--json", help="also write the runs and the summary to this file")
    a = ap.parse_args()
    sim = a.sim or os.path.join(a.build, "tools", "khz-sim")
    if not os.access(sim, os.X_OK):
        sys.exit(f"v2_gain_sweep.py: {sim} not found (build first: scripts/build.sh {a.build})")
    text = open(SCENE).read()
    with tempfile.TemporaryDirectory() as tmp:
        def run(job):
            kp, method = job
            path = os.path.join(tmp, f"v2_{kp:g}.yaml")
            r = subprocess.run([sim, "run", path, "--method", method], capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"v2_gain_sweep.py: khz-sim run (kp_per_kg {kp:g}, {method}) failed: {r.stderr.strip()}")
            return json.loads(r.stdout)["unforced"]
        for kp in GRID:  # one scene per stiffness, shared by both methods' runs
            with open(os.path.join(tmp, f"v2_{kp:g}.yaml"), "w") as f:
                f.write(scene_with(text, kp, a.seed))
        jobs = [(kp, m) for kp in GRID for m in METHODS]
        with ThreadPoolExecutor(max_workers=2) as ex:
            res = dict(zip(jobs, ex.map(run, jobs)))

    print("V2 block with applied forces, gain sweep (kv_per_kg as in the scene, ki_per_kg = kp_per_kg / 50)")
    print("unforced halves: mean penetration (m), mean kinetic energy (J), steps off the ground")
    print("%10s | %12s %10s %6s | %12s %10s %6s | %6s" % ("kp_per_kg", "multi pen", "KE", "air", "deepest pen",
                                                          "KE", "air", "ratio"))
    for kp in GRID:
        p, d = res[(kp, "penalty")], res[(kp, "deepest")]
        ratio = d["mean_penetration"] / p["mean_penetration"] if p["mean_penetration"] > 0 else float("nan")
        print("%10.3g | %12.3g %10.3g %6d | %12.3g %10.3g %6d | %6.2f" % (
            kp, p["mean_penetration"], p["mean_kinetic_energy"], p["airborne_steps"],
            d["mean_penetration"], d["mean_kinetic_energy"], d["airborne_steps"], ratio))
    best = {}
    for m in METHODS:
        quiet = [kp for kp in GRID if res[(kp, m)]["airborne_steps"] == 0]
        best[m] = min(quiet, key=lambda kp: res[(kp, m)]["mean_penetration"]) if quiet else None
    summary = {"grid_kp_per_kg": GRID, "runs": [{"kp_per_kg": kp, "method": m, **res[(kp, m)]} for kp, m in jobs]}
    for m in METHODS:
        kp = best[m]
        summary[m] = None if kp is None else {"kp_per_kg": kp, "mean_penetration": res[(kp, m)]["mean_penetration"],
                                              "mean_kinetic_energy": res[(kp, m)]["mean_kinetic_energy"]}
        print("%-8s least penetration without lift-off: %s" % (
            m, "none" if kp is None else "kp_per_kg %.3g, mean penetration %.3g m, mean KE %.3g J" % (
                kp, summary[m]["mean_penetration"], summary[m]["mean_kinetic_energy"])))
    if best["penalty"] and best["deepest"]:
        summary["ratio"] = summary["deepest"]["mean_penetration"] / summary["penalty"]["mean_penetration"]
        print("mean penetration, each method at its best gains without lift-off: deepest / multi-point = %.1f"
              % summary["ratio"])
    if a.json:
        with open(a.json, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
