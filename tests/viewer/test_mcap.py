"""test_mcap — `khz record --mcap` and `khz export --mcap` read back by an
independent reader: the npm registry's @mcap/core (tests/viewer/mcap_read.mjs:
its indexed reader, as Foxglove seeks, and its streaming reader), against a
real khz-server on private ipc:// endpoints.

Checks: channels, schema names and encodings, message counts (the summary's
statistics agree with what is read), timestamps (each /khz/state message is
logged at its state's wall_time_ns, in order), every state of a 10 s
recording at 1 kHz with none dropped (consecutive seq), the exported bytes
equal to the .khzrec's, and that the embedded schemas alone decode the
messages (a descriptor pool built only from the file's FileDescriptorSets).

Skips (exit 77) only when node or clients/viewer/node_modules/@mcap/core is
absent: scripts/bootstrap.sh installs both.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients"))
import khztest  # noqa: E402

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory  # noqa: E402

from khz import Client, recording  # noqa: E402

VIEWER = os.path.join(khztest.SOURCE, "clients", "viewer")
NODE = shutil.which("node")
HERE = os.path.dirname(os.path.abspath(__file__))
TOPICS = {"/khz/model": "khz.v1.ModelDescription", "/khz/state": "khz.v1.State",
          "/tf": "foxglove.FrameTransforms", "/scene": "foxglove.SceneUpdate",
          "/contacts": "foxglove.SceneUpdate"}


def missing() -> str | None:
    if not NODE:
        return "node is absent (apt-get install nodejs; scripts/bootstrap.sh does)"
    if not os.path.isdir(os.path.join(VIEWER, "node_modules", "@mcap", "core")):
        return ("clients/viewer/node_modules/@mcap/core is absent (npm ci in clients/viewer; "
                "scripts/bootstrap.sh does)")
    return None


def read_mcap(path: str, dump: str | None = None) -> dict:
    args = [NODE, os.path.join(HERE, "mcap_read.mjs"), path, VIEWER]
    if dump:
        args.append(dump)
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"@mcap/core could not read {path}:\n{r.stderr}")
    return json.loads(r.stdout)


def dumped(prefix: str, topic: str) -> list[bytes]:
    """The messages of a topic mcap_read.mjs dumped (uint32 length + bytes each)."""
    out = []
    path = prefix + topic.replace("/", "_") + ".bin"
    if not os.path.exists(path):
        return out
    with open(path, "rb") as f:
        data = f.read()
    i = 0
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        out.append(data[i + 4:i + 4 + n])
        i += 4 + n
    return out


def schema_class(info: dict, name: str):
    """The message class of `name` from the file's own schema bytes alone."""
    fds = descriptor_pb2.FileDescriptorSet()
    fds.ParseFromString(base64.b64decode(info["schema_data"][name]))
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    d = pool.FindMessageTypeByName(name)
    get = getattr(message_factory, "GetMessageClass", None)
    return get(d) if get else message_factory.MessageFactory(pool).GetPrototype(d)


