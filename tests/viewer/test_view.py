"""test_view — `khz view` in a real browser: Debian's chromium (headless,
software WebGL), driven by playwright-core (npm, pinned in
clients/viewer/package-lock.json) through tests/viewer/browser.mjs, against
a real khz-server on private ipc:// endpoints.

Checks: the page gets the model and states; every body of the default scene
that projects into the view has non-background pixels at its origin, and a
pick there hits a body (most of them the body itself: the rest are behind
another); pressing pause stops the sequence number (and the server says
paused); dragging box1 moves it in the next states, as the server's own
stream shows; the panel, hovering, plots, contacts, step, contact method and
reset (ViewTest); every geom type drawn (ShapesTest); the HIL panel
(HilTest); a recording's timeline through the protocol and the page's own
controls, with NaN poses (PlaybackTest, PlaybackPageTest); the Foxglove
bridge (FoxgloveTest, FoxgloveHilTest). Also: the page's files only are
served (no path escapes), a non-loopback bind without CURVE keys is refused
and with them serves, a wrong --scene is named. docs/viewer.md has the table
of issue 23's requirements and the tests that show them.

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
from khz.model import WARNINGS  # noqa: E402
from khz_msgs.v1 import command_pb2  # noqa: E402

WARN_EFFORT = WARNINGS.index("effort")

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
        # (the khz command's own options, --server-key=K and --client-keys=F, go before 'view')
        keys = [a for a in extra if a.startswith(("--server-key=", "--client-keys="))]
        extra = tuple(a for a in extra if a not in keys)
        self.proc = subprocess.Popen(
            [khztest.PYTHON, "-m", "khz", "--state", server.state, "--command", server.command,
             *keys, "view", "--port", "0", *extra],
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


class StreamWatch:
    """The server's own state stream, read beside the page by a client of the
    test's: per state its seq, sim_time, contact method and one body's
    position (what the page's requests did, seen without the page)."""

    def __init__(self, server: khztest.Server, body: str):
        import threading
        self.server, self.body = server, body
        self.rows: list[tuple] = []
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.ready.wait(30)

    def _run(self) -> None:
        with khz.Client(self.server.state, self.server.command) as c:
            b = c.model.body(self.body)
            self.ready.set()
            while not self.stop.is_set():
                try:
                    st = c.next_state(0.2).msg
                except khz.Timeout:
                    continue
                self.rows.append((st.seq, st.sim_time, st.contact_method,
                                  tuple(st.body_pose[7 * b:7 * b + 3])))

    def close(self) -> list[tuple]:
        self.stop.set()
        self.thread.join(10)
        return self.rows


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
        watch = StreamWatch(self.server, "box1")
        try:
            r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, self.viewer.url,
                                "check", shot, "box1", out, EXPECTED, str(seq), "box1", "ball"],
                               capture_output=True, text=True, timeout=600,
                               env=dict(os.environ, KHZ_SHOT_SIZE="1024x640"))
        finally:
            stream = watch.close()
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
        # ... and in the server's own stream (read beside the page)
        far = max(sum((p[k] - before[k]) ** 2 for k in range(3)) ** 0.5 for *_, p in stream)
        self.assertGreater(far, 0.05, "box1 did not move in the server's stream")

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
                # a command over the effort limits: clamped, counted in the
                # state's warnings ('effort'), which the page must show
                st = c.latest_state(5).msg
                c.command(command_pb2.Command(
                    model_generation=st.model_generation, seq=1, state_seq=st.seq,
                    tau=[1e6] * len(c.model.msg.actuators)))
                deadline = time.monotonic() + 60
                while not c.latest_state(5).msg.warnings[WARN_EFFORT]:
                    self.assertLess(time.monotonic(), deadline, "no effort warning")
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
        # the state's warnings: the clamped command's effort count, marked
        w = res["warnings"]
        print(f"warnings row: {w}")
        self.assertGreater(w["state"].get("effort", 0), 0)
        self.assertRegex(w["text"], r"(^|, )effort \d+")
        self.assertEqual(w["cls"], "bad")
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


