"""test_describe_geoms — the model's shapes on the wire: Describe's
ModelDescription.geoms and .meshes (control.proto), filled by khz-server from
the model it loaded, against what khz's loader gives for the same file
(khz-geoms' JSON, a separate program); and `khz view` drawing a server's
scene that is not a file on the viewer's side (no --scene) from Describe.

Needs only the build and python3-websockets (no browser, no node).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
import khztest  # noqa: E402

import khz  # noqa: E402
from khz import view  # noqa: E402

OCTA_V = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
OCTA_F = [(1, 3, 5), (3, 2, 5), (2, 4, 5), (4, 1, 5), (3, 1, 6), (2, 3, 6), (4, 2, 6), (1, 4, 6)]


def loader_geometry(scene: str) -> dict:
    return view.load_geometry(None, scene)


class DescribeGeomsTest(unittest.TestCase):
    def assert_same_geoms(self, wire: dict, file: dict) -> None:
        self.assertEqual(wire["bodies"], file["bodies"])
        self.assertEqual(len(wire["geoms"]), len(file["geoms"]))
        for k, (a, b) in enumerate(zip(wire["geoms"], file["geoms"])):
            where = f"geom {k} of body '{file['bodies'][b['body']]}'"
            for key in ("body", "type", "visual", "mesh"):
                self.assertEqual(a[key], b[key], f"{where}: {key}")
            for key in ("size", "pos", "quat", "rgba"):
                # khz-geoms prints 9 significant digits; the wire carries doubles
                self.assertEqual(len(a[key]), len(b[key]), f"{where}: {key}")
                for x, y in zip(a[key], b[key]):
                    self.assertAlmostEqual(x, y, delta=1e-8 * max(1.0, abs(y)),
                                           msg=f"{where}: {key} {a[key]} vs {b[key]}")

    def test_default_scene(self):
        with khztest.Server() as s, khz.Client(s.state, s.command) as c:
            wire = view.wire_geometry(c.model)
        self.assertIsNotNone(wire, "Describe carried no geoms")
        file = loader_geometry("default")
        self.assert_same_geoms(wire, file)
        types = {g["type"] for g in wire["geoms"]}
        print(f"default scene: {len(wire['geoms'])} geoms on the wire, types {sorted(types)}")
        self.assertIn("plane", types)
        self.assertIn("box", types)
        # every body but none is drawn: each has a geom
        self.assertEqual({g["body"] for g in wire["geoms"]}, set(range(len(wire["bodies"]))))
        # the ground plane belongs to the world
        self.assertTrue(any(g["type"] == "plane" and g["body"] == 0 for g in wire["geoms"]))

    def test_mesh_scene(self):
        with tempfile.TemporaryDirectory(prefix="khz-geoms-") as d:
            with open(os.path.join(d, "octa.obj"), "w") as o:
                o.writelines([f"v {a} {b} {c}\n" for a, b, c in OCTA_V] +
                             [f"f {a} {b} {c}\n" for a, b, c in OCTA_F])
            scene = os.path.join(d, "octa.yaml")
            with open(scene, "w") as o:
                o.write("khz_scene: 1\nname: octa\nground: {height: 0}\nobjects:\n"
                        "  - {name: octa, shape: mesh, file: octa.obj, scale: [0.1, 0.2, 0.3], "
                        "mass: 1, inertia: [0.01, 0.01, 0.01, 0, 0, 0], pos: [0, 0, 0.5]}\n")
            file = loader_geometry(scene)
            with khztest.Server(scene=scene) as s, khz.Client(s.state, s.command) as c:
                wire = view.wire_geometry(c.model)
                msg = c.model.msg
        self.assert_same_geoms(wire, file)
        (mesh,) = msg.meshes
        self.assertEqual((mesh.name, mesh.nvertex, mesh.nface, mesh.omitted), ("octa", 6, 8, False))
        (fm,) = file["meshes"]
        self.assertEqual(list(mesh.faces), fm["faces"])
        self.assertEqual(len(mesh.vertices), len(fm["vertices"]))
        for x, y in zip(mesh.vertices, fm["vertices"]):
            self.assertAlmostEqual(x, y, delta=1e-6)  # floats on the wire
        self.assertEqual(list(mesh.lower), [-1.0, -1.0, -1.0])  # the bounding box, unscaled
        self.assertEqual(list(mesh.upper), [1.0, 1.0, 1.0])

    def test_view_without_the_file(self):
        """A server's scene that is not a file here: khz view draws it from
        Describe (before, it refused without --scene)."""
        import websockets
        with khztest.Server(scene="scenes/validation/v3_pile.yaml") as s:
            v = subprocess.Popen([khztest.PYTHON, "-m", "khz", "--state", s.state, "--command",
                                  s.command, "view", "--port", "0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                line = v.stdout.readline()
                self.assertIn("live 'v3_pile'", line, line or v.stderr.read())
                url = line.split()[2].replace("http://", "ws://") + "ws"

                async def model():
                    async with websockets.connect(url, max_size=None) as ws:
                        while True:
                            m = json.loads(await asyncio.wait_for(ws.recv(), 20))
                            if m["t"] == "model":
                                return m
                m = asyncio.run(model())
            finally:
                v.terminate()
                v.wait(10)
                v.stdout.close()
                v.stderr.close()
        file = loader_geometry(os.path.join(khztest.SOURCE, "scenes/validation/v3_pile.yaml"))
        self.assertEqual(m["geometry_from"], "describe")
        self.assertEqual(m["bodies"], file["bodies"])
        self.assertEqual(len(m["geoms"]), len(file["geoms"]))
        self.assertEqual([g["type"] for g in m["geoms"]], [g["type"] for g in file["geoms"]])


if __name__ == "__main__":
    unittest.main(verbosity=2)
