#!/usr/bin/env python3
"""bench/stack_ulps.py [BUILDDIR] [--scene FILE] [--method M] [--ulps K] [--jobs N]:
issue 18 item 8 for one scene over step sizes a few ulps apart. The 60 s box
stack (scenes/validation/stack.yaml) under the deepest-point method stood at
h = 1 ms and fell at h - 1 ulp (docs/contact.md): one run says whether this
draw of the rounding stands, not whether the stack does. This runs the
scene's experiment with `khz-sim run SCENE --method M --dt H` for the 2K + 1
step sizes H = h - K ulp ... h + K ulp (the model recompiled at each, as
--dt does) and prints each run's drift, sink and kinetic energy in the second
half, then how many fell (a box's sink beyond FALL m: it left the stack).
Deterministic: no timing is read."""
import json, math, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

FALL = 0.1  # m: a box that sank this far has fallen off the stack


def arg(name, default):
    return next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == name and i + 1 < len(sys.argv)), default)


flags = ('--scene', '--method', '--ulps', '--jobs')
build = next((a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith('--') and sys.argv[i - 1] not in flags),
             'build')
scene = arg('--scene', 'scenes/validation/stack.yaml')
method = arg('--method', 'deepest')
K = int(arg('--ulps', '6'))
jobs = int(arg('--jobs', '2'))
sim = os.path.join(build, 'tools', 'khz-sim')

h = 1e-3
with open(scene) as f:
    for line in f:
        if line.startswith('rate_hz:'):
            h = 1.0 / float(line.split(':', 1)[1])


def step_size(u):
    x = h
    for _ in range(abs(u)):
        x = math.nextafter(x, math.inf if u > 0 else 0)
    return x


def run(u):
    dt = step_size(u)
    out = subprocess.run([sim, 'run', scene, '--method', method, '--dt', repr(dt)], check=True,
                         capture_output=True, text=True).stdout
    return u, dt, json.loads(out)


with ThreadPoolExecutor(jobs) as pool:
    results = list(pool.map(run, range(-K, K + 1)))
fell = 0
print(f'{scene}, {method}, h = {h:g} s, {2 * K + 1} step sizes (h - {K} ulp ... h + {K} ulp)')
for u, dt, r in results:
    down = r['max_sink'] > FALL
    fell += down
    print(f'  h{u:+d} ulp ({dt!r}): drift {r["max_horizontal_drift"]:.3g} m, sink {r["max_sink"]:.3g} m, '
          f'kinetic energy in the second half up to {r["max_kinetic_energy_second_half"]:.3g} J'
          f'{"  FELL" if down else ""}')
print(f'fell: {fell} of {len(results)}')
