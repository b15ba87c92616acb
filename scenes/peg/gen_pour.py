#!/usr/bin/env python3
"""Generates the PEG pouring scenes (Williams, Lu & Trinkle 2016, sec. 6,
'box of polyhedra'): convex polyhedra dropped one by one into an open box
built of five boxes (docs/peg.md). Writes scenes/peg/meshes/polyK.obj (convex
prisms, pyramids and bipyramids of random proportions, each centred on its
centre of mass) and scenes/peg/pour.yaml. The inertia of each mesh is exact
for the uniform solid (signed tetrahedra from the origin).

    python3 scenes/peg/gen_pour.py [--seed S] [--count N]
"""
import argparse
import math
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))


def prism(n, r, hz, twist):
    v = [(r * math.cos(2 * math.pi * k / n + twist), r * math.sin(2 * math.pi * k / n + twist), z)
         for z in (-hz, hz) for k in range(n)]
    f = [(0, k + 1, k) for k in range(1, n - 1)][::1]
    f = [(0, k + 1, k) for k in range(1, n - 1)]            # bottom, seen from below
    f += [(n, n + k, n + k + 1) for k in range(1, n - 1)]    # top
    for k in range(n):
        a, b = k, (k + 1) % n
        f += [(a, b, n + b), (a, n + b, n + a)]
    return v, f


def bipyramid(n, r, h0, h1):
    v = [(r * math.cos(2 * math.pi * k / n), r * math.sin(2 * math.pi * k / n), 0) for k in range(n)]
    v += [(0, 0, h1), (0, 0, -h0)]
    f = []
    for k in range(n):
        a, b = k, (k + 1) % n
        f.append((a, b, n))
        if h0 > 0:
            f.append((b, a, n + 1))
    if h0 <= 0:  # a pyramid: the base polygon
        v.pop()
        f += [(0, k + 1, k) for k in range(1, n - 1)]
    return v, f


def mass_properties(v, f):
    """volume, centroid and the inertia per unit density about the origin"""
    vol, c = 0.0, [0.0, 0.0, 0.0]
    C = [[0.0] * 3 for _ in range(3)]  # second moments
    for (i, j, k) in f:
        a, b, d = v[i], v[j], v[k]
        det = (a[0] * (b[1] * d[2] - b[2] * d[1]) - a[1] * (b[0] * d[2] - b[2] * d[0]) +
               a[2] * (b[0] * d[1] - b[1] * d[0]))
        vol += det / 6
        for x in range(3):
            c[x] += det / 24 * (a[x] + b[x] + d[x])
            for y in range(3):
                C[x][y] += det / 120 * (a[x] * a[y] + b[x] * b[y] + d[x] * d[y] +
                                         (a[x] + b[x] + d[x]) * (a[y] + b[y] + d[y]))
    return vol, [x / vol for x in c], C


def make(rng, kind):
    s = rng.uniform(0.035, 0.06)
    if kind == 0:
        v, f = prism(rng.choice([3, 4, 5, 6]), s, s * rng.uniform(0.5, 1.2), rng.uniform(0, 1))
    elif kind == 1:
        v, f = bipyramid(rng.choice([3, 4, 5]), s, 0.0, s * rng.uniform(1.0, 1.8))
    else:
        v, f = bipyramid(rng.choice([4, 5, 6]), s, s * rng.uniform(0.7, 1.3), s * rng.uniform(0.7, 1.3))
    sx, sy = rng.uniform(0.8, 1.25), rng.uniform(0.8, 1.25)
    v = [(x * sx, y * sy, z) for (x, y, z) in v]
    vol, c, _ = mass_properties(v, f)
    if vol < 0:
        f = [(i, k, j) for (i, j, k) in f]
        vol, c, _ = mass_properties(v, f)
    v = [(x - c[0], y - c[1], z - c[2]) for (x, y, z) in v]
    vol, _, C = mass_properties(v, f)
    return v, f, vol, C


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--count', type=int, default=6)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(os.path.join(HERE, 'meshes'), exist_ok=True)
    lines = ['# The PEG paper\'s box of polyhedra (Williams, Lu & Trinkle 2016, sec. 6), generated',
             '# by scenes/peg/gen_pour.py --seed %d --count %d: convex polyhedra and boxes dropped' % (a.seed, a.count),
             '# one after another (each starts high above the box and falls in turn) into an open',
             '# box of five fixed boxes (inside 0.3 x 0.3 m, walls 0.15 m high). bench/peg_figures',
             '# runs it at step sizes 1e-3 .. 2.5e-2 with PEG and the standard model.',
             'khz_scene: 1', 'name: peg_pour', 'rate_hz: 1000', 'gravity: [0, 0, -9.81]',
             'contact: {method: peg, mu: 0.3}', 'objects:',
             '  - {name: floor, shape: box, size: [0.2, 0.2, 0.025], mass: 10, pos: [0, 0, -0.025], fixed: true}',
             '  - {name: wall_xp, shape: box, size: [0.025, 0.2, 0.075], mass: 10, pos: [0.175, 0, 0.075], fixed: true}',
             '  - {name: wall_xn, shape: box, size: [0.025, 0.2, 0.075], mass: 10, pos: [-0.175, 0, 0.075], fixed: true}',
             '  - {name: wall_yp, shape: box, size: [0.15, 0.025, 0.075], mass: 10, pos: [0, 0.175, 0.075], fixed: true}',
             '  - {name: wall_yn, shape: box, size: [0.15, 0.025, 0.075], mass: 10, pos: [0, -0.175, 0.075], fixed: true}']
    for k in range(a.count):
        px, py = rng.uniform(-0.06, 0.06), rng.uniform(-0.06, 0.06)
        pz = 0.25 + 0.25 * k
        rpy = [rng.uniform(-math.pi, math.pi) for _ in range(3)]
        dens = 500.0
        if k % 3 == 2:
            hx, hy, hz = (rng.uniform(0.025, 0.045) for _ in range(3))
            m = dens * 8 * hx * hy * hz
            lines.append('  - {name: p%d, shape: box, size: [%.4f, %.4f, %.4f], mass: %.5g, pos: [%.4f, %.4f, %.4f],'
                         ' rpy: [%.4f, %.4f, %.4f]}' % (k, hx, hy, hz, m, px, py, pz, *rpy))
            continue
        v, f, vol, C = make(rng, k % 3 if k % 3 < 2 else 2)
        name = 'poly%d.obj' % k
        with open(os.path.join(HERE, 'meshes', name), 'w') as fo:
            fo.write('# convex polyhedron %d of gen_pour.py --seed %d\n' % (k, a.seed))
            for p in v:
                fo.write('v %.6f %.6f %.6f\n' % p)
            for t in f:
                fo.write('f %d %d %d\n' % (t[0] + 1, t[1] + 1, t[2] + 1))
        m = dens * vol
        tr = C[0][0] + C[1][1] + C[2][2]
        I = [dens * (tr - C[i][i]) for i in range(3)] + [-dens * C[0][1], -dens * C[0][2], -dens * C[1][2]]
        lines.append('  - {name: p%d, shape: mesh, file: meshes/%s, mass: %.5g, inertia: [%s], pos: [%.4f, %.4f, %.4f],'
                     ' rpy: [%.4f, %.4f, %.4f]}' % (k, name, m, ', '.join('%.4g' % x for x in I), px, py, pz, *rpy))
    with open(os.path.join(HERE, 'pour.yaml'), 'w') as fo:
        fo.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
