#!/usr/bin/env python3
"""The PEG paper's 3D experiment (Williams, Lu & Trinkle 2016, sec. 6, fig. 24):
ten initial conditions (scenes/peg/gen_pour.py --paper --seed 1..10: ten
polyhedra, one released every 0.5 s) at 16 step sizes from 1e-3 to 2.5e-2 s
(log-spaced: the paper does not list them), T seconds each (the paper: 5),
with PEG and with the standard model. For every step size it prints the
median and the first and third quartiles over the seeds of each run's
largest per-step overlap volume (bench/peg_figures' figure), and the
fallbacks summed over the seeds.

    bench/peg_sweep.py [--bin build/bench/peg_figures] [--seconds 5] [--seeds 10]
                       [--h H1,H2,..] [--models peg,standard] [--work DIR]

Each (seed, model) is one peg_figures run over all step sizes; the runs are
sequential. The scenes are generated into --work (default /tmp/peg_sweep).
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def quartiles(xs):
    """first quartile, median, third quartile (linear interpolation)"""
    s = sorted(xs)

    def q(p):
        x = p * (len(s) - 1)
        i = int(x)
        return s[i] if i + 1 >= len(s) else s[i] + (x - i) * (s[i + 1] - s[i])
    return q(0.25), q(0.5), q(0.75)


def table(res, models, hs, nseeds, seconds, out):
    """the table over the seeds run so far"""
    print('# %d seeds x %d step sizes, %g s each (gen_pour.py --paper --seed 1..%d, one body released every 0.5 s)'
          % (nseeds, len(hs), seconds, nseeds), file=out)
    print('# largest per-step overlap volume of each run (m^3): median [first quartile, third quartile] over the '
          'seeds; fallbacks summed over the seeds; runs with overlap above 1e-12 m^3', file=out)
    head = '| h (s) |'
    for model in models:
        head += (' %s median (m^3) | %s quartiles | %s fallbacks | %s runs > 1e-12 | %s steps halved |'
                 ' %s steps left deeper than 1e-10 m | %s constraints added at q+ |' % ((model,) * 7))
    print(head, file=out)
    print('|---|' + '---|---|---|---|---|---|---|' * len(models), file=out)
    for h in sorted({h for (_, h) in res}):
        line = '| %.3g |' % h
        for model in models:
            r = res.get((model, h), [])
            if not r:
                line += ' - | - | - | - | - | - | - |'
                continue
            q1, med, q3 = quartiles([x[0] for x in r])
            line += ' %.3g | [%.3g, %.3g] | %d of %d steps | %d of %d | %d | %s | %s |' % (
                med, q1, q3, sum(x[1] for x in r), sum(x[2] for x in r), sum(x[0] > 1e-12 for x in r), len(r),
                sum(x[3] for x in r), '-' if model != 'peg' else sum(x[4] for x in r),
                '-' if model != 'peg' else sum(x[5] for x in r))
        print(line, file=out)
    tot = '| all |'
    for model in models:
        r = [x for (mdl, _), xs in res.items() if mdl == model for x in xs]
        tot += ' | | %d | %d of %d | %d | %s | %s |' % (
            sum(x[1] for x in r), sum(x[0] > 1e-12 for x in r), len(r), sum(x[3] for x in r),
            '-' if model != 'peg' else sum(x[4] for x in r), '-' if model != 'peg' else sum(x[5] for x in r))
    print(tot, file=out)
    out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default=os.path.join(ROOT, 'build', 'bench', 'peg_figures'))
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--h', default=','.join('%.3g' % (1e-3 * 25 ** (k / 15)) for k in range(16)))
    ap.add_argument('--models', default='peg,standard')
    ap.add_argument('--work', default='/tmp/peg_sweep')
    a = ap.parse_args()
    hs = [float(x) for x in a.h.split(',')]
    models = a.models.split(',')
    res = {}  # (model, h) -> list of (max overlap, fallbacks, steps)
    for seed in range(1, a.seeds + 1):
        d = os.path.join(a.work, 'seed%d' % seed)
        subprocess.run([sys.executable, os.path.join(ROOT, 'scenes', 'peg', 'gen_pour.py'), '--paper',
                        '--seed', str(seed), '--out', d], check=True)
        for model in models:
            t0 = time.time()
            out = subprocess.run([a.bin, '--scene', os.path.join(d, 'pour_paper.yaml'), '--release', '0.5',
                                  '--seconds', str(a.seconds), '--h', a.h, '--only', model],
                                 check=True, capture_output=True, text=True).stdout
            for line in out.splitlines():
                if not line.startswith('| ') or line.startswith('| h'):
                    continue
                col = [c.strip() for c in line.strip('|').split('|')]
                h = float(col[0])
                if model == 'peg':
                    ov, fb = float(col[1]), col[2].split()
                    fallbacks, steps = int(fb[0]), int(fb[2])
                    halved, deeper, added = int(col[18]), int(col[5]), int(col[4])
                else:
                    ov, fallbacks, steps = float(col[10]), int(col[11]), round(a.seconds / h)
                    halved, deeper, added = int(col[19]), 0, 0
                res.setdefault((model, h), []).append((ov, fallbacks, steps, halved, deeper, added))
            print('# seed %d %s: %.0f s wall' % (seed, model, time.time() - t0), file=sys.stderr, flush=True)
        with open(os.path.join(a.work, 'table.md'), 'w') as f:
            table(res, models, hs, seed, a.seconds, f)
    table(res, models, hs, a.seeds, a.seconds, sys.stdout)


if __name__ == '__main__':
    main()
