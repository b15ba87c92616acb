#!/usr/bin/env python3
"""bench/py_steps.py — steps per second of MuJoCo's humanoid through Python
(khz.sim: N steps per call, and 1 step per call with the torques written and
q read between steps, as a controller does) beside `khz-sim run`'s C loop on
the same model, same number of steps. The issue's goal: N steps per call
within 1.5x of the C loop.

    bench/py_steps.py [--build build] [--model humanoid.xml] [--steps 5000] [--repeat 5]

Prints one line per way and the ratios; each figure is the median of
--repeat runs (wall time of the steps only). The library comes from the
build tree (BUILD/lib/libkhz.so).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--build", default="build")
    ap.add_argument("--model", default="/usr/share/mujoco/model/humanoid/humanoid.xml")
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--chunk", type=int, default=0, help="steps per call (0: all of them)")
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    sys.path.insert(0, os.path.join(build, "clients", "python"))
    os.environ.setdefault("KHZ_LIBRARY", os.path.join(build, "lib", "libkhz.so"))
    import numpy as np
    from khz.sim import Sim

    chunk = a.chunk or a.steps
    c_us, n_us, one_us = [], [], []
    hashes = set()
    for _ in range(a.repeat):
        out = subprocess.run([os.path.join(build, "tools", "khz-sim"), "run", a.model, "--steps",
                              str(a.steps)], capture_output=True, text=True, check=True).stdout
        js = json.loads(out)
        c_us.append(js["us_per_step"])
        hashes.add(js["state_hash"])

        with Sim(a.model) as sim:
            sim.step(1)  # warm the caches and pages as the C loop's first step does
            sim.reset()
            t0 = time.perf_counter()
            done = 0
            while done < a.steps:
                n = min(chunk, a.steps - done)
                sim.step(n)
                done += n
            n_us.append(1e6 * (time.perf_counter() - t0) / a.steps)
            hashes.add(f"{sim.hash():016x}")

        with Sim(a.model) as sim:
            act = sim.actuated_dofadr
            tau = np.zeros(len(act))
            sim.step(1)
            sim.reset()
            t0 = time.perf_counter()
            for _ in range(a.steps):
                sim.tau[act] = tau        # a controller's write ...
                sim.step()
                q = sim.q                 # ... and read (a view: no copy)
            one_us.append(1e6 * (time.perf_counter() - t0) / a.steps)
            assert q is sim.q
    c, n, one = (statistics.median(x) for x in (c_us, n_us, one_us))
    print(f"model {a.model}: {a.steps} steps, median of {a.repeat} runs")
    print(f"  khz-sim run (C loop)           {c:8.2f} us/step  {1e6 / c:9.0f} steps/s")
    print(f"  khz.sim, {chunk} steps per call {'':{max(0, 5 - len(str(chunk)))}}{n:8.2f} us/step  "
          f"{1e6 / n:9.0f} steps/s  {n / c:.3f}x the C loop")
    print(f"  khz.sim, 1 step per call       {one:8.2f} us/step  {1e6 / one:9.0f} steps/s  "
          f"{one / c:.3f}x the C loop")
    print(f"  final state hashes (C and Python, zero torques): {'identical' if len(hashes) == 1 else sorted(hashes)}")
    goal = n / c <= 1.5
    print(f"  goal N steps per call within 1.5x of the C loop: {'met' if goal else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