def foxglove_decoder(channels: list[dict]):
    """decode(topic, base64 payload) with only the schema the bridge advertised."""
    import base64

    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    chans = {c["topic"]: c for c in channels}

    def decode(topic, b64):
        fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(chans[topic]["schema"]))
        pool = descriptor_pool.DescriptorPool()
        for fd in fds.file:
            pool.Add(fd)
        d = pool.FindMessageTypeByName(chans[topic]["schemaName"])
        get = getattr(message_factory, "GetMessageClass", None)
        cls = get(d) if get else message_factory.MessageFactory(pool).GetPrototype(d)
        return cls.FromString(base64.b64decode(b64))
    return decode


class FoxgloveTest(unittest.TestCase):
    """The live Foxglove bridge read by @foxglove/ws-protocol's own client."""

    def test_bridge(self):
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

        decode = foxglove_decoder(res["channels"])

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


class ControlsTest(unittest.TestCase):
    """The page against a running default-scene server: what it shows of the
    server, names and hovering, the plots, the contacts toggle and drawing,
    step, contact method and reset, each control also seen in the server's
    own stream (StreamWatch)."""

    def test_panel_and_controls(self):
        import re
        with khztest.Server() as s:
            v = Viewer(s)
            watch = StreamWatch(s, "box1")
            try:
                r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, v.url,
                                    "controls", "box1"], capture_output=True, text=True,
                                   timeout=420)
            finally:
                stream = watch.close()
                v.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        print(f"controls walk-through: phases {res['times']}")
        self.assertEqual(res["errors"], [], "the page logged errors")
        m = res["model"]
        p = res["panel"]
        print(f"panel: {p}")
        self.assertRegex(p["rate"], r"^1000 Hz, measured \d+ Hz$")
        self.assertRegex(p["lateness"], r"^-?[\d.]+ µs \(p50 -?[\d.]+ µs, p99 -?[\d.]+ µs, max -?[\d.]+ µs\)$")
        self.assertRegex(p["compute"], r"^[\d.]+ µs \(p50 ")
        self.assertRegex(p["overruns"], r"^\d+ \(\d+ missed\), \d+ states dropped$")
        self.assertRegex(p["clients"], r"^\d+ seen, \d+ messages rejected$")
        self.assertRegex(p["mode"], r"^realtime")
        # names: every body with its index, and its joint
        for i, name in enumerate(m["bodies"]):
            self.assertIn(f"{i} {name}", res["names"])
        for j in m["joints"]:
            self.assertIn(f"{m['bodies'][j['body']]} — {j['name']} ({j['type']}", res["names"])
        # hovering box1's origin names the body under it, its mass and joint
        self.assertIsNotNone(res["hover_body"], f"no hover text at box1's origin: {res['hover_at']}")
        hv = re.match(r"^(.+) \(body (\d+), ([\d.]+) kg\)(?:\njoint (.+) \((\w+)\))?$",
                      res["hover_body"])
        self.assertIsNotNone(hv, res["hover_body"])
        b = int(hv.group(2))
        self.assertEqual(hv.group(1), m["bodies"][b])
        joint = next((j for j in m["joints"] if j["body"] == b), None)
        self.assertEqual(hv.group(4), joint and joint["name"])
        # the plots: position, velocity and torque of the first joint, every sample
        pv = res["plot_values"]
        self.assertEqual((pv["q"], pv["qd"], pv["tau"]), (pv["n"], pv["n"], pv["n"]))
        for q, n in res["plot_pixels"].items():
            self.assertGreater(n, 20, f"nothing plotted for {q}")
        # step 3 from the paused state: the page's newest state is 3 ticks on,
        # and the server's stream has those three after the pause, then the
        # method test's single step (a paused server repeats its last state)
        st = res["step"]
        print(f"step: {st}")
        p0 = st["paused_at"]
        self.assertEqual(st["seq"], p0 + 3)
        self.assertIn(f"paused at state {p0 + 3}", st["reply"]["text"])
        after = sorted({r[0] for r in stream if r[0] > p0})
        self.assertEqual(after[:4], [p0 + 1, p0 + 2, p0 + 3, p0 + 4])
        # hovering a contact point: its bodies, depth (mm) and force of that state
        self.assertIsNotNone(res["contact_target"], "no contact point could be hovered")
        c = res["contact"]["c"]
        want = (f"contact {m['bodies'][int(c[10])]} – {m['bodies'][int(c[11])]}\n"
                f"depth {c[6] * 1000:.3f} mm, |F| {(c[7] ** 2 + c[8] ** 2 + c[9] ** 2) ** 0.5:.2f} N")
        print(f"hover: {res['hover_contact']!r}")
        self.assertEqual(res["hover_contact"], want)
        cd = res["contacts_drawn"]
        print(f"contacts drawn: {cd}")
        self.assertGreater(cd["n"], 0)
        self.assertEqual((cd["groups"], cd["dots"], cd["normals"]), (cd["n"],) * 3)
        self.assertGreater(cd["arrowsWanted"], 0, "no contact force to draw")
        self.assertEqual(cd["arrows"], cd["arrowsWanted"])
        self.assertEqual(cd["arrowsAlong"], cd["arrowsWanted"], "a force arrow not along its force")
        self.assertTrue(cd["text"].startswith(f"{cd['n']} points"))
        # the contact method: the next tick runs with it (the server's stream says so)
        mt = res["method"]
        self.assertGreaterEqual(len(mt["methods"]), 2, mt)
        self.assertTrue(mt["reply"]["ok"], mt)
        self.assertEqual(mt["state"], mt["other"])
        self.assertIn(f"method {mt['other']}", mt["text"])
        self.assertIn(mt["other"], [r[2] for r in stream if r[0] > st["paused_at"] + 3])
        # reset: simulated time starts again, in the page and in the stream
        rs = res["reset"]
        self.assertTrue(rs["reply"]["ok"], rs)
        self.assertGreater(res["before_reset"], 0.5)
        self.assertLess(rs["sim_time"], 0.01)
        self.assertEqual(rs["simtime_text"], f"{rs['sim_time']:.3f}")
        self.assertLess(stream[-1][1], 0.01, "the server's stream has no reset state")



