#!/usr/bin/env python3
"""bench/untuned_random.py [BUILDDIR] [--n N] [--seed S] [--seconds T] [--only I,J] [--keep DIR] [--joint]:
untuned scenes a user might build, drawn at random (issue 18): no gains in the
scene (khz's automatic gains), RK4 at 1 kHz, the penalty method. Shapes of the
scene loader's kinds (box, sphere, cylinder, capsule, and a convex mesh: a
hexagonal prism), masses 0.01-100 kg and half sizes 5 mm-0.5 m drawn
log-uniformly, arranged as
  stack    2-4 bodies in a column, touching, upright;
  offset   2-3 bodies in a column, each shifted sideways by up to 0.6 of
           the half width of the one below;
  tilted   1-3 bodies turned at random, dropped from 0-2 cm onto the ground
           or onto each other;
  squeezed a light body (0.01-0.1 kg) under or between heavy ones (10-100 kg,
           ratio 1:100 to 1:10^4);
  leaning  a box, capsule or cylinder tilted 15-60 degrees, its foot on the
           ground, its top against a heavy box (or a wall of fixed box).
Each runs T seconds (default 2) and is judged on four counts, one line each
and a FLAG line when one fails:
  gain   the total energy (kinetic + gravity's) rises above its start by more
         than 1e-4 J + sum(m g) x 0.5 mm (the springs store at most about
         that); or a step was rolled back as non-finite;
  sink   a body's lowest point more than 2 mm below the ground beyond its
         speed's travel in a step (a landing is found up to that deep), or a body
         that began above another in a column ending below it while their
         footprints still overlap (passed through);
  deep   a contact point deeper than 1 mm in the last 0.2 s while the scene
         is at rest (kinetic energy under 1e-3 J per kg at the end);
  slow   (printed, not a flag) microseconds per step.
--joint sets contact.joint_friction (off by default: the implicit friction
of a cluster whose sliding pairs share a free body solved with all its
discs at once; docs/contact.md, session 13).
--squeeze runs instead the fixed squeezes of docs/contact.md (*Where the
impulse acts*): a 10 g body (cylinder, box, sphere, capsule lying; half
size 4 cm) released 1 cm above the ground under two 5 cm bodies of M =
0.1, 1, 10 kg (cylinders on the cylinder, boxes on the others), 1 s: the
kinetic energy at the end and the farthest a body lies off the axis.
The scene files are kept in --keep DIR (default: a temporary directory) so
that a flagged one can be rerun: khz-sim run FILE --steps N --contacts C.
"""
import csv, json, math, os, random, subprocess, sys, tempfile

G = 9.81
args = sys.argv[1:]
def opt(name, default):
    return type(default)(args[args.index(name) + 1]) if name in args else default
N, SEED, T = opt('--n', 200), opt('--seed', 1), opt('--seconds', 2.0)
ONLY = [int(x) for x in opt('--only', '').split(',') if x]
JOINT = '--joint' in args  # contact.joint_friction on (docs/contact.md, session 13)
build = next((a for i, a in enumerate(args) if not a.startswith('--') and (i == 0 or not args[i - 1].startswith('--'))), 'build')
sim = os.path.join(build, 'tools', 'khz-sim')
tmp = opt('--keep', '') or tempfile.mkdtemp(prefix='khz_untuned_random_')
os.makedirs(tmp, exist_ok=True)
HEX = os.path.join(tmp, 'hexprism.obj')
with open(HEX, 'w') as f:  # hexagonal prism: circumradius 1, half height 1
    f.write(''.join(f'v {math.cos(math.pi / 3 * k):.9f} {math.sin(math.pi / 3 * k):.9f} {z}\n' for z in (-1, 1) for k in range(6)))
    f.write('f 6 5 4 3 2 1\nf 7 8 9 10 11 12\n')
    f.write(''.join(f'f {k + 1} {(k + 1) % 6 + 1} {(k + 1) % 6 + 7} {k + 7}\n' for k in range(6)))
HEXV = [(math.cos(math.pi / 3 * k), math.sin(math.pi / 3 * k), z) for z in (-1, 1) for k in range(6)]

# ------------------------------------------------------------ geometry --
def rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return [[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr]]

