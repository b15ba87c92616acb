#!/usr/bin/env python3
"""bench/untuned_general.py [BUILDDIR] [--only 1,2,...]: issue 18's figures on
untuned scenes unlike bench/untuned.py's (no gains in the scene: khz's
automatic gains; RK4, 1 kHz): capsules, cylinders and a convex hull (a
hexagonal prism mesh) resting at 1 cm..1 m and 0.01..1000 kg; stacks with
mass ratios 10 and 100 (and one of 10^4, beyond the issue's 100); inclines
below and above the friction angle; slides to a stop; landings on an edge
with restitution 0; Menagerie's Go1 (from its home key) standing on a box.
One line per figure, the issue's target and met / MISS (items 1, 2, 4, 5).
Sections: 1 resting, 2 stacks, 3 inclines, 4 slides, 5 edge landings
(and 5b: tipping onto the second edge against Housner's rigid rocking-block
answer), 6 robot on a box. Stacks run 10 s (the issue's 60 s: bench/untuned.py)."""
import csv, math, os, subprocess, sys, tempfile
G = 9.81
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
only = next((sys.argv[i + 1].split(',') for i, a in enumerate(sys.argv) if a == '--only'), None)
build = next((a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith('--') and sys.argv[i - 1] != '--only'), 'build')
sim = os.path.join(build, 'tools', 'khz-sim')
tmp = tempfile.mkdtemp(prefix='khz_untuned_general_')
HEX = os.path.join(tmp, 'hexprism.obj')
with open(HEX, 'w') as f:  # hexagonal prism: circumradius 1, half height 1
    f.write(''.join(f'v {math.cos(math.pi / 3 * k):.9f} {math.sin(math.pi / 3 * k):.9f} {z}\n' for z in (-1, 1) for k in range(6)))
    f.write('f 6 5 4 3 2 1\nf 7 8 9 10 11 12\n')
    f.write(''.join(f'f {k + 1} {(k + 1) % 6 + 1} {(k + 1) % 6 + 7} {k + 7}\n' for k in range(6)))
met = [0, 0]

def sec(n): return only is None or str(n) in only

def scene(name, objects, contact=None, ground='{height: 0}', extra=()):
    lines = ['khz_scene: 1', f'name: {name}', 'rate_hz: 1000', 'integrator: rk4', f'ground: {ground}']
    if contact: lines.append(f'contact: {contact}')
    lines += list(extra)
    if objects:
        lines.append('objects:'); lines += [f'  - {o}' for o in objects]
    p = os.path.join(tmp, name + '.yaml')
    open(p, 'w').write('\n'.join(lines) + '\n')
    return p

def run(p, seconds, method='penalty', contacts=False):
    out = p + '.' + method + '.csv'; cf = p + '.' + method + '.contacts.csv'
    args = [sim, 'run', p, '--steps', str(int(round(seconds * 1000))), '--out', out, '--method', method]
    if contacts: args += ['--contacts', cf]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode: print('ERROR', p, r.stderr[-500:]); return None, None, None
    rows = list(csv.reader(open(out))); hdr = rows[0]
    data = [list(map(float, x)) for x in rows[1:]]
    con = None
    if contacts:
        cr = list(csv.reader(open(cf))); ch = cr[0]; con = (ch, cr[1:])
    return hdr, data, con

def col(hdr, body, i, kind='q'): return hdr.index(f'{kind}:{body}[{i}]')

def report(fig, val, target, ok, unit='', na=None):
    """na: why the figure does not apply (printed, not counted)"""
    if na is None: met[0] += bool(ok); met[1] += 1
    tag = 'n/a ' if na else 'ok  ' if ok else 'MISS'
    print(f'{tag} {fig:78s} {val:12.4g} {unit:5s} (target {target})' + (f'\n       not applicable: {na}' if na else ''), flush=True)

def ke(hdr, row, b, m): i = col(hdr, b, 0, 'qd'); return 0.5 * m * sum(row[i + k] ** 2 for k in range(3))

