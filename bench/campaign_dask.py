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
    bench/campaign_dask.py --cpu [--duration 40]

--cpu: where the time goes instead: one run alone in this process, then two
at once in a ProcessPoolExecutor(2) and on a 2-worker LocalCluster, each
printing its wall time and its thread's CPU time (time.thread_time): on a
shared machine the difference between the two is the wait for a core.
"""
import argparse
import os
import shutil
import sys
import tempfile
import time

HUMANOID = "/usr/share/mujoco/model/humanoid/humanoid.xml"


def timed_run(duration):
    """One humanoid run under pd_hold: (wall s, the thread's CPU s, status)."""
    from khz import campaign
    run = {"scene": HUMANOID, "scene_name": "humanoid", "params": {}, "seed": 1,
           "controller": {"name": "hold", "python": "khz.campaign:pd_hold"},
           "duration": duration, "control_every": 1, "mode": "fast", "path": [], "key": "cpu",
           "run": 0}
    t0, c0 = time.perf_counter(), time.thread_time()
    row = campaign.run_one(run)
    return time.perf_counter() - t0, time.thread_time() - c0, row["status"]


def cpu_probe(duration):
    from concurrent.futures import ProcessPoolExecutor
    from distributed import Client, LocalCluster

    def show(what, results, wall):
        runs = ", ".join(f"{w:.2f} s wall / {c:.2f} s CPU ({s})" for w, c, s in results)
        print(f"  {what:<28} {runs}; all {wall:.2f} s; load {os.getloadavg()[0]:.1f}")
    print(f"runs of {duration} s of MuJoCo's humanoid under pd_hold, {os.cpu_count()} cores")
    t0 = time.perf_counter()
    show("one run alone", [timed_run(duration)], time.perf_counter() - t0)
    with ProcessPoolExecutor(2) as ex:
        t0 = time.perf_counter()
        fs = [ex.submit(timed_run, duration) for _ in range(2)]
        show("two in ProcessPoolExecutor", [f.result() for f in fs], time.perf_counter() - t0)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    t0 = time.perf_counter()
    fs = [client.submit(timed_run, duration, pure=False) for _ in range(2)]
    show("two on a 2-worker cluster", [f.result() for f in fs], time.perf_counter() - t0)
    client.close()
    cluster.close()
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--build", default="build")
    ap.add_argument("--runs", type=int, default=16, help="a multiple of 4")
    ap.add_argument("--duration", type=float, default=2.0, help="simulated s per run")
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--cpu", action="store_true", help="wall and CPU time per run instead")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "clients", "python"))
    os.environ.setdefault("KHZ_LIBRARY", os.path.join(build, "lib", "libkhz.so"))
    os.environ["PYTHONPATH"] = os.path.join(build, "clients", "python") + os.pathsep + \
        os.environ.get("PYTHONPATH", "")  # the Dask workers import khz too
    os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")
    if a.cpu:
        return cpu_probe(a.duration)
    import csv
    from khz import campaign

    tmp = tempfile.mkdtemp(prefix="khz-campaign-bench-")
    spec = os.path.join(tmp, "bench.yaml")
    with open(spec, "w") as f:
        f.write(f"""name: bench
duration: {a.duration}
scenes: [{HUMANOID}]
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