def quat_matrix(w, x, y, z):
    return [[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]]

def mT(R, v): return [sum(R[i][j] * v[i] for i in range(3)) for j in range(3)]
def mv(R, v): return [sum(R[j][i] * v[i] for i in range(3)) for j in range(3)]

def support_local(shape, size, d):
    """the shape's farthest point along d (body frame)"""
    if shape == 'box': return [math.copysign(size[i], d[i]) for i in range(3)]
    if shape == 'sphere':
        n = math.sqrt(sum(x * x for x in d)) or 1
        return [size[0] * x / n for x in d]
    if shape in ('cylinder', 'capsule'):
        r, h = size
        rho = math.hypot(d[0], d[1])
        if shape == 'cylinder':
            xy = [r * d[0] / rho, r * d[1] / rho] if rho > 1e-12 else [0, 0]
            return xy + [math.copysign(h, d[2])]
        n = math.sqrt(sum(x * x for x in d)) or 1
        return [r * d[0] / n, r * d[1] / n, math.copysign(h, d[2]) + r * d[2] / n]
    s = size[0]  # hexagonal prism, scale s
    return max(([s * v[0], s * v[1], s * v[2]] for v in HEXV), key=lambda p: sum(p[i] * d[i] for i in range(3)))

def support(b, R, d):
    """world offset from the body origin of its farthest point along world d"""
    return mv(R, support_local(b['shape'], b['size'], mT(R, d)))

def half_width(b):
    s = b['size']
    if b['shape'] == 'box': return min(s[0], s[1])
    return s[0] * math.sqrt(3) / 2 if b['shape'] == 'hull' else s[0]

def inertia(b):
    m, s = b['mass'], b['size']
    if b['shape'] == 'box': return [m * (s[1] ** 2 + s[2] ** 2) / 3, m * (s[0] ** 2 + s[2] ** 2) / 3, m * (s[0] ** 2 + s[1] ** 2) / 3]
    if b['shape'] == 'sphere': return [0.4 * m * s[0] ** 2] * 3
    if b['shape'] == 'cylinder':
        r, h = s; return [m * (3 * r * r + 4 * h * h) / 12] * 2 + [m * r * r / 2]
    if b['shape'] == 'capsule':
        r, h = s; vc, vs = 2 * h, 4 * r / 3; mc, ms = m * vc / (vc + vs), m * vs / (vc + vs)
        ixx = mc * (3 * r * r + 4 * h * h) / 12 + ms * (0.4 * r * r + h * h + 0.75 * h * r)
        return [ixx, ixx, mc * r * r / 2 + 0.4 * ms * r * r]
    r2 = 3 * math.sqrt(3) / 2 * s[0] ** 2 / math.pi; h = s[0]  # hull as a cylinder of equal area
    return [m * (3 * r2 + 4 * h * h) / 12] * 2 + [m * r2 / 2]

# ------------------------------------------------------------- drawing --
def logu(rng, a, b): return math.exp(rng.uniform(math.log(a), math.log(b)))

def draw_body(rng, mass=None, shapes=('box', 'sphere', 'cylinder', 'capsule', 'hull')):
    shape = rng.choice(shapes)
    s = logu(rng, 0.005, 0.5)
    if shape == 'box': size = [s * logu(rng, 0.5, 2), s * logu(rng, 0.5, 2), s]
    elif shape == 'sphere': size = [s]
    elif shape in ('cylinder', 'capsule'): size = [s, s * logu(rng, 0.5, 2)]
    else: size = [s]
    return {'shape': shape, 'size': size, 'mass': mass if mass is not None else logu(rng, 0.01, 100), 'rpy': [0, 0, 0], 'fixed': False}

def place_on(b, R, z_top, x=0.0, y=0.0, gap=0.0):
    lo = support(b, R, [0, 0, -1])
    b['pos'] = [x, y, z_top + gap - lo[2]]
    return b['pos'][2] + support(b, R, [0, 0, 1])[2]

