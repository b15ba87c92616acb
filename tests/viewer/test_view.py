"""test_view — `khz view` in a real browser: Debian's chromium (headless,
software WebGL), driven by playwright-core (npm, pinned in
clients/viewer/package-lock.json) through tests/viewer/browser.mjs, against
a real khz-server on private ipc:// endpoints.

Checks: the page gets the model and states; every body of the default scene
that projects into the view has non-background pixels at its origin, and a
pick there hits a body (most of them the body itself: the rest are behind
another); pressing pause stops the sequence number (and the server says
paused); dragging box1 moves it in the next states, as the server's own
stream shows. Also: the page's files only are served (no path escapes), a
non-loopback bind without CURVE keys is refused, a wrong --scene is named.

Skips (exit 77) only when chromium or clients/viewer/node_modules is absent:
scripts/bootstrap.sh installs both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
import khztest  # noqa: E402

import khz  # noqa: E402
import khz.recording  # noqa: E402

VIEWER = os.path.join(khztest.SOURCE, "clients", "viewer")
CHROMIUM = os.environ.get("KHZ_CHROMIUM", "/usr/bin/chromium")
NODE = shutil.which("node")
HERE = os.path.dirname(os.path.abspath(__file__))


def missing() -> str | None:
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is absent (apt-get install chromium; scripts/bootstrap.sh does)"
    if not NODE:
        return "node is absent (apt-get install nodejs; scripts/bootstrap.sh does)"
    for pkg in ("three", "playwright-core", "@foxglove/ws-protocol", "ws"):
        if not os.path.isdir(os.path.join(VIEWER, "node_modules", pkg)):
            return (f"clients/viewer/node_modules/{pkg} is absent (npm ci in clients/viewer; "
                    "scripts/bootstrap.sh does)")
    return None


class Viewer:
    """`khz view` on a free port against a server; .url once it serves."""

    def __init__(self, server: khztest.Server, *extra: str):
        self.proc = subprocess.Popen(
            [khztest.PYTHON, "-m", "khz", "--state", server.state, "--command", server.command,
             "view", "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.proc.kill()
            raise RuntimeError(f"khz view did not start: {line}{self.proc.stderr.read()}")
        self.url = line.split()[2]

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.proc.stdout.close()
        self.proc.stderr.close()


EXPECTED = os.path.join(HERE, "expected", "default.png")
# the comparison's tolerance (browser.mjs compare): a pixel differs when a
# channel differs by more than 48 / 255; at most 0.5 % of the pixels differ and
# no 16 x 16 tile has more than a quarter of its pixels differing
MAX_DIFFERING = 0.005
MAX_TILE = 0.25


class ViewTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # paused from the start: the screenshot is of the initial pose
        cls.server = khztest.Server(extra=["--paused", "true"]).start()
        cls.viewer = Viewer(cls.server)

    @classmethod
    def tearDownClass(cls):
        cls.viewer.close()
        cls.server.close()

    def test_browser(self):
        shot = os.path.join(self.server.dir, "default.png")
        out = os.path.join(os.environ.get("KHZ_BUILD_ROOT", tempfile.gettempdir()), "meson-logs",
                           "test_view-default")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with khz.Client(self.server.state, self.server.command) as c:
            time.sleep(0.5)  # the viewer's subscription is in place
            seq = c.reset()  # the scene's initial pose, published once; paused: no tick follows
        t0 = time.monotonic()
        r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, self.viewer.url,
                            "check", shot, "box1", out, EXPECTED, str(seq), "box1", "ball"],
                           capture_output=True, text=True, timeout=600,
                           env=dict(os.environ, KHZ_SHOT_SIZE="1024x640"))
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        print(f"browser walk-through {time.monotonic() - t0:.1f} s, phases {res['times']}")
        self.assertEqual(res["errors"], [], "the page logged errors")
        m = res["model"]
        self.assertEqual(m["scene"], "default")
        self.assertEqual(len(m["bodies"]), 16)
        self.check_expected_image(res, out)

        # drawn: non-background pixels at every body that projects into the view
        bg = res["background"]
        inside = [p for p in res["pixels"] if p["inside"] and p["body"] > 0]
        self.assertGreaterEqual(len(inside), 12, res["pixels"])
        for p in inside:
            diff = max(abs(p["rgba"][k] - bg[k]) for k in range(3))
            self.assertGreater(diff, 12, f"body {m['bodies'][p['body']]}: background pixel")
        # a click at every body's origin as drawn picks a body (drag-to-push grabs
        # what it picks). The arm's links, which move after the resume, once found
        # nothing: the origin was projected at the newest state's pose while the
        # meshes were tested where the last frame drew them (see view.project)
        missed = [m["bodies"][p["body"]] for p in inside if p["hit"] <= 0]
        self.assertEqual(missed, [], "nothing picked at these bodies")
        own = sum(p["hit"] == p["body"] for p in inside)
        self.assertGreaterEqual(own, len(inside) // 2, res["pixels"])
        with open(shot, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        # the plot holds every state of its joints (the server's 1 kHz), not
        # the page's frames (at most 60 a second). Of the states the server
        # published: the ones its loop could not hand to a starved I/O thread
        # (ASan on a loaded machine) are counted by the server itself
        # (stats.states_dropped, since it started: the run before was paused)
        # and are no states the viewer lost
        h = res["history"]
        span = h["seq1"] - h["seq0"] + 1
        published = span - min(h["server_dropped"], span)
        print(f"plot history: {h['n']} samples for seq {h['seq0']}..{h['seq1']} "
              f"({h['frames']} frames drawn; the server dropped {h['server_dropped']} states)")
        self.assertEqual(h["out_of_order"], 0)
        self.assertGreater(span, 500)
        self.assertGreaterEqual(h["n"], 0.9 * published, "states missing from the plot's history")
        self.assertGreater(h["n"], 3 * h["frames"])
        self.assertEqual(h["with_value"], h["n"])

        # pause stops the sequence number; it ran before
        a, b = res["seq_running"]
        self.assertGreater(b, a)
        a, b = res["seq_paused"]
        self.assertEqual(a, b, "the sequence number moved while paused")
        self.assertTrue(res["paused_shown"])
        self.assertIn("paused", res["mode_text"])
        self.assertEqual(res["replies"], [["resume", True], ["pause", True], ["resume", True]])
        # picking while poses newer than the last frame are in: the click at a
        # body's drawn origin picks a body (it found nothing for the arm's
        # links when the origin was projected at the undrawn pose)
        between = res["pick_between_frames"]
        self.assertGreaterEqual(len(between), 12)
        self.assertEqual([p for p in between if p["hit"] <= 0], [],
                         "nothing picked at a drawn origin while a newer pose was in")
        self.assertEqual([p for p in between if p["moved_px"] > 0.5], [],
                         "the origin followed the undrawn pose")

        # the drag hit box1 and pushed it: it moved in the page's states ...
        self.assertEqual(res["drag_pick"], res["drag_body"])
        self.assertGreater(res["pushes"], 5)
        self.assertEqual(res["push_refused"], [])
        before, after = res["drag_before"], res["drag_after"]
        moved = sum((after[k] - before[k]) ** 2 for k in range(3)) ** 0.5
        print(f"box1 dragged {moved:.3f} m: {before} -> {after}")
        self.assertGreater(moved, 0.05)
        self.assertLess(moved, 5.0, "the drag flung the body")
        # ... and in the server's own stream
        with khz.Client(self.server.state, self.server.command) as c:
            pose = c.latest_state(5).body_pose[c.model.body("box1")]
        self.assertGreater(sum((pose[k] - before[k]) ** 2 for k in range(3)) ** 0.5, 0.05)

    def check_expected_image(self, res: dict, out: str) -> None:
        """The default scene at its initial pose (the paused server, reset),
        from the page's own camera at 1024 x 640, against tests/viewer/expected/
        default.png (KHZ_UPDATE_EXPECTED=1 writes that file instead); on
        failure the actual image and the diff are in the build's meson-logs."""
        if os.environ.get("KHZ_UPDATE_EXPECTED"):
            os.makedirs(os.path.dirname(EXPECTED), exist_ok=True)
            shutil.copyfile(out + "-actual.png", EXPECTED)
            print(f"wrote {EXPECTED}")
            return
        self.assertNotIn("missing", res, f"no {EXPECTED}: run with KHZ_UPDATE_EXPECTED=1")
        cmp = res["compare"]
        print(f"screenshot vs expected: {100 * cmp['differing']:.3f} % of the pixels differ, "
              f"worst tile {100 * cmp['worst_tile']:.1f} %, largest channel difference "
              f"{cmp['max_diff']}; controls: " + "; ".join(
                  f"{k['body']} hidden {100 * k['hidden']['differing']:.2f} % / worst tile "
                  f"{100 * k['hidden']['worst_tile']:.0f} %, moved 0.1 m "
                  f"{100 * k['moved']['differing']:.2f} % / {100 * k['moved']['worst_tile']:.0f} %"
                  for k in res["controls"]))
        self.assertNotIn("expectedSize", cmp, f"image size {cmp} (see {out}-actual.png)")
        why = f"see {out}-actual.png and {out}-diff.png (red: differing pixels)"
        self.assertLessEqual(cmp["differing"], MAX_DIFFERING, why)
        self.assertLessEqual(cmp["worst_tile"], MAX_TILE, why)
        # the comparison itself: a body missing or moved by 0.1 m fails it
        self.assertEqual([k["body"] for k in res["controls"]], ["box1", "ball"])
        for k in res["controls"]:
            for what in ("hidden", "moved"):
                self.assertGreater(k[what]["worst_tile"], MAX_TILE, f"{k['body']} {what}: passed")
        self.assertLessEqual(res["restored"]["worst_tile"], MAX_TILE)

    def test_serves_only_the_page(self):
        def get(path):
            try:
                with urllib.request.urlopen(self.viewer.url + path, timeout=10) as r:
                    return r.status, r.read()
            except urllib.error.HTTPError as e:
                return e.code, b""
        status, body = get("")
        self.assertEqual(status, 200)
        self.assertIn(b"viewer.js", body)
        self.assertEqual(get("node_modules/three/build/three.module.js")[0], 200)
        for bad in ("package.json", "node_modules/playwright-core/package.json",
                    "node_modules/three/../../package.json", "%2e%2e/%2e%2e/README.md",
                    "node_modules/three/build/../../../../../README.md"):
            self.assertEqual(get(bad)[0], 404, bad)