def hexinertia(m, s):  # hexagonal prism circumradius s, half height s, approx as cylinder of equal area
    r2 = 3 * math.sqrt(3) / 2 * s * s / math.pi; h = s
    return f'[{m*(3*r2+4*h*h)/12:.6g}, {m*(3*r2+4*h*h)/12:.6g}, {m*r2/2:.6g}, 0, 0, 0]'

def obj(name, shape, s, m, pos, rpy='[0, 0, 0]', vel=None, fixed=False):
    sz = {'capsule': f'size: [{s}, {s}]', 'cylinder': f'size: [{s}, {s}]', 'sphere': f'size: [{s}]',
          'box': f'size: [{s}, {s}, {s}]', 'hull': f'file: {HEX}, scale: [{s}, {s}, {s}], inertia: {hexinertia(m, s)}'}[shape]
    sh = 'mesh' if shape == 'hull' else shape
    v = f', vel: {vel}' if vel else ''
    return f'{{name: {name}, shape: {sh}, {sz}, mass: {m}, pos: {pos}, rpy: {rpy}{v}}}'

# rest height of each shape lying as posed: (rpy, height of centre = factor * s)
POSES = {'capsule lying': ('capsule', '[1.5707963267948966, 0, 0]', 1.0), 'cylinder upright': ('cylinder', '[0, 0, 0]', 1.0),
         'cylinder on its side': ('cylinder', '[1.5707963267948966, 0, 0]', 1.0), 'hull on its face': ('hull', '[0, 0, 0]', 1.0),
         'capsule upright': ('capsule', '[0, 0, 0]', 2.0)}

# 1. resting, 1 cm..1 m, 0.01..1000 kg
if sec(1):
    for pose, (shape, rpy, f) in POSES.items():
        wp, wk = 0, 0
        for m in (0.01, 1, 1000):
            for s in (0.005, 0.05, 0.5):
                p = scene(f'rest_{shape}_{pose[-4:].strip()}_{m}_{s}', [obj('o', shape, s, m, f'[0, 0, {f*s}]', rpy)])
                hdr, data, _ = run(p, 2)
                if hdr is None: continue
                wp = max(wp, f * s - data[-1][col(hdr, 'o', 2)]); wk = max(wk, ke(hdr, data[-1], 'o', m) / m)
        report(f'1. {pose}, 0.01-1000 kg, 1 cm-1 m: worst sink after 2 s', 1e3 * wp, '<= 0.5 mm', wp <= 5e-4, 'mm')
        report(f'1. {pose}: worst kinetic energy per kg after 2 s', wk, '<= 1e-6', wk <= 1e-6, 'J/kg')

