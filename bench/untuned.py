#!/usr/bin/env python3
"""bench/untuned.py [BUILDDIR] [--quick] [--json FILE] [--only 1,3,4]: contact on scenes
nobody tuned (no gains in the scene: khz's automatic gains), each against its
analytic value, with the penalty method (and the deepest-point baseline where
the figure is about friction). Prints one line per figure: the value, the
target of issue 18 and whether it is met. Scenes are written to a temporary
folder and run with khz-sim (RK4, 1 kHz). --only runs the numbered sections
given (1 resting, 2 stacks, 3 light block with large forces, 4 impacts,
5 friction, 6 tunnelling)."""
import csv, json, math, os, subprocess, sys, tempfile

G = 9.81
quick = '--quick' in sys.argv
only = next((sys.argv[i + 1].split(',') for i, a in enumerate(sys.argv) if a == '--only'), None)
build = next((a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith('--') and sys.argv[i - 1] not in ('--only', '--json')), 'build')


def section(n):
    return only is None or str(n) in only


sim = os.path.join(build, 'tools', 'khz-sim')
tmp = tempfile.mkdtemp(prefix='khz_untuned_')
rows = []


def scene(name, objects, contact=None, ground='{height: 0}', gravity=None, extra=()):
    lines = ['khz_scene: 1', f'name: {name}', 'rate_hz: 1000', 'integrator: rk4', f'ground: {ground}']
    if gravity: lines.append(f'gravity: {gravity}')
    if contact: lines.append(f'contact: {contact}')
    lines.append('objects:')
    lines += [f'  - {o}' for o in objects]
    lines += list(extra)
    path = os.path.join(tmp, name + '.yaml')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path


def run(path, seconds, method='penalty'):
    out = path + '.' + method + '.csv'
    steps = int(round(seconds * 1000))
    subprocess.run([sim, 'run', path, '--steps', str(steps), '--out', out, '--method', method],
                   check=True, capture_output=True)
    r = list(csv.reader(open(out)))
    hdr, data = r[0], [list(map(float, x)) for x in r[1:]]
    return hdr, data


def col(hdr, body, i, kind='q'):
    return hdr.index(f'{kind}:{body}[{i}]')


def report(figure, value, target, ok, unit='', na=None):
    """na: why the figure does not apply to the method (printed, not counted)"""
    rows.append({'figure': figure, 'value': value, 'target': target, 'ok': bool(ok) if na is None else None,
                 **({'not_applicable': na} if na else {})})
    tag = 'n/a ' if na else 'ok  ' if ok else 'MISS'
    print(f'{tag} {figure:70s} {value:12.4g} {unit:6s} (target {target})' + (f'\n       not applicable: {na}' if na else ''))


def kinetic(hdr, row, bodies):
    """translational kinetic energy of the given (body, mass) pairs (the CSV
    has no inertias)"""
    e = 0
    for b, m in bodies:
        iv = col(hdr, b, 0, 'qd')
        e += 0.5 * m * sum(row[iv + k] ** 2 for k in range(3))
    return e


# 1. defaults that hold: a resting box or sphere, 0.01..1000 kg, 1 cm..1 m
if section(1):
    worst_pen, worst_ke = 0, 0
    for shape in ('box', 'sphere'):
        for m in (0.01, 1, 1000):
            for half in (0.005, 0.05, 0.5):
                size = f'[{half}, {half}, {half}]' if shape == 'box' else f'[{half}]'
                p = scene(f'rest_{shape}_{m}_{half}', [f'{{name: o, shape: {shape}, size: {size}, mass: {m}, pos: [0, 0, {half}]}}'])
                hdr, data = run(p, 2)
                z = data[-1][col(hdr, 'o', 2)]
                worst_pen = max(worst_pen, half - z)
                worst_ke = max(worst_ke, kinetic(hdr, data[-1], [('o', m)]) / m)
    report('1. resting box/sphere 0.01-1000 kg, 1 cm-1 m: worst sink after 2 s', 1e3 * worst_pen, '<= 0.5 mm', worst_pen <= 5e-4, 'mm')
    report('1. same: worst kinetic energy per kg after 2 s', worst_ke, '<= 1e-6 J/kg', worst_ke <= 1e-6, 'J/kg')