class HilTest(unittest.TestCase):
    """The hardware-in-the-loop readings in the page (scenes/hil_arm.yaml):
    a row per sensor with its reading, age and fault, drive faults, and a
    sensor's values in the plot at every state."""

    def test_sensor_panel(self):
        # at 250 Hz: the panel and the plot are under test here, not the
        # stream's throughput (ViewTest holds that at 1 kHz); at 1 kHz a
        # sanitized server on a loaded machine lost a third of its states to
        # the viewer's subscription (65 % of the seq range plotted)
        with khztest.Server(scene="scenes/hil_arm.yaml", extra=["--rate-hz", "250"]) as s:
            with khz.Client(s.state, s.command) as c:
                c.set_fault("enc2", "dropout")
                c.set_fault("arm/joint4", "limp")
                sensors = [(sn.name, sn.dim) for sn in c.model.msg.sensors]
            v = Viewer(s)
            try:
                r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, v.url, "hil"],
                                   capture_output=True, text=True, timeout=600)
            finally:
                v.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["errors"], [], "the page logged errors")
        self.assertTrue(res["panel_shown"])
        head, *rows = res["rows"]
        self.assertEqual(head["cells"], ["", "sensor", "reading", "age", "fault"])
        by = {row["cells"][1]: row for row in rows}
        self.assertEqual([row["cells"][1] for row in rows], [n for n, _ in sensors])
        for name, dim in sensors:
            _, _, reading, age, fault = by[name]["cells"]
            self.assertEqual(len(reading.split()), dim, f"{name}: {reading}")
            if name == "enc2":  # the dropout: NaN readings, the fault named, the row marked
                self.assertEqual(reading.split(), ["NaN"] * dim)
                self.assertEqual(fault, "dropout")
                self.assertEqual(by[name]["cls"], "bad")
            else:
                self.assertNotIn("NaN", reading, name)
                self.assertEqual(fault, "–", name)
        # ages in ticks: the gyro's latency is 1 tick; the force-torque sensor is
        # sampled every 4th tick (age 0..3); encoders are read at the tick itself
        self.assertEqual(by["wrist_gyro"]["cells"][3].split()[0], "1")
        self.assertIn(int(by["box1_ft"]["cells"][3].split()[0]), range(4))
        self.assertEqual(by["enc1"]["cells"][3].split()[0], "0")
        self.assertIn("arm/joint4 limp", res["drive_faults"])
        self.assertEqual([row["plot"] for row in rows][:2], [True, False])  # enc1 plotted first
        # the plot: every state's encoder reading, within half a count of the
        # joint's exact position of the same state (16384 counts per turn)
        h = res["history"]
        span = h["seq1"] - h["seq0"] + 1
        print(f"sensor plot: {h['n']} samples for seq {h['seq0']}..{h['seq1']}, "
              f"|enc1 - q| <= {h['worst_enc1_minus_q']:.3g} rad; {res['plot_pixels']} plot pixels")
        self.assertGreater(span, 200)
        # (every state khz view reads; on a loaded machine the server's stream
        # drops some for it, more with this scene's larger states: 82 % and 89 %
        # of the seq range at 1 kHz and load 16 and 17; ViewTest holds the 90 %
        # figure)
        self.assertGreaterEqual(h["n"], 0.7 * span, "states missing from the sensor plot")
        self.assertEqual(h["both"], h["n"])
        self.assertLessEqual(h["worst_enc1_minus_q"], 3.141592653589793 / 16384 * (1 + 1e-9))
        self.assertGreater(res["plot_pixels"], 20, "no sensor series drawn")
        # the dropped-out encoder plotted: gaps, no numbers
        self.assertGreater(res["enc2"]["n"], 50)
        self.assertEqual(res["enc2"]["nulls"], res["enc2"]["n"])


