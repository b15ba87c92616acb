#!/usr/bin/env python3
"""bench/rod_ulps.py [BUILDDIR] [--method M] [--ulps K] [--jobs N]: the
Stewart-Trinkle spinning rod (scenes/validation/st_rod.yaml, automatic
gains) over step sizes a few ulps apart, as bench/stack_ulps.py does for
the box stack. Under the deepest-point method the rod's state at 4 s is
the rounding's draw (docs/contact.md, "The deepest-point rod"): one run at
h says whether this draw settles, not whether the rod does. This runs the
scene's experiment with `khz-sim run st_rod.yaml --method M --dt H` for the
2K + 1 step sizes H = h - K ulp ... h + K ulp and prints each run's state
at 4 s, then how many settled: the centre within 1 mm of its rest height
(the capsule's radius, 0.05 m; issue 18 item 4's bound), the rod within
0.1 degrees of flat and turning at under 0.5 rad/s. Deterministic: no
timing is read."""
import json, math, os, subprocess, sys
from concurrent.futures import ThreadPoolExecutor

SCENE = 'scenes/validation/st_rod.yaml'
REST_HEIGHT = 0.05  # m: the capsule's radius
HEIGHT_BOUND = 1e-3  # m
ANGLE_BOUND = 0.1  # degrees
SPIN_BOUND = 0.5  # rad/s


def arg(name, default):
    return next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == name and i + 1 < len(sys.argv)), default)


flags = ('--method', '--ulps', '--jobs')
build = next((a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith('--') and sys.argv[i - 1] not in flags),
             'build')
method = arg('--method', 'deepest')
K = int(arg('--ulps', '10'))
jobs = int(arg('--jobs', '2'))
sim = os.path.join(build, 'tools', 'khz-sim')
h = 1e-3  # st_rod.yaml's rate_hz: 1000


def step_size(u):
    x = h
    for _ in range(abs(u)):
        x = math.nextafter(x, math.inf if u > 0 else 0)
    return x


def run(u):
    dt = step_size(u)
    out = subprocess.run([sim, 'run', SCENE, '--method', method, '--dt', repr(dt)], check=True,
                         capture_output=True, text=True).stdout
    return u, dt, json.loads(out)


with ThreadPoolExecutor(jobs) as pool:
    results = list(pool.map(run, range(-K, K + 1)))
settled = 0
print(f'{SCENE}, {method}, h = {h:g} s, {2 * K + 1} step sizes (h - {K} ulp ... h + {K} ulp), state at 4 s')
for u, dt, r in results:
    f = r['final']
    z, angle, spin = f['com'][2], f['angle_deg'], math.sqrt(sum(w * w for w in f['angvel']))
    ok = abs(z - REST_HEIGHT) <= HEIGHT_BOUND and angle <= ANGLE_BOUND and spin <= SPIN_BOUND
    settled += ok
    t = r['touches']
    print(f'  h{u:+d} ulp: centre {z * 1e3:.1f} mm, {angle:.3f} deg, {spin:.2f} rad/s, '
          f'touches {t["first_end"]} / {t["second_end"]}{"  settled" if ok else ""}')
print(f'settled at 4 s: {settled} of {len(results)} (centre within {HEIGHT_BOUND * 1e3:g} mm of '
      f'{REST_HEIGHT * 1e3:g} mm, within {ANGLE_BOUND:g} deg of flat, under {SPIN_BOUND:g} rad/s)')