def column(rng, bodies, offset=0.0, tilt=0.0, gap=0.0):
    z, x, y, prev = 0.0, 0.0, 0.0, None
    for b in bodies:
        if tilt: b['rpy'] = [rng.uniform(-tilt, tilt), rng.uniform(-tilt, tilt), rng.uniform(-math.pi, math.pi)]
        elif b['shape'] in ('cylinder', 'capsule') and rng.random() < 0.3: b['rpy'] = [math.pi / 2, 0, rng.uniform(-math.pi, math.pi)]
        else: b['rpy'] = [0, 0, rng.uniform(-math.pi, math.pi)]
        R = rpy_matrix(*b['rpy'])
        if prev is not None and offset:
            a = rng.uniform(0, 2 * math.pi); f = rng.uniform(0, offset) * half_width(prev)
            x, y = x + f * math.cos(a), y + f * math.sin(a)
        z = place_on(b, R, z, x, y, rng.uniform(0, gap) if gap else 0.0)
        b['pos'][0], b['pos'][1] = x, y
        prev = b
    return bodies

def scene_leaning(rng):
    plank = draw_body(rng, shapes=('box', 'capsule', 'cylinder'))
    s = plank['size']
    if plank['shape'] == 'box': plank['size'] = [s[2], s[2] * logu(rng, 1, 3), s[2] * logu(rng, 3, 10)]
    else: plank['size'] = [s[0], s[0] * logu(rng, 3, 10)]
    ang = math.radians(rng.uniform(15, 60))  # from the vertical
    plank['rpy'] = [0, ang, 0]
    R = rpy_matrix(*plank['rpy'])
    height = support(plank, R, [0, 0, 1])[2] - support(plank, R, [0, 0, -1])[2]
    wall = {'shape': 'box', 'size': [logu(rng, 0.05, 0.5), logu(rng, 0.1, 0.5), height * 0.6], 'mass': logu(rng, 10, 100),
            'rpy': [0, 0, 0], 'fixed': rng.random() < 0.3}
    wall['pos'] = [0, 0, wall['size'][2]]
    # the plank's top leans on the wall's face at x = -wall half width; its foot on the ground
    plank['pos'] = [0, 0, 0]
    place_on(plank, R, 0.0)
    # highest point along -x that is within the wall's height: the plank's farthest point along +x
    px = support(plank, R, [1, 0, 0])
    plank['pos'][0] = -wall['size'][0] - px[0] - 1e-4
    top = plank['pos'][2] + px[2]
    if top > 2 * wall['size'][2]: wall['size'][2] = top / 2 + 0.01; wall['pos'][2] = wall['size'][2]
    return [wall, plank]

def draw_scene(rng):
    kind = rng.choice(['stack', 'offset', 'tilted', 'squeezed', 'leaning'])
    if kind == 'stack': bodies = column(rng, [draw_body(rng) for _ in range(rng.randint(2, 4))])
    elif kind == 'offset': bodies = column(rng, [draw_body(rng) for _ in range(rng.randint(2, 3))], offset=0.6)
    elif kind == 'tilted': bodies = column(rng, [draw_body(rng) for _ in range(rng.randint(1, 3))], tilt=math.pi, gap=0.02)
    elif kind == 'squeezed':
        light = draw_body(rng, mass=logu(rng, 0.01, 0.1))
        heavy = [draw_body(rng, mass=logu(rng, 10, 100)) for _ in range(rng.randint(1, 2))]
        order = [light] + heavy if rng.random() < 0.5 else heavy[:1] + [light] + heavy[1:]
        if len(order) == 2 and order[0] is not light: order = [light] + heavy
        bodies = column(rng, order, offset=0.3 if rng.random() < 0.3 else 0.0)
    else: bodies = scene_leaning(rng)
    return kind, bodies

def yaml_obj(i, b):
    sh = 'mesh' if b['shape'] == 'hull' else b['shape']
    if b['shape'] == 'hull':
        s = b['size'][0]; sz = f'file: {HEX}, scale: [{s:.6g}, {s:.6g}, {s:.6g}], inertia: [{", ".join(f"{x:.6g}" for x in inertia(b))}, 0, 0, 0]'
    else: sz = 'size: [' + ', '.join(f'{x:.6g}' for x in b['size']) + ']'
    fx = ', fixed: true' if b['fixed'] else ''
    return (f'  - {{name: b{i}, shape: {sh}, {sz}, mass: {b["mass"]:.6g}, pos: [{", ".join(f"{x:.9g}" for x in b["pos"])}], '
            f'rpy: [{", ".join(f"{x:.9g}" for x in b["rpy"])}]{fx}}}')