OCTA_V = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
OCTA_F = [(1, 3, 5), (3, 2, 5), (2, 4, 5), (4, 1, 5), (3, 1, 6), (2, 3, 6), (4, 2, 6), (1, 4, 6)]


class ShapesTest(unittest.TestCase):
    """Every geom type in the page: a scene of a box, a sphere, a cylinder, a
    capsule and an OBJ mesh (an octahedron scaled 0.1, 0.2, 0.3) on a ground
    plane. Each geom has its three.js object of its type and size; each body
    has non-background pixels at its origin and a click there picks it; the
    ground is drawn."""

    def test_every_geom_type(self):
        with tempfile.TemporaryDirectory(prefix="khz-shapes-") as d:
            with open(os.path.join(d, "octa.obj"), "w") as o:
                o.writelines([f"v {a} {b} {c}\n" for a, b, c in OCTA_V] +
                             [f"f {a} {b} {c}\n" for a, b, c in OCTA_F])
            scene = os.path.join(d, "shapes.yaml")
            with open(scene, "w") as o:
                o.write("khz_scene: 1\nname: shapes\nground: {height: 0}\nobjects:\n"
                        "  - {name: a_box, shape: box, size: [0.06, 0.05, 0.04], mass: 1, pos: [-0.3, 0, 0.04]}\n"
                        "  - {name: a_sphere, shape: sphere, size: [0.06], mass: 1, pos: [-0.15, 0, 0.06]}\n"
                        "  - {name: a_cylinder, shape: cylinder, size: [0.05, 0.08], mass: 1, pos: [0, 0, 0.08]}\n"
                        "  - {name: a_capsule, shape: capsule, size: [0.04, 0.05], mass: 1, pos: [0.15, 0, 0.04], "
                        "rpy: [1.5707963, 0, 0]}\n"
                        "  - {name: a_mesh, shape: mesh, file: octa.obj, scale: [0.1, 0.2, 0.3], "
                        "mass: 1, inertia: [0.01, 0.01, 0.01, 0, 0, 0], pos: [0.3, 0, 0.3], fixed: true}\n")
            # (every object at rest: on the ground, the capsule on its side, the mesh welded)
            with khztest.Server(scene=scene) as s:
                v = Viewer(s)
                try:
                    r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, v.url,
                                        "shapes"], capture_output=True, text=True, timeout=240)
                finally:
                    v.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        self.assertEqual(res["errors"], [], "the page logged errors")
        bodies = res["model"]["bodies"]
        by = {bodies[g["body"]]: g for g in res["geoms"] if g and g["body"] > 0}
        print("shapes: " + "; ".join(f"{n} {g['geometry']} {g['vertices']} vertices" for n, g in by.items()))
        want = {"a_box": "BoxGeometry", "a_sphere": "SphereGeometry",
                "a_cylinder": "CylinderGeometry", "a_capsule": "CapsuleGeometry",
                "a_mesh": "BufferGeometry"}
        self.assertEqual({n: g["geometry"] for n, g in by.items()}, want)

        def extent(g):
            lo, hi = g["bbox"]
            return [round(hi[k] - lo[k], 4) for k in range(3)]
        self.assertEqual(extent(by["a_box"]), [0.12, 0.1, 0.08])
        self.assertEqual(extent(by["a_sphere"]), [0.12, 0.12, 0.12])
        self.assertEqual(extent(by["a_cylinder"]), [0.1, 0.1, 0.16])  # along the body's z
        self.assertEqual(extent(by["a_capsule"]), [0.08, 0.08, 0.18])  # with its caps
        # the mesh: the OBJ's 6 vertices and 8 triangles, scaled per axis
        self.assertEqual((by["a_mesh"]["vertices"], by["a_mesh"]["indices"]), (6, 24))
        self.assertEqual(extent(by["a_mesh"]), [0.2, 0.4, 0.6])
        # the ground plane: the world's, a tile and a grid
        (ground,) = [g for g in res["geoms"] if g and g["body"] == 0]
        self.assertEqual((ground["type"], ground["object"], ground["children"]),
                         ("plane", "Group", ["Mesh", "GridHelper"]))
        bg = res["background"]
        self.assertTrue(res["ground"]["inside"])
        self.assertGreater(max(abs(res["ground"]["rgba"][k] - bg[k]) for k in range(3)), 12,
                           "the ground is not drawn")
        for b in res["bodies"]:
            name = bodies[b["body"]]
            self.assertTrue(b["inside"], f"{name} outside the view")
            self.assertGreater(max(abs(b["rgba"][k] - bg[k]) for k in range(3)), 12,
                               f"{name}: background pixel at its origin")
            self.assertEqual(b["hit"], b["body"], f"{name}: the click at its origin picks "
                             f"{bodies[b['hit']] if b['hit'] >= 0 else 'nothing'}")