# 2. stacks and mass ratios (10 s)
if sec(2):
    T = 10
    cases = [('cylinders upright, alternating 1 / 10 kg (10)', 'cylinder', [1 if i % 2 == 0 else 10 for i in range(10)], 0.05),
             ('hulls, four 100 kg on a 1 kg', 'hull', [1] + [100] * 4, 0.05),
             ('cylinders upright, 100 kg on 1 kg on 0.01 kg (10^4, beyond the issue)', 'cylinder', [0.01, 1, 100], 0.05),
             ('boxes 1 cm, alternating 0.01 / 0.1 kg (6)', 'box', [0.01 if i % 2 == 0 else 0.1 for i in range(6)], 0.005),
             ('boxes 1 m, alternating 100 / 1000 kg (5)', 'box', [100 if i % 2 == 0 else 1000 for i in range(5)], 0.5)]
    for name, shape, masses, s in cases:
        objs = [obj(f'b{i}', shape, s, m, f'[0, 0, {s + 2 * s * i:.4f}]') for i, m in enumerate(masses)]
        p = scene('stack_' + name[:12].replace(' ', '_').replace(',', ''), objs)
        hdr, data, _ = run(p, T)
        if hdr is None: continue
        n = len(masses)
        drift = max(math.hypot(data[-1][col(hdr, f'b{i}', 0)] - data[0][col(hdr, f'b{i}', 0)],
                               data[-1][col(hdr, f'b{i}', 1)] - data[0][col(hdr, f'b{i}', 1)]) for i in range(n))
        sink = max(data[0][col(hdr, f'b{i}', 2)] - data[-1][col(hdr, f'b{i}', 2)] for i in range(n))
        e = sum(ke(hdr, data[-1], f'b{i}', m) for i, m in enumerate(masses))
        report(f'2. {name}: drift after {T} s', 1e3 * drift, '<= 1 mm', drift <= 1e-3, 'mm')
        report(f'2. same: largest sink of a body after {T} s', 1e3 * sink, f'<= {n} mm', sink <= 1e-3 * n, 'mm')
        report(f'2. same: kinetic energy at the end', e, '<= 1e-4 J', e <= 1e-4, 'J')
    # a 1 kg sphere on a 100 kg box on a 1 kg box
    objs = [obj('a', 'box', 0.05, 1, '[0, 0, 0.05]'), obj('b', 'box', 0.05, 100, '[0, 0, 0.15]'),
            obj('c', 'sphere', 0.05, 1, '[0, 0, 0.25]')]
    p = scene('stack_sphere_top', objs)
    hdr, data, _ = run(p, T)
    sink = max(data[0][col(hdr, b, 2)] - data[-1][col(hdr, b, 2)] for b in 'abc')
    report('2. 1 kg box / 100 kg box / 1 kg sphere: largest sink after 10 s', 1e3 * sink, '<= 3 mm', sink <= 3e-3, 'mm')

def fit_accel(ts, xs):
    """twice the quadratic coefficient of the least-squares parabola through
    (ts, xs): the mean acceleration over the window. Two velocities by
    central differences (as before) took the body's rocking with them: a
    deepest-point body swings its centre by its half height times its
    rocking rate (15 mm/s for a 5 cm hull at 0.3 rad/s, 1.3 % of its
    velocity change over the half second)."""
    n = len(ts); tm = sum(ts) / n; u = [t - tm for t in ts]
    S = [sum(x ** k for x in u) for k in range(5)]
    b = [sum(x ** k * y for x, y in zip(u, xs)) for k in range(3)]
    A = [[S[0], S[1], S[2]], [S[1], S[2], S[3]], [S[2], S[3], S[4]]]
    det = lambda M: (M[0][0] * (M[1][1] * M[2][2] - M[1][2] * M[2][1]) - M[0][1] * (M[1][0] * M[2][2] - M[1][2] * M[2][0])
                     + M[0][2] * (M[1][0] * M[2][1] - M[1][1] * M[2][0]))
    A2 = [row[:2] + [bk] for row, bk in zip(A, b)]  # Cramer's rule for the quadratic coefficient
    return 2 * det(A2) / det(A)

