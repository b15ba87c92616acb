#!/usr/bin/env python3
"""bench/campaign_dask.py — the speed-up of `khz campaign` on a Dask
LocalCluster over the serial run, on this machine's cores: the same SPEC
(MuJoCo's humanoid under khz.campaign:pd_hold, mass and friction x seeds,
with seeded initial noise) serially and on N workers; prints both wall times,
the speed-up with and without the cluster's start, and whether the two tables
are identical (wall time, overruns and attempts excepted). The serial run is
measured before and after the Dask run (the machine's load drifts; both are
printed with the load average at the time) and the speed-up is against their
mean. On a machine shared with other work, N worker processes get N shares
of the cores where the serial run gets one, so a speed-up measured under
load says how the shares were split, not what the cores can do.

    bench/campaign_dask.py [--build build] [--runs 16] [--duration 2.0] [--workers CORES]
"""
import argparse
import os
import shutil
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=16, help="a multiple of 4")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated s per run")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "clients", "python"))
    os.environ.setdefault("KHZ_LIBRARY", os.path.join(build, "lib", "libkhz.so"))
    os.environ["PYTHONPATH"] = os.path.join(build, "clients", "python") + os.pathsep + \
        os.environ.get("PYTHONPATH", "")  # the Dask workers import khz too
    import csv
    from khz import campaign

    tmp = tempfile.mkdtemp(prefix="khz-campaign-bench-")
    spec = os.path.join(tmp, "bench.yaml")
    with open(spec, "w") as f:
        f.write(f"""name: bench
duration: {a.duration}
scenes: [/usr/share/mujoco/model/humanoid/humanoid.xml]
parameters:
  mass_scale: [1.0, 1.2]
  friction: [0.6, 1.0]
  init_noise: [0.02]
seeds: {a.runs // 4}
controllers:
  - {{name: hold, python: "khz.campaign:pd_hold"}}
""")
    quiet = lambda *_: None
    loads = [os.getloadavg()[0]]
    _, t_serial1 = campaign.run_campaign(spec, outdir=os.path.join(tmp, "serial"), plot=False,
                                         log=quiet)
    loads.append(os.getloadavg()[0])
    stats = {}
    _, t_runs = campaign.run_campaign(spec, outdir=os.path.join(tmp, "dask"), dask=True,
                                      workers=a.workers, plot=False, log=quiet, stats=stats)
    loads.append(os.getloadavg()[0])
    _, t_serial2 = campaign.run_campaign(spec, outdir=os.path.join(tmp, "serial2"), plot=False,
                                         log=quiet)
    loads.append(os.getloadavg()[0])
    t_serial = 0.5 * (t_serial1 + t_serial2)
    start = stats["dask_startup_s"]
    tables, per_run = [], []
    for d in ("serial", "dask", "serial2"):
        with open(os.path.join(tmp, d, "runs.csv"), newline="") as f:
            rows = list(csv.DictReader(f))
        tables.append(campaign.comparable(rows))
        per_run.append(sorted(float(r["wall_time_s"]) for r in rows)[len(rows) // 2])
    same = tables[0] == tables[1] == tables[2]
    print(f"{a.runs} runs of {a.duration} s (MuJoCo's humanoid, pd_hold), {os.cpu_count()} cores, "
          f"1-minute load average {' -> '.join(f'{x:.1f}' for x in loads)} (start, after serial, "
          f"after Dask, after serial again)")
    print(f"  serial, before and after     {t_serial1:7.1f} s, {t_serial2:.1f} s (mean {t_serial:.1f} s)")
    print(f"  Dask LocalCluster, {a.workers} workers {t_runs:7.1f} s (its start {start:.1f} s and stop "
          f"included)  speed-up {t_serial / t_runs:.2f}x")
    runs = stats["dask_runs_s"]
    print(f"  the runs alone on Dask       {runs:7.1f} s (first submission to last row)  "
          f"speed-up {t_serial / runs:.2f}x")
    print(f"  median wall time of one run: serial {per_run[0]:.2f} s, on a Dask worker "
          f"{per_run[1]:.2f} s")
    print(f"  tables identical (wall time, overruns, attempts excepted): {same}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