# 2. stacks: alternating 1/10 kg; nine 100 kg boxes on 1 kg; a 15-box pyramid
if section(2):
    T = 10 if quick else 60
    for name, masses in (('alternating 1 / 10 kg', [1 if i % 2 == 0 else 10 for i in range(10)]),
                         ('nine 100 kg boxes on a 1 kg box', [1] + [100] * 9)):
        objs = [f'{{name: b{i}, shape: box, size: [0.1, 0.1, 0.1], mass: {m}, pos: [0, 0, {0.1 + 0.2 * i:.3f}]}}'
                for i, m in enumerate(masses)]
        p = scene('stack_' + str(len(set(masses))) + name[:4].replace(' ', ''), objs)
        hdr, data = run(p, T)
        drift = max(math.hypot(data[-1][col(hdr, f'b{i}', 0)] - data[0][col(hdr, f'b{i}', 0)],
                               data[-1][col(hdr, f'b{i}', 1)] - data[0][col(hdr, f'b{i}', 1)]) for i in range(10))
        sink = max(data[0][col(hdr, f'b{i}', 2)] - data[-1][col(hdr, f'b{i}', 2)] for i in range(10))
        ke = kinetic(hdr, data[-1], [(f'b{i}', m) for i, m in enumerate(masses)])
        report(f'2. 10-box stack, {name}: drift after {T} s', 1e3 * drift, '<= 1 mm', drift <= 1e-3, 'mm')
        report(f'2. same: top sink (whole column) after {T} s', 1e3 * sink, 'stands', sink < 0.05, 'mm')
        report(f'2. same: kinetic energy at the end', ke, '<= 1e-4 J', ke <= 1e-4, 'J')
    objs, k = [], 0
    for row in range(5):  # 5 + 4 + 3 + 2 + 1 boxes of 0.2 m, 2 kg
        for j in range(5 - row):
            x = (j - (4 - row) / 2) * 0.21
            objs.append(f'{{name: p{k}, shape: box, size: [0.1, 0.1, 0.1], mass: 2, pos: [{x:.4f}, 0, {0.1 + 0.2 * row:.3f}]}}')
            k += 1
    p = scene('pyramid', objs)
    hdr, data = run(p, T)
    drift = max(math.dist(data[-1][col(hdr, f'p{i}', 0):col(hdr, f'p{i}', 0) + 3],
                          data[0][col(hdr, f'p{i}', 0):col(hdr, f'p{i}', 0) + 3]) for i in range(k))
    report(f'2. 15-box pyramid: largest displacement after {T} s', 1e3 * drift, 'stands (< 5 mm)', drift < 5e-3, 'mm')

# 3. light bodies, large forces: V2 (scenes/validation/v2_block_forces.yaml's
# forces, 10-100 N at random top-face points, 500 steps on, 500 off, 10 times)
# on a 10 g, 0.1 m block, no gains in the scene
if section(3):
    p = scene('v2_light', ['{name: block, shape: box, size: [0.05, 0.05, 0.05], mass: 0.01, pos: [0, 0, 0.05]}'],
              contact='{method: penalty, gamma: 0.85, mu: 0.8, restitution: 0}',
              extra=['experiment:', '  kind: block_forces', '  body: block', '  seed: 7', '  settle_steps: 1000',
                     '  on_steps: 500', '  off_steps: 500', '  cycles: 10', '  force_min: 10', '  force_max: 100'])
    r = json.loads(subprocess.run([sim, 'run', p, '--method', 'penalty'], check=True, capture_output=True,
                                  text=True).stdout)
    pen, air = r['unforced']['mean_penetration'], r['unforced']['airborne_steps']
    report('3. V2, 10 g 0.1 m block, 10-100 N: mean penetration unforced', 1e3 * pen, '<= 1 mm', pen <= 1e-3, 'mm')
    report('3. same: unforced steps off the ground (of 5000)', air, '0', air == 0, 'steps')