def khz(server: khztest.Server, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([khztest.PYTHON, "-m", "khz", "--state", server.state, "--command",
                           server.command, *args], capture_output=True, text=True,
                          timeout=timeout)


class McapTest(unittest.TestCase):
    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="khz-mcap-")

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)

    def check_layout(self, info: dict, topics: dict = TOPICS) -> None:
        chans = {c["topic"]: c for c in info["channels"]}
        schemas = {s["id"]: s for s in info["schemas"]}
        self.assertEqual(set(chans), set(topics))
        for topic, name in topics.items():
            c = chans[topic]
            self.assertEqual(c["messageEncoding"], "protobuf")
            self.assertEqual(schemas[c["schemaId"]]["name"], name)
            self.assertEqual(schemas[c["schemaId"]]["encoding"], "protobuf")
        # the summary's counts are what the reader found
        st = info["statistics"]
        got = {c["id"]: len(info["messages"].get(c["topic"], {"log": []})["log"])
               for c in info["channels"]}
        self.assertEqual({int(k): v for k, v in st["channelMessageCounts"].items()}, got)
        self.assertEqual(st["messageCount"], sum(got.values()))
        self.assertEqual(info["stream"]["records"]["Message"], sum(got.values()))
        self.assertTrue(info["stream"]["done"])
        self.assertGreater(info["chunks"], 0)
        for topic, m in info["messages"].items():
            logs = [int(t) for t in m["log"]]
            self.assertEqual(logs, sorted(logs), f"{topic}: log times out of order")
            self.assertEqual(m["sequence"], list(range(len(logs))), topic)
            self.assertEqual(m["publish"], m["log"], topic)
        self.assertEqual(int(st["messageStartTime"]),
                         min(int(m["log"][0]) for m in info["messages"].values()))

    def test_record_10s_at_1khz(self):
        with khztest.Server() as s:
            out = os.path.join(self.work, "ten.mcap")
            t_run = time.monotonic()
            r = khz(s, "record", out, "--mcap", "--seconds", "10")
            t_run = time.monotonic() - t_run
            self.assertEqual(r.returncode, 0, r.stderr)
            print(r.stdout.strip())
            dump = os.path.join(self.work, "dump")
            info = read_mcap(out, dump)
        self.check_layout(info)
        states = dumped(dump, "/khz/state")
        n = len(states)
        print(f"{n} states in {info['chunks']} chunks, {os.path.getsize(out) / 1e6:.1f} MB")
        State = schema_class(info, "khz.v1.State")
        msgs = [State.FromString(b) for b in states]
        seqs = [m.seq for m in msgs]
        # every state from the first to the last, in order, none twice, but
        # those the server never published: its loop drops (and counts,
        # stats.states_dropped) what a starved I/O thread cannot take (an ASan
        # server on a loaded machine); those are no states the recorder lost,
        # and it reports each gap it saw
        self.assertEqual(seqs, sorted(set(seqs)))
        missing = seqs[-1] - seqs[0] + 1 - n
        server_dropped = msgs[-1].stats.states_dropped - msgs[0].stats.states_dropped
        self.assertIn(f"({missing} missed;", r.stdout)
        # that the recorder itself (Python) took every state the server
        # published is required when the server kept its clock (<= 2 % of
        # its periods missed, its own count): in the full suite at load 35 the
        # recorder, starved, lost 320 states from its subscription
        ticks = seqs[-1] - seqs[0]
        skipped = msgs[-1].stats.missed - msgs[0].stats.missed
        share = skipped / max(1, ticks + skipped)
        if missing:
            print(f"{missing} states missing, the server dropped {server_dropped}, skipped "
                  f"{100 * share:.1f} % of its periods")
        if share <= 0.02:
            self.assertLessEqual(missing, server_dropped)
        # 10 s of a 1 kHz loop: every period either ticked or was skipped and
        # counted (a loaded machine makes the server skip many)
        span = msgs[-1].sim_time - msgs[0].sim_time
        self.assertAlmostEqual(span, ticks * 1e-3, delta=1e-6)
        # a state's wall time is when it was complete: its tick's lateness and
        # compute after the period it belongs to. Under load the first state
        # recorded can come hundreds of ms after its period (a fresh-clone CI run at 3ac94d8:
        # 10397 periods counted in 10058 of wall span between the two
        # stamps), so the span is taken between the two ticks' periods
        def late(m):
            return max(0, m.stats.lateness_ns) + max(0, m.stats.compute_ns)
        periods = ((msgs[-1].wall_time_ns - late(msgs[-1])) - (msgs[0].wall_time_ns - late(msgs[0]))) \
            * 1e-9 * msgs[-1].rate_hz
        print(f"{ticks} ticks + {skipped} periods skipped by the server = {ticks + skipped} "
              f"of {periods:.0f} periods")
        self.assertGreater(n, 100)
        self.assertLessEqual(abs(ticks + skipped - periods), 0.02 * periods + 5,
                             "periods neither ticked nor skipped by the server")
        self.assertEqual([int(t) for t in info["messages"]["/khz/state"]["log"]],
                         [m.wall_time_ns for m in msgs])
        wall = (msgs[-1].wall_time_ns - msgs[0].wall_time_ns) / 1e9
        # 10 s of states, when the server kept its clock: at load 47 (a
        # fresh-clone run beside seven builds, cf5fd16) the server skipped
        # 15,900 periods, stalled 5 s at a time, and the recorder's 10 s held
        # 5.8 s of states' wall span
        if share <= 0.02:
            self.assertGreater(wall, 9.0)
        # it stops: no longer than the command ran (the states queued while it
        # subscribed and asked for the model come first: 10.66 s of states
        # under ASan at load 16, past the old 10.5 s)
        self.assertLess(wall, t_run)
        self.assertGreater(ticks + skipped, 0.9 * wall * 1000)
        # /tf at 100 Hz of log time
        ntf = len(info["messages"]["/tf"]["log"])
        # (the 10 ms slots that hold a state: a server stalled by a loaded
        # machine publishes nothing in some, and those have no /tf)
        t0 = msgs[0].wall_time_ns
        slots = len({(m.wall_time_ns - t0) // 10_000_000 for m in msgs})
        self.assertGreaterEqual(ntf, int(slots * 0.9))
        self.assertLessEqual(ntf, int(wall * 100) + 2)
        self.assertEqual(len(info["messages"]["/khz/model"]["log"]), 1)
        self.assertEqual(len(info["messages"]["/scene"]["log"]), 1)

    def test_export_v3_pile(self):
        with khztest.Server(scene="scenes/validation/v3_pile.yaml") as s:
            self.assertEqual(khz(s, "set", "publish_contacts", "true").returncode, 0)
            rec = os.path.join(self.work, "pile.khzrec")
            r = khz(s, "record", rec, "--seconds", "1.5")
            self.assertEqual(r.returncode, 0, r.stderr)
            out = os.path.join(self.work, "pile.mcap")
            scene = os.path.join(khztest.SOURCE, "scenes/validation/v3_pile.yaml")
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "export", "--mcap", rec, out,
                                "--scene", scene, "--tf-rate", "0"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            dump = os.path.join(self.work, "dump")
            info = read_mcap(out, dump)
            scene_msgs, tf_msgs, contact_msgs, model_msgs = (
                dumped(dump, t) for t in ("/scene", "/tf", "/contacts", "/khz/model"))
        self.check_layout(info)
        src = recording.read(rec)
        m = info["messages"]["/khz/state"]
        # the exported states are the recording's bytes, at their wall times
        self.assertEqual(m["sha1"], [hashlib.sha1(st.raw).hexdigest() for st in src.states])
        self.assertEqual([int(t) for t in m["log"]], [st.msg.wall_time_ns for st in src.states])
        # --tf-rate 0: a transform message per state, one transform per body but the world
        self.assertEqual(len(info["messages"]["/tf"]["log"]), len(src.states))
        bodies = list(src.model.body_names)
        FT = schema_class(info, "foxglove.FrameTransforms")
        last = FT.FromString(tf_msgs[-1])
        self.assertEqual([t.child_frame_id for t in last.transforms], bodies[1:])
        self.assertEqual({t.parent_frame_id for t in last.transforms}, {"world"})
        pose = src.states[-1].body_pose
        t = last.transforms[bodies.index("box0") - 1]
        self.assertEqual([t.translation.x, t.translation.y, t.translation.z],
                         list(pose[bodies.index("box0"), :3]))
        self.assertEqual(t.timestamp.seconds * 10**9 + t.timestamp.nanos,
                         src.states[-1].msg.wall_time_ns)
        # the scene: an entity per body with its primitives (v3: boxes, cylinders, spheres)
        SU = schema_class(info, "foxglove.SceneUpdate")
        (scene_msg,) = scene_msgs
        up = SU.FromString(scene_msg)
        ents = {e.frame_id: e for e in up.entities}
        self.assertEqual(set(ents), set(bodies))  # the world holds the ground plane
        self.assertEqual(len(ents["box0"].cubes), 1)
        self.assertAlmostEqual(ents["box0"].cubes[0].size.x, 0.14)
        self.assertEqual(len(ents["sphere2"].spheres), 1)
        self.assertAlmostEqual(ents["sphere2"].spheres[0].size.x, 2 * 0.122)
        self.assertEqual(len(ents["cylinder1"].cylinders), 1)
        self.assertTrue(all(e.frame_locked for e in up.entities))
        # contacts: the pile lands within 1.5 s, so some states carry contact points
        with_contacts = [SU.FromString(b) for b in contact_msgs]
        points = max(len(u.entities[0].spheres) for u in with_contacts)
        arrows = max(len(u.entities[0].arrows) for u in with_contacts)
        print(f"{len(src.states)} states exported; up to {points} contact points, {arrows} "
              f"force arrows per message")
        self.assertGreater(points, 0)
        self.assertGreater(arrows, 0)
        MD = schema_class(info, "khz.v1.ModelDescription")
        (md,) = [MD.FromString(b) for b in model_msgs]
        self.assertEqual(md.scene, "v3_pile")
        self.assertEqual([b.name for b in md.bodies], bodies)

    def test_hil_sensors(self):
        """/khz/sensors: every state's HIL readings by sensor name, with their
        age and faults, equal to the state's own arrays (scenes/hil_arm.yaml)."""
        with khztest.Server(scene="scenes/hil_arm.yaml") as s:
            with Client(s.state, s.command) as c:
                c.set_fault("enc2", "dropout")
                c.set_fault("arm/joint4", "limp")
                md = c.model.msg
            out = os.path.join(self.work, "hil.mcap")
            r = khz(s, "record", out, "--mcap", "--seconds", "1")
            self.assertEqual(r.returncode, 0, r.stderr)
            dump = os.path.join(self.work, "dump")
            info = read_mcap(out, dump)
        self.check_layout(info, dict(TOPICS, **{"/khz/sensors": "khz.mcap.SensorReadings"}))
        State = schema_class(info, "khz.v1.State")
        Readings = schema_class(info, "khz.mcap.SensorReadings")  # the file's schema alone
        states = [State.FromString(b) for b in dumped(dump, "/khz/state")]
        readings = [Readings.FromString(b) for b in dumped(dump, "/khz/sensors")]
        print(f"{len(readings)} sensor messages for {len(states)} states")
        # (1 s of a 1 kHz server; 94 states when a loaded machine made it skip
        # most periods: the readings of each state are under test, not their number)
        self.assertGreater(len(states), 20)
        self.assertEqual(len(readings), len(states))
        self.assertEqual(info["messages"]["/khz/sensors"]["log"],
                         info["messages"]["/khz/state"]["log"])
        names = [sn.name for sn in md.sensors]
        self.assertEqual(len(names), 12)
        for st, rd in zip(states, readings):
            self.assertEqual((rd.seq, rd.shown_seq, rd.sim_time), (st.seq, st.shown_seq, st.sim_time))
            self.assertEqual(rd.timestamp.seconds * 10**9 + rd.timestamp.nanos, st.wall_time_ns)
            self.assertEqual([x.name for x in rd.sensors], names)
            for i, (sn, x) in enumerate(zip(md.sensors, rd.sensors)):
                want = list(st.sensor_values[sn.value_index:sn.value_index + sn.dim])
                self.assertEqual(len(x.values), sn.dim)
                self.assertEqual([math.isnan(v) for v in x.values], [math.isnan(v) for v in want])
                self.assertEqual([v for v in x.values if not math.isnan(v)],
                                 [v for v in want if not math.isnan(v)])
                self.assertEqual(x.sampled_tick, st.sensor_sampled_tick[i])
                self.assertEqual(x.age_ticks, st.seq - st.reset_seq - st.sensor_sampled_tick[i])
                self.assertEqual(x.fault, st.sensor_faults[i])
            self.assertEqual([(d.joint, d.fault) for d in rd.drives],
                             [(d.joint, f) for d, f in zip(md.drives, st.drive_faults)])
        last = {x.name: x for x in readings[-1].sensors}
        self.assertEqual(last["enc2"].fault_name, "dropout")
        self.assertTrue(all(math.isnan(v) for v in last["enc2"].values))
        self.assertEqual(last["enc1"].fault_name, "none")
        self.assertEqual(last["wrist_gyro"].age_ticks, 1)  # latency_ticks: 1
        self.assertAlmostEqual(last["wrist_gyro"].age, 1e-3)
        self.assertEqual({d.joint: d.fault_name for d in readings[-1].drives}["arm/joint4"], "limp")

    def test_mesh_scene(self):
        """A mesh object's /scene entity: a triangle list of its faces, scaled."""
        from khz import mcap, view
        v = [(1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)]
        f = [(1, 3, 5), (3, 2, 5), (2, 4, 5), (4, 1, 5), (3, 1, 6), (2, 3, 6), (4, 2, 6), (1, 4, 6)]
        with open(os.path.join(self.work, "octa.obj"), "w") as o:
            o.writelines([f"v {a} {b} {c}\n" for a, b, c in v] +
                         [f"f {a} {b} {c}\n" for a, b, c in f])
        scene = os.path.join(self.work, "octa.yaml")
        with open(scene, "w") as o:
            o.write("khz_scene: 1\nname: octa\nground: {height: 0}\nobjects:\n"
                    "  - {name: octa, shape: mesh, file: octa.obj, scale: [0.1, 0.2, 0.3], "
                    "mass: 1, inertia: [0.01, 0.01, 0.01, 0, 0, 0], pos: [0, 0, 0.5]}\n")
        geo = view.load_geometry(None, scene)
        self.assertEqual(geo["bodies"], ["world", "octa"])
        self.assertEqual([(m["name"], len(m["vertices"]), len(m["faces"])) for m in geo["meshes"]],
                         [("octa", 18, 24)])
        up = mcap.scene_update(mcap.Foxglove(), geo, geo["bodies"], 5)
        ent = {e.frame_id: e for e in up.entities}
        (tri,) = ent["octa"].triangles
        self.assertEqual(len(tri.points), 24)
        top = max(tri.points, key=lambda p: p.z)
        self.assertEqual((top.x, top.y, top.z), (0.0, 0.0, 0.3))
        self.assertEqual(len(ent["world"].cubes), 1)  # the ground tile

    def test_bad_input(self):
        d = self.work
        if True:
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "export", "--mcap",
                                os.path.join(d, "none.khzrec")], capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("cannot read the recording", r.stderr)
            bad = os.path.join(d, "cut.khzrec")
            with open(bad, "wb") as f:
                f.write(recording.MAGIC + b"S" + struct.pack("<I", 100) + b"short")
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "export", "--mcap", bad],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("truncated record", r.stderr)
            r = subprocess.run([khztest.PYTHON, "-m", "khz", "export", bad],
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 1)
            self.assertIn("--csv or --mcap", r.stderr)