# 3. inclines: 20 deg mu 0.5 sticks, 30 deg mu 0.3 accelerates (both methods)
if sec(3):
    for deg, mu, t in ((20, 0.5, 10), (30, 0.3, 1)):
        th = math.radians(deg)
        g = f'{{normal: [0, {-math.sin(th):.9f}, {math.cos(th):.9f}]}}'
        for pose, shape, s, m, roll_extra in (('cylinder upright', 'cylinder', 0.05, 1, 0), ('hull on its face', 'hull', 0.05, 2, 0),
                                            ('capsule along the fall line', 'capsule', 0.05, 1, math.pi / 2),
                                            ('box 1 m, 1000 kg', 'box', 0.5, 1000, 0), ('box 1 cm, 0.01 kg', 'box', 0.005, 0.01, 0)):
            h = s  # centre height above the surface in every pose here
            pos = f'[0, {-h * math.sin(th):.9f}, {h * math.cos(th):.9f}]'
            # capsule along the fall line: its axis (body z) turned onto the slope's y: roll th + pi/2
            p = scene(f'incl{deg}_{shape}_{s}', [obj('b', shape, s, m, pos, f'[{th + roll_extra:.9f}, 0, 0]')],
                      contact=f'{{mu: {mu}, restitution: 0}}', ground=g)
            for method in ('penalty', 'deepest'):
                hdr, data, _ = run(p, t, method)
                if hdr is None: continue
                ix = col(hdr, 'b', 0)
                sl = [(r[ix + 1] * math.cos(th) + r[ix + 2] * math.sin(th)) for r in data]
                if deg == 20:
                    creep = abs(sl[-1] - sl[0])
                    # counted for both methods (deepest: the smooth maximum of the depths, docs/contact.md)
                    report(f'3. {method}: {pose} on 20 deg, mu 0.5: creep in 10 s', 1e3 * creep, '<= 0.1 mm', creep <= 1e-4, 'mm')
                else:
                    aw = G * (math.sin(th) - mu * math.cos(th)); n0 = len(sl) // 2
                    a = -fit_accel([r[0] for r in data[n0:]], sl[n0:])
                    report(f'3. {method}: {pose} on 30 deg, mu 0.3: acceleration / g(sin - mu cos)', a / aw, 'within 1 %', abs(a / aw - 1) <= 0.01)

# 4. sliding to a stop
if sec(4):
    for pose, shape, s, m, rpy, v0, mu in (('cylinder upright', 'cylinder', 0.05, 1, '[0, 0, 0]', 1.0, 0.5),
                                          ('hull on its face', 'hull', 0.05, 2, '[0, 0, 0]', 3.0, 0.2),
                                          ('capsule along its axis', 'capsule', 0.05, 1, '[0, 1.5707963267948966, 0]', 2.0, 0.3),
                                          ('box 1 cm, 0.01 kg', 'box', 0.005, 0.01, '[0, 0, 0]', 1.0, 0.4),
                                          ('box 1 m, 1000 kg', 'box', 0.5, 1000, '[0, 0, 0]', 2.0, 0.3)):
        p = scene(f'slide_{shape}_{s}', [obj('b', shape, s, m, f'[0, 0, {s}]', rpy, f'[{v0}, 0, 0]')],
                  contact=f'{{mu: {mu}, restitution: 0}}')
        for method in ('penalty', 'deepest'):
            tstop = v0 / (mu * G)
            hdr, data, _ = run(p, tstop + 1.0, method)
            if hdr is None: continue
            x = [r[col(hdr, 'b', 0)] for r in data]; dd = v0 ** 2 / (2 * mu * G); xm = max(x)
            report(f'4. {method}: {pose} at {v0} m/s, mu {mu}: stop / v0^2/(2 mu g)', xm / dd, 'within 0.5 %', abs(xm / dd - 1) <= 0.005)
            report(f'4. {method}: same, slides back', 1e3 * (xm - x[-1]), '<= 0.1 mm', xm - x[-1] <= 1e-4, 'mm')

def rocking_rise(shape, a, b, m, w):
    """Housner's rocking block ("The behavior of inverted pendulum structures
    during earthquakes", 1963): a rigid body turning at w about one edge
    (half width a from its centre, centre b above the ground) lands on the
    opposite edge with e = 0 and sticking friction. Its angular momentum
    about the new edge is conserved through the impact:
    w' / w = (I + m (b^2 - a^2)) / (I + m (a^2 + b^2)), I about the centre
    (1 - 3/2 sin^2 alpha for a block); w' <= 0: it stops on both edges.
    It then turns up about the new edge until I_B w'^2 / 2 = m g rise."""
    R2 = a * a + b * b
    I = m * R2 / 3 if shape == 'box' else m * (3 * a * a + 4 * b * b) / 12
    ratio = max((I + m * (b * b - a * a)) / (I + m * R2), 0)
    return 0.5 * (I + m * R2) * (ratio * w) ** 2 / (m * G)