class FoxgloveHilTest(unittest.TestCase):
    """/khz/sensors on the live Foxglove bridge (scenes/hil_arm.yaml, an
    encoder dropout and a limp drive), read by @foxglove/ws-protocol's client:
    each message, paired by timestamp with the /khz/state sent at the same
    time, carries that state's readings by sensor name, their ages and faults."""

    def test_sensors(self):
        import math
        with khztest.Server(scene="scenes/hil_arm.yaml", extra=["--rate-hz", "250"]) as s:
            with khz.Client(s.state, s.command) as c:
                c.set_fault("enc2", "dropout")
                c.set_fault("arm/joint4", "limp")
                md = c.model.msg
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
        chans = {c["topic"]: c for c in res["channels"]}
        self.assertEqual(chans["/khz/sensors"]["schemaName"], "khz.mcap.SensorReadings")
        self.assertEqual(chans["/khz/sensors"]["encoding"], "protobuf")
        decode = foxglove_decoder(res["channels"])
        sn = res["topics"].get("/khz/sensors")
        self.assertIsNotNone(sn, "no /khz/sensors message")
        st = res["topics"]["/khz/state"]
        print(f"foxglove bridge, hil_arm: {sn['count']} sensor messages, {st['count']} states in 3 s")
        self.assertGreater(sn["count"], 20)
        # one /khz/sensors message per state sent, at its time (the two
        # subscriptions begin, and the client stops, a state apart at most)
        ts_st, ts_sn = [int(x) for x in st["timestamps"]], [int(x) for x in sn["timestamps"]]
        self.assertEqual(ts_sn, sorted(set(ts_sn)))
        lo, hi = max(ts_st[0], ts_sn[0]), min(ts_st[-1], ts_sn[-1])
        self.assertEqual([t for t in ts_st if lo <= t <= hi], [t for t in ts_sn if lo <= t <= hi])
        self.assertLessEqual(abs(len(ts_st) - len(ts_sn)), 2)
        states = {t: decode("/khz/state", b) for t, b in st["recent"]}
        pairs = [(states[t], decode("/khz/sensors", b)) for t, b in sn["recent"] if t in states]
        self.assertGreater(len(pairs), 5)
        names = [x.name for x in md.sensors]
        for state, rd in pairs:
            self.assertEqual(rd.seq, state.seq)
            self.assertEqual(rd.sim_time, state.sim_time)
            self.assertEqual([x.name for x in rd.sensors], names)
            tick = state.seq - state.reset_seq
            for i, (x, d) in enumerate(zip(rd.sensors, md.sensors)):
                want = list(state.sensor_values[d.value_index:d.value_index + d.dim])
                self.assertEqual(len(x.values), d.dim, x.name)
                for a, b in zip(x.values, want):
                    self.assertTrue(a == b or (math.isnan(a) and math.isnan(b)), (x.name, a, b))
                self.assertEqual(x.sampled_tick, state.sensor_sampled_tick[i])
                self.assertEqual(x.age_ticks, tick - state.sensor_sampled_tick[i])
                self.assertEqual(x.fault, state.sensor_faults[i])
            by = {x.name: x for x in rd.sensors}
            self.assertEqual(by["enc2"].fault_name, "dropout")
            self.assertTrue(all(math.isnan(a) for a in by["enc2"].values))
            self.assertEqual(by["wrist_gyro"].age_ticks, 1)  # its latency
            self.assertEqual(by["enc1"].fault_name, "none")
            self.assertFalse(math.isnan(by["enc1"].values[0]))
            drives = {d.joint: d.fault_name for d in rd.drives}
            self.assertEqual(drives["arm/joint4"], "limp")


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