class FoxgloveSchemaTest(unittest.TestCase):
    """The Foxglove messages khz writes (mcap._FOXGLOVE: FrameTransforms,
    SceneUpdate and what they use) against Foxglove's own definitions, the npm
    registry's @foxglove/schemas (its generateProto's .proto text): every
    field khz writes has Foxglove's name, number, type and repetition, so that
    Foxglove's 3D panel reads /tf, /scene and /contacts as its own messages.
    khz leaves out fields it never fills (lines, texts, models of SceneEntity,
    ...); SceneEntityDeletion.type is an enum there, a uint32 here (the same
    varint on the wire)."""

    def test_fields_match_foxglove(self):
        import re

        from khz import mcap
        if not os.path.isdir(os.path.join(VIEWER, "node_modules", "@foxglove", "schemas")):
            # (only this test: the MCAP tests above need @mcap/core alone)
            self.skipTest("clients/viewer/node_modules/@foxglove/schemas is absent (npm ci in "
                          "clients/viewer; scripts/bootstrap.sh does)")
        names = list(mcap._FOXGLOVE)
        r = subprocess.run([NODE, os.path.join(HERE, "foxglove_schemas.mjs"), VIEWER, *names],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        theirs = json.loads(r.stdout)
        field = re.compile(r"^\s*(repeated\s+)?([\w.]+)\s+(\w+)\s*=\s*(\d+);", re.M)
        enums = re.compile(r"^\s*enum\s+(\w+)", re.M)
        left_out = {}
        for name, fields in mcap._FOXGLOVE.items():
            text = theirs[name]
            self.assertIn(f"message {name} {{", text)
            fox = {m.group(3): (bool(m.group(1)), m.group(2), int(m.group(4)))
                   for m in field.finditer(text)}
            nested = set(enums.findall(text))
            for fname, ftype, num in fields:
                self.assertIn(fname, fox, f"foxglove.{name} has no field {fname}")
                rep, ftype_fox, num_fox = fox[fname]
                mine = ftype.lstrip("*").lstrip(".")
                self.assertEqual((num, ftype.startswith("*")), (num_fox, rep),
                                 f"foxglove.{name}.{fname}: number / repeated")
                if ftype_fox in nested:  # an enum of Foxglove's: a varint here
                    self.assertEqual(mine, "uint32", f"foxglove.{name}.{fname}")
                else:
                    self.assertEqual(mine, ftype_fox, f"foxglove.{name}.{fname}: type")
            left_out[name] = sorted(set(fox) - {f[0] for f in fields})
        print("fields of Foxglove's left out: " +
              "; ".join(f"{n}: {', '.join(v)}" for n, v in left_out.items() if v))


if __name__ == "__main__":
    why = missing()
    if why:
        print(f"SKIP: {why}")
        sys.exit(77)
    unittest.main(verbosity=2)