def capsule_rise(hdr, row, r, h, m):
    """A capsule (radius r, half length h, turning about x) whose second end
    lands with e = 0 and sticks: its angular momentum about the landing
    end's lowest point B is kept through the impact, L_B = I w + m (r_BC x
    v_C); it then turns about B at w' = L_B / I_B and rises I_B w'^2 / (2 m
    g) (rolling on its end: at the top it is still). I from the scene
    format's capsule inertia (docs/scene-format.md)."""
    mc = m * 2 * h / (2 * h + 4 * r / 3); ms = m - mc
    I = mc * (3 * r * r + 4 * h * h) / 12 + ms * (0.4 * r * r + h * h + 0.75 * h * r)
    c = lambda k: row[hdr.index(k)]
    th = 2 * math.atan2(c('q:b[4]'), c('q:b[3]')); w = c('qd:b[3]')
    C = (c('q:b[1]'), c('q:b[2]')); V = (c('qd:b[1]'), c('qd:b[2]')); ax = (-math.sin(th), math.cos(th))
    B = min(((C[0] + sg * h * ax[0], C[1] + sg * h * ax[1] - r) for sg in (1, -1)),
            key=lambda B: V[1] + w * (B[0] - C[0]))  # the end that approaches
    rb = (C[0] - B[0], C[1] - B[1]); IB = I + m * (rb[0] ** 2 + rb[1] ** 2)
    w2 = (I * w + m * (rb[0] * V[1] - rb[1] * V[0])) / IB
    return 0.5 * IB * w2 * w2 / (m * G)

# 5. landing on an edge with e = 0
if sec(5):
    for pose, shape, s, m, rpy in (('cylinder on its rim', 'cylinder', 0.05, 1, '[0.5, 0, 0]'),
                                   ('hull on an edge', 'hull', 0.05, 2, '[0.4, 0.2, 0]'),
                                   ('capsule tilted (one end first)', 'capsule', 0.05, 1, '[1.2, 0, 0]'),
                                   ('box 1 cm 0.01 kg on an edge', 'box', 0.005, 0.01, '[0.4, 0, 0]'),
                                   ('box 1 m 1000 kg on an edge', 'box', 0.5, 1000, '[0.4, 0, 0]')):
        p = scene(f'land_{shape}_{s}', [obj('b', shape, s, m, f'[0, 0, {4 * s + 0.3}]', rpy)], contact='{restitution: 0}')
        hdr, data, _ = run(p, 3)
        if hdr is None: continue
        z = [r[col(hdr, 'b', 2)] for r in data]; rest = z[-1]
        first = next(i for i, v in enumerate(z) if v < rest + 1e-3)
        rise = max(z[first:]) - rest
        if shape == 'hull':  # turned about two axes: no closed form; it stops (the wording)
            report(f'5. {pose}, e = 0: rise above rest after landing', 1e3 * rise, '<= 1 mm', rise <= 1e-3, 'mm')
            continue
        # the rigid answer from the state before the second landing (the
        # largest angular velocity before the body first comes within 1 mm
        # of its rest height): Housner for the box and cylinder, the
        # capsule's from its angular momentum about the landing end
        iw = col(hdr, 'b', 3, 'qd'); top = max(range(first + 1), key=lambda i: abs(data[i][iw]))
        w = abs(data[top][iw])
        up = rocking_rise(shape, s, s, m, w) if shape != 'capsule' else capsule_rise(hdr, data[top], s, s, m)
        report(f'5. {pose}, e = 0: rise above rest after landing', 1e3 * rise, '<= 1 mm', rise <= 1e-3, 'mm',
               na=None if up <= 1e-3 else f'a rigid body rises {1e3 * up:.3g} mm here (from {w:.3g} rad/s at the landing); next line')
        report(f'5. {pose}, e = 0: rise - rigid e = 0 answer ({1e3 * up:.3g} mm)', 1e3 * (rise - up), 'within 1 mm',
               abs(rise - up) <= 1e-3, 'mm')