class FoxgloveTest(unittest.TestCase):
    """The live Foxglove bridge read by @foxglove/ws-protocol's own client."""

    def test_bridge(self):
        import base64

        from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
        with khztest.Server(extra=["--publish-contacts", "true"]) as s:
            v = Viewer(s)
            try:
                url = v.url.replace("http://", "ws://") + "foxglove"
                r = subprocess.run([NODE, os.path.join(HERE, "foxglove_client.mjs"), VIEWER, url,
                                    "3"], capture_output=True, text=True, timeout=120)
            finally:
                v.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        self.assertNotIn("error", res)
        self.assertEqual(res["serverInfo"]["name"], "khz view")
        chans = {c["topic"]: c for c in res["channels"]}
        self.assertEqual({t: c["schemaName"] for t, c in chans.items()},
                         {"/khz/state": "khz.v1.State", "/tf": "foxglove.FrameTransforms",
                          "/scene": "foxglove.SceneUpdate", "/contacts": "foxglove.SceneUpdate"})

        def decode(topic, b64):
            fds = descriptor_pb2.FileDescriptorSet.FromString(
                base64.b64decode(chans[topic]["schema"]))
            pool = descriptor_pool.DescriptorPool()
            for fd in fds.file:
                pool.Add(fd)
            d = pool.FindMessageTypeByName(chans[topic]["schemaName"])
            get = getattr(message_factory, "GetMessageClass", None)
            cls = get(d) if get else message_factory.MessageFactory(pool).GetPrototype(d)
            return cls.FromString(base64.b64decode(b64))

        st = res["topics"]["/khz/state"]
        print(f"foxglove bridge: {st['count']} states, {res['topics']['/tf']['count']} "
              f"transforms, {res['topics']['/scene']['count']} scene, "
              f"{res['topics']['/contacts']['count']} contact updates in 3 s")
        self.assertGreater(st["count"], 20)  # the display's rate, not the server's
        self.assertLess(st["count"], 3 * 60 + 10)
        first, last = decode("/khz/state", st["first"]), decode("/khz/state", st["last"])
        self.assertGreater(last.seq, first.seq)
        self.assertEqual(int(st["timestamps"][-1]), last.wall_time_ns)
        self.assertEqual(res["topics"]["/scene"]["count"], 1)
        up = decode("/scene", res["topics"]["/scene"]["first"])
        self.assertEqual(len(up.entities), 16)  # every body of the default scene has geoms
        tf = decode("/tf", res["topics"]["/tf"]["last"])
        self.assertEqual(len(tf.transforms), 15)
        self.assertEqual(tf.transforms[10].child_frame_id, "box1")
        # timestamps: each state's at its wall_time_ns, rising; the scene's at a state's
        ts = [int(x) for x in st["timestamps"]]
        self.assertEqual(ts, sorted(ts))
        self.assertEqual(len(set(ts)), len(ts), "a state sent twice")
        self.assertIn(int(res["topics"]["/scene"]["timestamps"][0]),
                      set(ts) | {int(x) for x in res["topics"]["/tf"]["timestamps"]})
        # contacts: one update per state sent (the scene's objects rest on the
        # ground), paired by timestamp with its state: a point and an arrow per contact
        cs = res["topics"]["/contacts"]
        self.assertGreater(cs["count"], 20)
        states = {t: decode("/khz/state", b) for t, b in st["recent"]}
        pairs = [(states[t], decode("/contacts", b)) for t, b in cs["recent"] if t in states]
        self.assertGreater(len(pairs), 5)
        for state, up in pairs:
            (ent,) = up.entities
            self.assertEqual(ent.frame_id, "world")
            self.assertEqual(len(ent.spheres), len(state.contacts))
            self.assertGreater(len(state.contacts), 0)
            for sph, c in zip(ent.spheres, state.contacts):
                self.assertEqual((sph.pose.position.x, sph.pose.position.y, sph.pose.position.z),
                                 tuple(c.position))