class PlaybackPageTest(unittest.TestCase):
    """`khz view --play` in the browser: the page's timeline controls (scrub,
    one state forward and back, speed, play), and a recording whose box1 pose
    is NaN in some states (a blown-up body): the page gets valid JSON (null
    for the non-finite numbers: Python's json writes NaN, which the browser's
    JSON.parse refuses), does not draw box1 there and says so in its status
    line, and draws it again after."""

    def test_page_timeline_and_nan(self):
        import math
        with khztest.Server() as s:
            rec = os.path.join(s.dir, "run.khzrec")
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "--state", s.state, "--command",
                                s.command, "record", rec, "--seconds", "2"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            src = khz.recording.read(rec)
            # (at 1 kHz; a loaded machine's server skips periods: 506 states in one run)
            n = len(src.states)
            self.assertGreater(n, 100)
            # box1's pose and its free joint's q are NaN in states bad0..bad1-1,
            # its twist inf (the server itself never publishes this: it refuses
            # absurd wrenches and resets, and rolls a non-finite step back)
            bad0 = 2 * n // 5
            bad1 = bad0 + max(5, n // 10)
            b = src.model.body("box1")
            j = next(jj for jj in src.model.msg.joints if jj.body == b)
            bad = os.path.join(s.dir, "nan.khzrec")
            with khz.recording.Recorder(bad) as w:
                w.model(src.model)
                for i, st in enumerate(src.states):
                    if bad0 <= i < bad1:
                        m = st.msg.__class__()
                        m.CopyFrom(st.msg)
                        for k in range(7):
                            m.body_pose[7 * b + k] = math.nan
                        for k in range(j.nq):
                            m.q[j.q_index + k] = math.nan
                        m.body_twist[6 * b] = math.inf
                        st = khz.model.State(m, m.SerializeToString(), src.model)
                    w.state(st)
            v = subprocess.Popen([khztest.PYTHON, "-m", "khz", "view", "--port", "0", "--play",
                                  bad], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                line = v.stdout.readline()
                self.assertIn("recording 'default'", line, v.stderr.read() if not line else line)
                url = line.split()[2]
                r = subprocess.run([NODE, os.path.join(HERE, "browser.mjs"), VIEWER, url, "play",
                                    "box1", str(bad0), str(bad1)], capture_output=True, text=True,
                                   timeout=240)
            finally:
                v.terminate()
                v.wait(10)
                v.stdout.close()
                v.stderr.close()
        self.assertEqual(r.returncode, 0, r.stderr)
        res = json.loads(r.stdout)
        print(f"page timeline: {json.dumps({k: res[k] for k in ('bad', 'played')})}")
        self.assertEqual(res["errors"], [], "the page logged errors")
        seqs = [st.msg.seq for st in src.states]
        self.assertEqual(res["n"], n)
        good = bad0 - 30 if bad0 >= 30 else 0  # browser.mjs: max(0, FIRST - 30)
        self.assertEqual((res["scrubbed"]["index"], res["scrubbed"]["seq"]), (good, seqs[good]))
        self.assertEqual(res["scrubbed"]["pos"], f"{good + 1} / {n}")
        self.assertEqual((res["forward"]["index"], res["forward"]["seq"]), (good + 1, seqs[good + 1]))
        self.assertEqual(res["back"]["index"], good)
        self.assertEqual(res["speed"], 2)
        for k in ("scrubbed", "after"):
            self.assertTrue(res[k]["visible"], k)
            self.assertEqual(res[k]["invalid"], [], k)
            self.assertNotIn("not drawn", res[k]["banner"], k)
        bad_state = res["bad"]
        self.assertEqual(bad_state["index"], (bad0 + bad1) // 2)
        self.assertFalse(bad_state["visible"], "box1 drawn at a NaN pose")
        self.assertEqual(bad_state["invalid"], ["box1"])
        self.assertIn("not drawn, pose not finite: box1", bad_state["banner"])
        self.assertEqual(bad_state["banner_cls"], "bad")
        self.assertIn("not drawn, pose not finite: box1", bad_state["warnings"])
        self.assertEqual(res["after"]["index"], bad1 + 10)
        self.assertGreater(res["played"]["index"], res["played_from"] + 20)


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

    def test_non_loopback_with_curve(self):
        """A non-loopback bind follows khz-server's CURVE rule: with the
        server's key and this client's keys (a CURVE server) the page is
        served on every address; keys the server does not know are refused."""
        def keygen():
            out = subprocess.run([khztest.SERVER, "--curve-keygen"], capture_output=True,
                                 text=True).stdout
            keys = dict(line.split() for line in out.splitlines() if line.strip())
            return keys["public"], keys["secret"]
        spub, ssec = keygen()
        cpub, csec = keygen()
        opub, osec = keygen()  # a client the server was not told of
        with khztest.Server(extra=["--curve-secret-key", ssec, "--curve-clients", cpub]) as s:
            mine, other = os.path.join(s.dir, "client.keys"), os.path.join(s.dir, "other.keys")
            for path, (pub, sec) in ((mine, (cpub, csec)), (other, (opub, osec))):
                with open(path, "w") as f:
                    f.write(f"public {pub}\nsecret {sec}\n")
            # KEY=VALUE: a Z85 key may begin with '-', which argparse would
            # take for an option (one draw in 85)
            v = Viewer(s, "--bind", "0.0.0.0", f"--server-key={spub}", f"--client-keys={mine}")
            try:
                self.assertTrue(v.url.startswith("http://0.0.0.0:"), v.url)
                port = v.url.rsplit(":", 1)[1].strip("/")
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
                    self.assertEqual(r.status, 200)
                    self.assertIn(b"viewer.js", r.read())
            finally:
                v.close()
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "--state", s.state, "--command",
                                s.command, "--timeout", "2", f"--server-key={spub}",
                                f"--client-keys={other}", "view", "--port", "0", "--bind", "0.0.0.0"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("CURVE", r.stderr)


if __name__ == "__main__":
    why = missing()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main(verbosity=2)