# ------------------------------------------------------------- judging --
def judge(idx, kind, bodies):
    path = os.path.join(tmp, f'random_{SEED}_{idx:04d}.yaml')
    with open(path, 'w') as f:
        f.write(f'khz_scene: 1\nname: random_{idx}\nrate_hz: 1000\nintegrator: rk4\nground: {{height: 0}}\n')
        if JOINT: f.write('contact: {joint_friction: true}\n')
        f.write('objects:\n')
        f.write('\n'.join(yaml_obj(i, b) for i, b in enumerate(bodies)) + '\n')
    out, con = path + '.csv', path + '.contacts.csv'
    steps = int(round(T * 1000))
    r = subprocess.run([sim, 'run', path, '--steps', str(steps), '--out', out, '--contacts', con], capture_output=True, text=True)
    if r.returncode: return path, None, f'ERROR {r.stderr.strip()[-200:]}'
    js = json.loads(r.stdout)
    rows = list(csv.reader(open(out))); hdr = rows[0]
    data = [list(map(float, x)) for x in rows[1:]]
    moving = [(i, b) for i, b in enumerate(bodies) if not b['fixed']]
    cols = {i: (hdr.index(f'q:b{i}[0]'), hdr.index(f'qd:b{i}[0]')) for i, _ in moving}
    def energy(row):
        e = 0.0
        for i, b in moving:
            qi, vi = cols[i]; I = inertia(b)
            e += 0.5 * b['mass'] * sum(row[vi + k] ** 2 for k in range(3)) + 0.5 * sum(I[k] * row[vi + 3 + k] ** 2 for k in range(3))
            e += b['mass'] * G * row[qi + 2]
        return e
    def kinetic(row):
        return sum(0.5 * b['mass'] * sum(row[cols[i][1] + k] ** 2 for k in range(3)) +
                   0.5 * sum(inertia(b)[k] * row[cols[i][1] + 3 + k] ** 2 for k in range(3)) for i, b in moving)
    def safe(f, row):
        try: return f(row)
        except OverflowError: return float('inf')
    e0 = energy(data[0]); es = [safe(energy, r) for r in data]
    finite = all(math.isfinite(e) for e in es)
    emax = max(es) if finite else float('inf')
    k = max(range(len(es)), key=lambda j: es[j]) if finite else -1
    tol = 1e-4 + sum(b['mass'] for _, b in moving) * G * 5e-4
    gain = emax - e0
    flags = []
    if not finite or js['warnings']['badstate'] > 0 or gain > tol:
        flags.append(f'gain {gain:.3g} J at {k / 1000:.3f} s (tol {tol:.2g}), badstate {js["warnings"]["badstate"]}')
    # sink: lowest point below the ground; order reversed in a column
    worst = 0.0  # below the ground beyond the step's travel (a landing is found up to that deep)
    for row in data[::5] + [data[-1]]:
        for i, b in moving:
            qi, vi = cols[i]
            R = quat_matrix(*row[qi + 3:qi + 7])
            w = row[vi + 3:vi + 6]; lo = support(b, R, [0, 0, -1])
            wl = mv(R, w)  # the lowest point's speed: v + w x r
            vz = row[vi + 2] + wl[0] * lo[1] - wl[1] * lo[0]
            worst = max(worst, -(row[qi + 2] + lo[2]) - abs(vz) * 1e-3)
    passed = []
    if kind in ('stack', 'offset', 'squeezed'):
        for (i, a), (j, b) in zip(moving, moving[1:]):
            qa, qb = cols[i][0], cols[j][0]
            za, zb = data[-1][qa + 2], data[-1][qb + 2]
            dxy = math.hypot(data[-1][qa] - data[-1][qb], data[-1][qa + 1] - data[-1][qb + 1])
            if zb < za and dxy < 0.5 * min(half_width(a), half_width(b)): passed.append(f'b{j} below b{i}')
    if worst > 2e-3 or passed: flags.append(f'sink {1e3 * worst:.3g} mm below the ground {" ".join(passed)}')
    # deep: contact points in the last 0.2 s, when at rest
    deepest, last = 0.0, steps - 200
    with open(con) as f:
        rd = csv.reader(f); h = next(rd); si, di = h.index('step'), h.index('depth')
        for row in rd:
            if int(row[si]) >= last: deepest = max(deepest, float(row[di]))
    ke_end = safe(kinetic, data[-1]) if finite else float('inf')
    mtot = sum(b['mass'] for _, b in moving)
    rest = ke_end <= 1e-3 * mtot
    if rest and deepest > 1e-3: flags.append(f'deep {1e3 * deepest:.3g} mm at rest')
    for p in (out, con): os.remove(p)
    desc = '; '.join(f'{b["shape"]} {"x".join(f"{2 * x * 100:.3g}" for x in b["size"])} cm {b["mass"]:.3g} kg' + (' fixed' if b['fixed'] else '') for b in bodies)
    line = (f'{idx:4d} {kind:8s} gain {gain:9.2e} J  sunk {1e3 * worst:7.2f} mm  deepest(last 0.2 s) {1e3 * deepest:6.3f} mm  '
            f'KE end {ke_end:8.2e} J  {js["us_per_step"]:7.0f} us/step  [{desc}]')
    return path, flags, line