# 4. impacts: a ball dropped from 1 m, e = 0.5 and 0.9: apex heights
if section(4):
    for e in (0.5, 0.9):
        r = 0.05
        p = scene(f'bounce_{e}', [f'{{name: ball, shape: sphere, size: [{r}], mass: 1, pos: [0, 0, {1 + r}]}}'],
                  contact=f'{{restitution: {e}}}')
        hdr, data = run(p, 4)
        z = [x[col(hdr, 'ball', 2)] - r for x in data]
        apex = [z[i] for i in range(1, len(z) - 1) if z[i] > z[i - 1] and z[i] >= z[i + 1] and z[i] > 1e-3][:3]
        for n, hgt in enumerate(apex, 1):
            want = e ** (2 * n)
            report(f'4. ball from 1 m, e = {e}: bounce {n} apex / (e^{2 * n} h)', hgt / want, 'within 1 %',
                   abs(hgt / want - 1) <= 0.01)
    # a box landing flat on its face and a box landing on an edge, restitution 0
    for name, rpy in (('flat', '[0, 0, 0]'), ('edge', '[0.4, 0, 0]')):
        p = scene(f'land_{name}', [f'{{name: b, shape: box, size: [0.1, 0.1, 0.1], mass: 1, pos: [0, 0, 0.5], rpy: {rpy}}}'],
                  contact='{restitution: 0}')
        hdr, data = run(p, 3)
        z = [x[col(hdr, 'b', 2)] for x in data]
        rest = z[-1]
        # after the first time it reaches within 1 mm of its rest height
        first = next(i for i, v in enumerate(z) if v < rest + 1e-3)
        rise = max(z[first:]) - rest
        if name == 'flat':
            report(f'4. box landing {name}, restitution 0: rise above rest after landing', 1e3 * rise, '<= 1 mm', rise <= 1e-3, 'mm')
            continue
        # On an edge it turns about that edge and lands on the opposite one;
        # a rigid body does not stop there but turns on about it (Housner's
        # rocking block, 1963: angular momentum about the new edge is kept
        # through the e = 0 impact, w' = w I / (I + 2 m a^2) for a cube of
        # half size a), rising I_B w'^2 / (2 m g): 4.2 mm from the 7.0 rad/s
        # it lands with (docs/validation.md, "The target is not the rigid
        # answer"). The issue's "<= 1 mm above rest" holds only for bodies
        # that stop on both edges (wider than about 1.4 times their height).
        a, m = 0.1, 1.0
        I = m * 2 * a * a / 3; IB = I + 2 * m * a * a
        iw = col(hdr, 'b', 3, 'qd'); w = max(abs(data[i][iw]) for i in range(first + 1))
        want = 0.5 * IB * (w * I / IB) ** 2 / (m * G)
        report(f'4. box landing {name}, restitution 0: rise above rest after landing', 1e3 * rise, '<= 1 mm', rise <= 1e-3, 'mm',
               na=f'a rigid body rises {1e3 * want:.3g} mm here (Housner, from its {w:.3g} rad/s at the landing); next line')
        report(f'4. box landing {name}, restitution 0: rise - rigid e = 0 answer ({1e3 * want:.3g} mm)', 1e3 * (rise - want),
               'within 1 mm', abs(rise - want) <= 1e-3, 'mm')

