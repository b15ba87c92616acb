#!/usr/bin/env python3
"""The PEG paper's 3D experiment at its full length (Williams, Lu & Trinkle
2016, sec. 6, fig. 24): ten initial conditions (scenes/peg/gen_pour.py
--paper --seed 1..10, one polyhedron released every 0.5 s) at 16 step sizes
from 2.5e-2 down to 1e-3 s, 5 s each, PEG and the standard model side by
side. Unlike bench/peg_sweep.py it runs one (h, seed, model) per process,
the largest step sizes first and all seeds of a step size before the next,
keeps every run's --trace, and stops starting runs after --budget seconds
of wall time, so that a partial run is a table over the step sizes done.

    bench/peg_pour5s.py [--bin build/bench/peg_figures] [--seconds 5] [--seeds 10]
                        [--h H1,H2,..] [--models peg,standard] [--work DIR]
                        [--budget SECONDS] [--out FILE]

Per step size and model, over the seeds run: the largest per-step overlap
volume of each run (median, quartiles, runs above 1e-12 m^3), the steps
that fell back (solver failures), the steps halved, the wall time per step
(median and largest over all steps of all seeds: the machine's load is
printed beside it) and the user CPU per run.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def quartiles(xs):
    s = sorted(xs)

    def q(p):
        x = p * (len(s) - 1)
        i = int(x)
        return s[i] if i + 1 >= len(s) else s[i] + (x - i) * (s[i + 1] - s[i])
    return q(0.25), q(0.5), q(0.75)


def parse_trace(path):
    """per-step wall times (us) and counts from a --trace log"""
    us, halved, frictionless, dropped, maxn, maxblock, unpolished = [], 0, 0, 0, 0, 0, 0
    with open(path) as f:
        for line in f:
            if ' step ' not in line or ' us ' not in line:
                continue
            t = line.split()
            kv = {t[i]: t[i + 1] for i in range(len(t) - 1)}
            us.append(float(kv['us']))
            halved += int(kv.get('splits', 0)) > 0
            frictionless += int(kv.get('frictionless', 0)) > 0
            dropped += int(kv.get('dropped', 0))
            maxn = max(maxn, int(kv.get('n', 0)))
            maxblock = max(maxblock, int(kv.get('nblock', 0)))
            unpolished += int(kv.get('unpolished', 0)) > 0
    return us, halved, frictionless, dropped, maxn, maxblock, unpolished


def table(res, models, out, note):
    print(note, file=out)
    print('| h (s) | model | seeds run (stopped early: their steps to then) | max overlap median (m^3) | quartiles | runs > 1e-12 m^3 | fallbacks '
          '(steps) | steps halved | steps with a block solved without friction | largest LCP / block | wall '
          'per step median (ms) | wall per step largest (s) | user CPU per run, median (s) | load |', file=out)
    print('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|', file=out)
    for h in sorted({h for (h, _) in res}, reverse=True):
        for model in models:
            r = res.get((h, model))
            if not r:
                continue
            q1, med, q3 = quartiles([x['overlap'] for x in r])
            us = sorted(u for x in r for u in x['us'])
            cpu = sorted(x['cpu'] for x in r)
            loads = [x['load'] for x in r]
            npart = sum(x.get('partial', 0) for x in r)
            print('| %.3g | %s | %s | %.3g | [%.3g, %.3g] | %d of %d | %d of %d | %d | %d | %d / %d | %.1f | %.2f |'
                  ' %.1f | %.1f-%.1f |' % (
                      h, model, '%d (%d)' % (len(r), npart) if npart else str(len(r)), med, q1, q3, sum(x['overlap'] > 1e-12 for x in r), len(r),
                      sum(x['fallbacks'] for x in r), sum(x['steps'] for x in r), sum(x['halved'] for x in r),
                      sum(x['frictionless'] for x in r), max(x['maxn'] for x in r), max(x['maxblock'] for x in r),
                      us[len(us) // 2] / 1e3 if us else 0, us[-1] / 1e6 if us else 0, cpu[len(cpu) // 2],
                      min(loads), max(loads)), file=out)
    out.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', default=os.path.join(ROOT, 'build', 'bench', 'peg_figures'))
    ap.add_argument('--seconds', type=float, default=5.0)
    ap.add_argument('--seeds', type=int, default=10)
    ap.add_argument('--seed-list', default=None,
                    help='the seeds to run, in this order (e.g. 10,2,3: the failing ones first); default 1..--seeds')
    ap.add_argument('--h', default=','.join('%.3g' % (1e-3 * 25 ** (k / 15)) for k in range(15, -1, -1)))
    ap.add_argument('--models', default='peg,standard')
    ap.add_argument('--work', default='/tmp/peg_pour5s')
    ap.add_argument('--budget', type=float, default=1e9, help='no run is started after this many seconds')
    ap.add_argument('--out', default=None, help='the table, rewritten after every run')
    ap.add_argument('--timeout', type=float, default=900, help='a run is stopped after this many seconds')
    ap.add_argument('--timeout-standard', type=float, default=None,
                    help="the standard model's runs are stopped after this many seconds (default --timeout); a "
                         "stopped run counts up to the step it reached (its overlaps above 1e-12 m^3 from the trace)")
    a = ap.parse_args()
    hs = [float(x) for x in a.h.split(',')]
    models = a.models.split(',')
    os.makedirs(os.path.join(a.work, 'logs'), exist_ok=True)
    seeds = [int(x) for x in a.seed_list.split(',')] if a.seed_list else list(range(1, a.seeds + 1))
    for seed in seeds:
        d = os.path.join(a.work, 'seed%d' % seed)
        subprocess.run([sys.executable, os.path.join(ROOT, 'scenes', 'peg', 'gen_pour.py'), '--paper',
                        '--seed', str(seed), '--out', d], check=True, capture_output=True)
    res, start, stopped, unfinished = {}, time.time(), None, []
    for h in hs:
        for seed in seeds:
            for model in models:
                if time.time() - start > a.budget:
                    stopped = (h, seed, model)
                    break
                log = os.path.join(a.work, 'logs', 'h%g_seed%d_%s.log' % (h, seed, model))
                limit = a.timeout_standard if model == 'standard' and a.timeout_standard else a.timeout
                load = os.getloadavg()[0]
                c0 = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
                with open(log, 'w') as err:
                    try:
                        out = subprocess.run([a.bin, '--scene', os.path.join(a.work, 'seed%d' % seed,
                                                                             'pour_paper.yaml'),
                                              '--release', '0.5', '--seconds', str(a.seconds), '--h', str(h),
                                              '--only', model, '--trace'], check=True, stdout=subprocess.PIPE,
                                             stderr=err, text=True, timeout=limit).stdout
                    except subprocess.TimeoutExpired:
                        out = None
                cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - c0
                if out is None:
                    us, halved, fr, dropped, maxn, maxblock, unpolished = parse_trace(log)
                    over = [float(l.split()[-2]) for l in open(log) if ': overlap ' in l]
                    unfinished.append('h %g seed %d %s (%d of %d steps in %.0f s)' % (
                        h, seed, model, len(us), round(a.seconds / h), limit))
                    print('# h %g seed %d %s: stopped after %.0f s, %d steps, largest overlap above 1e-12: %s'
                          % (h, seed, model, limit, len(us), max(over) if over else '-'), file=sys.stderr, flush=True)
                    res.setdefault((h, model), []).append(dict(
                        overlap=max(over) if over else 0, fallbacks=sum(
                            1 for l in open(log) if ' us ' in l and ' failed 1 ' in l), steps=len(us), us=us,
                        halved=halved, frictionless=fr, maxn=maxn, maxblock=maxblock, cpu=cpu, load=load,
                        partial=1))
                    if a.out:
                        with open(a.out, 'w') as f:
                            table(res, models, f, '# runs so far (%.0f s wall)' % (time.time() - start))
                    continue
                load = max(load, os.getloadavg()[0])
                for line in out.splitlines():
                    if not line.startswith('| ') or line.startswith('| h'):
                        continue
                    col = [c.strip() for c in line.strip('|').split('|')]
                    if model == 'peg':
                        ov, fallbacks = float(col[1]), int(col[2].split()[0])
                    else:
                        ov, fallbacks = float(col[10]), int(col[11])
                us, halved, fr, dropped, maxn, maxblock, unpolished = parse_trace(log)
                res.setdefault((h, model), []).append(dict(
                    overlap=ov, fallbacks=fallbacks, steps=len(us), us=us, halved=halved, frictionless=fr,
                    maxn=maxn, maxblock=maxblock, cpu=cpu, load=load))
                print('# h %g seed %d %s: overlap %.3g, %d fallbacks, %d steps with a block left unpolished, '
                      '%.1f s user CPU, %.0f s wall so far, load %.1f'
                      % (h, seed, model, ov, fallbacks, unpolished, cpu, time.time() - start, load),
                      file=sys.stderr, flush=True)
                if a.out:
                    with open(a.out, 'w') as f:
                        table(res, models, f, '# bench/peg_pour5s.py: %d seeds x %s s, runs so far (%.0f s wall)'
                              % (len(seeds), a.seconds, time.time() - start))
            if stopped:
                break
        if stopped:
            break
    note = '# bench/peg_pour5s.py: seeds %s of gen_pour.py --paper, %g s each, %.0f s of wall time' % (
        ','.join(map(str, seeds)), a.seconds, time.time() - start)
    if stopped:
        note += '; stopped by --budget before h %g seed %d %s' % stopped
    if unfinished:
        note += '\n# runs stopped by --timeout (in the table up to the step each reached): ' + ', '.join(unfinished)
    table(res, models, sys.stdout, note)
    if a.out:
        with open(a.out, 'w') as f:
            table(res, models, f, note)


if __name__ == '__main__':
    main()