def squeeze():
    print(f'# bench/untuned_random.py {build} --squeeze: 10 g under two bodies of M kg, dropped 1 cm, 1 s')
    print(f'{"light":>9s} {"heavy":>9s} {"M kg":>6s} {"KE end J":>10s} {"off axis mm":>12s} {"badstate":>8s}')
    for light in ('cylinder', 'box', 'sphere', 'capsule'):
        heavy = 'cylinder' if light == 'cylinder' else 'box'
        for M in (0.1, 1, 10):
            bodies = []
            for shape, s, m in ((light, 0.04, 0.01), (heavy, 0.05, M), (heavy, 0.05, M)):
                size = {'box': [s] * 3, 'sphere': [s]}.get(shape, [s, s])
                bodies.append({'shape': shape, 'size': size, 'mass': m, 'fixed': False,
                               'rpy': [math.pi / 2, 0, 0] if shape == 'capsule' else [0, 0, 0]})
            z = 0.01
            for b in bodies:
                z = place_on(b, rpy_matrix(*b['rpy']), z)
            path = os.path.join(tmp, f'squeeze_{light}_{M}.yaml')
            with open(path, 'w') as f:
                f.write('khz_scene: 1\nname: squeeze\nrate_hz: 1000\nintegrator: rk4\nground: {height: 0}\nobjects:\n')
                f.write('\n'.join(yaml_obj(i, b) for i, b in enumerate(bodies)) + '\n')
            out = path + '.csv'
            r = subprocess.run([sim, 'run', path, '--steps', '1000', '--out', out], capture_output=True, text=True)
            if r.returncode: print('ERROR', path, r.stderr[-200:]); continue
            js = json.loads(r.stdout)
            rows = list(csv.reader(open(out))); hdr = rows[0]; last = list(map(float, rows[-1]))
            off = max(math.hypot(last[hdr.index(f'q:b{i}[0]')], last[hdr.index(f'q:b{i}[1]')]) for i in range(3))
            ke = js['energy_end']['kinetic']
            print(f'{light:>9s} {heavy:>9s} {M:6g} {ke if ke is not None else float("nan"):10.3g} {1e3 * off:12.3g} {js["warnings"]["badstate"]:8d}', flush=True)

def main():
    if '--squeeze' in args: return squeeze()
    rng = random.Random(SEED)
    nflag = 0
    print(f'# bench/untuned_random.py {build} --n {N} --seed {SEED} --seconds {T}: scenes in {tmp}', flush=True)
    for idx in range(N):
        kind, bodies = draw_scene(rng)
        if ONLY and idx not in ONLY: continue
        path, flags, line = judge(idx, kind, bodies)
        print(line, flush=True)
        if flags is None or flags:
            nflag += 1
            print(f'FLAG {idx:4d} {os.path.basename(path)}: ' + ('; '.join(flags) if flags else 'error'), flush=True)
    print(f'# {nflag} of {N if not ONLY else len(ONLY)} scenes flagged (gain, sink or deep)')

main()