# 5b. tipping from rest on one edge onto the other, e = 0, mu 1 (sticks): the
# rise after the landing against Housner's rigid answer (rocking_rise, the
# angular velocity at landing from the energy of the fall about the first edge,
# which equals the rise's, I_A = I_B, so rise = ratio^2 times the fall)
if sec(5):
    th0 = 0.3
    for pose, shape, a, b, m in (('cube 1 cm, 0.01 kg', 'box', 0.005, 0.005, 0.01), ('cube 1 m, 1000 kg', 'box', 0.5, 0.5, 1000),
                                 ('slab 40 x 10 cm, 2 kg (stops: ratio < 0)', 'box', 0.2, 0.05, 2),
                                 ('cylinder r = h = 5 cm, 1 kg', 'cylinder', 0.05, 0.05, 1),
                                 ('cylinder r = 2h = 10 cm, 1 kg (stops)', 'cylinder', 0.1, 0.05, 1),
                                 ('cylinder r = h/2 = 5 cm, 1 kg', 'cylinder', 0.05, 0.1, 1)):
        sz = f'size: [{a}, {a}, {b}]' if shape == 'box' else f'size: [{a}, {b}]'
        z0 = a * math.sin(th0) + b * math.cos(th0)  # resting on one edge, tilted th0
        p = scene(f'tip_{shape}_{a}_{b}', [f'{{name: b, shape: {shape}, {sz}, mass: {m}, pos: [0, 0, {z0:.12f}], rpy: [{th0}, 0, 0]}}'],
                  contact='{restitution: 0, mu: 1.0}')
        hdr, data, _ = run(p, 2)
        if hdr is None: continue
        R2 = a * a + b * b; I = m * R2 / 3 if shape == 'box' else m * (3 * a * a + 4 * b * b) / 12
        fall = z0 - b; w = math.sqrt(2 * m * G * fall / (I + m * R2))
        want = rocking_rise(shape, a, b, m, w)
        z = [r[col(hdr, 'b', 2)] for r in data]
        first = next(i for i, v in enumerate(z) if v < b + 0.02 * fall)
        rise = max(z[first:]) - b
        report(f'5b. tipping onto the second edge, {pose}: rise - rigid e = 0 answer ({1e3 * want:.3g} mm)',
               1e3 * (rise - want), 'within 1 mm', abs(rise - want) <= 1e-3, 'mm')

# 6. a robot standing on a box (Go1 from its home key; a 20 kg and a 0.5 kg box)
if sec(6):
    go1 = os.path.join(root, 'tests/validation/robots/unitree_go1/go1.xml')
    for bm in (20, 0.5):
        p = scene(f'go1_on_box_{bm}', [f'{{name: box, shape: box, size: [0.4, 0.3, 0.05], mass: {bm}, pos: [0, 0, 0.05]}}'],
                  contact='{mu: 0.8, restitution: 0}',
                  extra=['robots:', f'  - {{name: go1, mjcf: {go1}, keyframe: home, base: {{pos: [0, 0, 0.1]}}}}'])
        hdr, data, con = run(p, 3, contacts=True)
        if hdr is None: continue
        ch, cr = con
        istep, idep, ib0, ib1, ibot = ch.index('step'), ch.index('depth'), ch.index('body0'), ch.index('body1'), ch.index('bottom')
        last = [r for r in cr if int(r[istep]) >= 2000]
        dmax = max((float(r[idep]) for r in last), default=0)
        sink = data[0][col(hdr, 'box', 2)] - data[-1][col(hdr, 'box', 2)]
        report(f'6. Go1 (home key) standing on a {bm} kg box: deepest contact in the last second', 1e3 * dmax, '<= 1 mm', dmax <= 1e-3, 'mm')
        report(f'6. same: box sink after 3 s', 1e3 * sink, '<= 1 mm', sink <= 1e-3, 'mm')
print(f'{met[0]} of {met[1]} figures met')