class PlaybackTest(unittest.TestCase):
    """`khz view --play`: the timeline through the page's WebSocket protocol."""

    def test_timeline(self):
        import asyncio

        import websockets
        with khztest.Server() as s:
            rec = os.path.join(s.dir, "run.khzrec")
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "--state", s.state, "--command",
                                s.command, "record", rec, "--seconds", "1"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            seqs = [st.msg.seq for st in khz.recording.read(rec).states]
            v = subprocess.Popen([khztest.PYTHON, "-m", "khz", "view", "--port", "0", "--play",
                                  rec], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = v.stdout.readline()
                self.assertIn("recording 'default'", line, v.stderr.read() if not line else line)
                url = line.split()[2].replace("http://", "ws://") + "ws"

                async def walk():
                    async with websockets.connect(url, max_size=None) as ws:
                        async def until(pred):
                            while True:
                                m = json.loads(await asyncio.wait_for(ws.recv(), 20))
                                if pred(m):
                                    return m
                        m = await until(lambda m: m["t"] == "model")
                        self.assertEqual(m["source"], "recording")
                        tl = await until(lambda m: m["t"] == "timeline")
                        self.assertEqual(tl["n"], len(seqs))
                        await ws.send(json.dumps({"op": "stop"}))
                        await ws.send(json.dumps({"op": "seek", "index": 100}))
                        st = await until(lambda m: m["t"] == "state" and m["index"] == 100)
                        self.assertEqual(st["seq"], seqs[100])
                        await ws.send(json.dumps({"op": "frame", "delta": 1}))
                        st = await until(lambda m: m["t"] == "state" and m["index"] != 100)
                        self.assertEqual((st["index"], st["seq"]), (101, seqs[101]))
                        await ws.send(json.dumps({"op": "speed", "x": 0.5}))
                        tl = await until(lambda m: m["t"] == "timeline" and m["speed"] == 0.5)
                        await ws.send(json.dumps({"op": "play"}))
                        st = await until(lambda m: m["t"] == "state" and m["index"] > 150)
                        self.assertGreater(st["sim_time"], 0)
                        await ws.send(json.dumps({"op": "pause"}))
                        await ws.send(json.dumps({"op": "method", "name": "none"}))
                        rep = await until(lambda m: m["t"] == "reply")
                        self.assertFalse(rep["ok"])
                        self.assertIn("does not apply to a recording", rep["text"])
                asyncio.run(walk())
            finally:
                v.terminate()
                v.wait(10)
                v.stdout.close()
                v.stderr.close()


class RefusalTest(unittest.TestCase):
    def run_view(self, server, *args):
        return subprocess.run([khztest.PYTHON, "-m", "khz", "--state", server.state, "--command",
                               server.command, "view", "--port", "0", *args],
                              capture_output=True, text=True, timeout=60)

    def test_refusals(self):
        with khztest.Server() as s:
            r = self.run_view(s, "--bind", "0.0.0.0")
            self.assertEqual(r.returncode, 1)
            self.assertIn("not a loopback address", r.stderr)
            self.assertIn("CURVE", r.stderr)
            r = self.run_view(s, "--scene", os.path.join(khztest.SOURCE,
                                                          "scenes/validation/v3_pile.yaml"))
            self.assertEqual(r.returncode, 1)
            self.assertIn("is not the scene the server runs", r.stderr)
            self.assertIn("body 1 is 'wall_px' in the file, 'arm/base_link' on the server",
                          r.stderr)
            r = self.run_view(s, "--scene", "no/such/scene.yaml")
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot read the shapes of no/such/scene.yaml", r.stderr)


if __name__ == "__main__":
    why = missing()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main(verbosity=2)