# 5. friction: a box sliding at 2 m/s, mu 0.3: stop distance and slide-back
if section(5):
    for method in ('penalty', 'deepest'):
        v0, mu = 2.0, 0.3
        p = scene('slide', [f'{{name: b, shape: box, size: [0.1, 0.1, 0.1], mass: 1, pos: [0, 0, 0.1], vel: [{v0}, 0, 0]}}'],
                  contact=f'{{mu: {mu}, restitution: 0}}')
        hdr, data = run(p, 1.5, method)
        x = [r[col(hdr, 'b', 0)] for r in data]
        d = v0 ** 2 / (2 * mu * G)
        xmax = max(x)
        report(f'5. {method}: box sliding at 2 m/s, mu 0.3: stop distance / v0^2/(2 mu g)', xmax / d, 'within 0.5 %',
               abs(xmax / d - 1) <= 0.005)
        report(f'5. {method}: same, slides back', 1e3 * (xmax - x[-1]), '<= 0.1 mm', xmax - x[-1] <= 1e-4, 'mm')
        # incline: tan 20 deg = 0.364 < mu 0.5 sticks; 30 deg with mu 0.3 slides
        for deg, mu, t in ((20, 0.5, 10), (30, 0.3, 1)):
            th = math.radians(deg)
            g = f'{{normal: [0, {-math.sin(th):.9f}, {math.cos(th):.9f}]}}'
            pos = f'[0, {-0.1 * math.sin(th):.9f}, {0.1 * math.cos(th):.9f}]'
            p = scene(f'incline_{deg}', [f'{{name: b, shape: box, size: [0.1, 0.1, 0.1], mass: 1, pos: {pos}, rpy: [{th:.9f}, 0, 0]}}'],
                      contact=f'{{mu: {mu}, restitution: 0}}', ground=g)
            if deg == 30 and method == 'deepest':
                continue
            hdr, data = run(p, t if not (quick and deg == 20) else 2, method)
            ix = col(hdr, 'b', 0)
            s = [(r[ix + 1] * math.cos(th) + r[ix + 2] * math.sin(th)) for r in data]  # along the slope (towards +y up)
            if deg == 20:
                creep = abs(s[-1] - s[0])
                # counted for both methods: the deepest-point method's one point is the smooth maximum of
                # the depths (a face lying flat: its centre; docs/contact.md, friction, "A face lying flat")
                report(f'5. {method}: box on 20 deg, mu 0.5: creep in {t} s', 1e3 * creep, '<= 0.1 mm', creep <= 1e-4, 'mm')
            else:
                a_want = G * (math.sin(th) - mu * math.cos(th))
                # fit s = s0 - a t^2 / 2 over the second half
                n0 = len(s) // 2
                t0, t1 = data[n0][0], data[-1][0]
                v0s = (s[n0 + 1] - s[n0 - 1]) / (data[n0 + 1][0] - data[n0 - 1][0])
                v1s = (s[-1] - s[-3]) / (data[-1][0] - data[-3][0])
                a = -(v1s - v0s) / (t1 - t0)
                report(f'5. {method}: box on 30 deg, mu 0.3: acceleration / g (sin - mu cos)', a / a_want, 'within 1 %',
                       abs(a / a_want - 1) <= 0.01)

# 6. tunnelling: a 1 cm sphere at 20 m/s onto a 5 mm plate
if section(6):
    p = scene('tunnel', ['{name: plate, shape: box, size: [0.5, 0.5, 0.0025], mass: 1, pos: [0, 0, 0.5], fixed: true}',
                         '{name: ball, shape: sphere, size: [0.005], mass: 0.004, pos: [0, 0, 0.6], vel: [0, 0, -20]}'],
              gravity='[0, 0, 0]', contact='{restitution: 0}')
    hdr, data = run(p, 0.05)
    zend = data[-1][col(hdr, 'ball', 2)]
    report('6. 1 cm sphere at 20 m/s onto a 5 mm plate: ends above the plate', zend, '> 0.5 m', zend > 0.5, 'm')

json_out = next((sys.argv[i + 1] for i, a in enumerate(sys.argv) if a == '--json'), None)
if json_out:
    json.dump(rows, open(json_out, 'w'), indent=1)
counted = [r for r in rows if r['ok'] is not None]
na = len(rows) - len(counted)
print(f'{sum(r["ok"] for r in counted)} of {len(counted)} figures met' + (f', {na} not applicable' if na else ''))
