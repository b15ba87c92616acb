"""test_python_client.py — the Python package `khz` against real khz-server
processes and fake servers: the model and lookups, numpy states, commands,
server errors, requests, CURVE, recordings; and the error paths: no server,
a restart mid-stream (reconnect and model resync), another protocol
version, malformed replies and states."""

import os
import socket
import subprocess
import tempfile
import time
import unittest

import numpy as np

import khz
import khz.recording
from khz_msgs.v1 import command_pb2, messages_pb2
from khztest import (SERVER, FakeServer, Server, answer_bad_model, answer_garbage, answer_model,
                     answer_v2_reply)


# How long a test waits for something that must happen (a state, a reply, a
# flag): a bound on a hang only. On a loaded machine (CI, ASan) states and
# replies come late, never not at all, so the tests wait for the event by its
# content (seq, flags, counters) rather than for N states or N ms.
PATIENCE = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Absent(unittest.TestCase):
    def test_ipc(self):
        d = tempfile.mkdtemp()
        with self.assertRaises(khz.ServerNotRunning) as e:
            khz.Client(f"ipc://{d}/state", f"ipc://{d}/cmd", timeout=0.3)
        msg = str(e.exception)
        print(msg)
        self.assertIn(f"ipc://{d}/cmd", msg)
        self.assertIn("does not exist", msg)
        self.assertEqual(e.exception.endpoint, f"ipc://{d}/cmd")
        os.rmdir(d)

    def test_tcp(self):
        port = free_port()
        with self.assertRaises(khz.ServerNotRunning) as e:
            khz.Client(f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{port + 1}", timeout=0.3)
        self.assertIn(f"tcp://127.0.0.1:{port + 1}", str(e.exception))
        self.assertIn("Is khz-server running", str(e.exception))

    def test_bad_endpoint(self):
        with self.assertRaises(khz.KhzError) as e:
            khz.Client("tcp://", "nonsense")
        self.assertIn("tcp://", str(e.exception))

    def test_no_connect(self):
        d = tempfile.mkdtemp()
        c = khz.Client(f"ipc://{d}/s", f"ipc://{d}/c", connect=False)
        with self.assertRaises(khz.Timeout) as e:
            c.next_state(0.1)
        self.assertIn(f"ipc://{d}/s", str(e.exception))
        c.close()
        os.rmdir(d)


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0
        cls.server.close()

    def setUp(self):
        self.c = khz.Client(self.server.state, self.server.command, timeout=PATIENCE)

    def until(self, what: str, pred, timeout: float = PATIENCE):
        """Reads states in order until pred(state); fails after timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                st = self.c.next_state(1.0)
            except khz.Timeout:
                continue
            if pred(st):
                return st
        self.fail(f"{what}: not within {timeout} s")

    def tearDown(self):
        self.c.close()

    def test_environment_endpoints(self):
        old = dict(os.environ)
        os.environ.update({"KHZ_STATE_ENDPOINT": self.server.state,
                           "KHZ_COMMAND_ENDPOINT": self.server.command})
        try:
            with khz.Client() as c:
                self.assertEqual(c.command_endpoint, self.server.command)
                self.assertEqual(c.model.na, 7)
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_model(self):
        m = self.c.model
        self.assertEqual((m.nq, m.nv, m.na), (42, 37, 7))
        self.assertEqual(m.scene, "default")
        self.assertEqual(m.actuator("arm/joint3"), 2)
        self.assertEqual(m.actuator("joint3"), 2)
        self.assertEqual(m.joint("joint2").q_index, 1)
        self.assertEqual(m.body_names[m.body("box1")], "box1")
        self.assertGreater(m.body("link3"), 0)
        np.testing.assert_array_equal(m.act_q, np.arange(7))
        self.assertTrue(np.all(m.lower < m.upper))
        with self.assertRaises(khz.UnknownName) as e:
            m.actuator("joint9")
        self.assertIn("joint9", str(e.exception))
        self.assertIn("arm/joint7", str(e.exception))
        with self.assertRaises(khz.UnknownName):
            m.proxy("proxy")

    def test_states(self):
        st = self.c.next_state()
        last = st.seq
        for _ in range(30):
            st = self.c.next_state()
            self.assertEqual(st.seq, last + 1)
            last = st.seq
        self.assertEqual(st.q.shape, (42,))
        self.assertEqual(st.qd.shape, (37,))
        self.assertEqual(st.body_pose.shape, (16, 7))
        np.testing.assert_array_equal(st.position, st.q[:7])
        self.assertFalse(st.q.flags.writeable)
        self.assertIsInstance(st.stats.ticks, int)  # any field reads through
        # latest_state skips what is queued: waits until two or more states
        # are (on a loaded machine a 50 ms nap may see fewer published)
        end = time.monotonic() + PATIENCE
        while True:
            time.sleep(0.05)
            skipped = self.c.counters["skipped"]
            newest = self.c.latest_state()
            if newest.seq > last + 1 or time.monotonic() > end:
                break
            last = newest.seq
        self.assertGreater(newest.seq, last + 1)
        self.assertGreater(self.c.counters["skipped"], skipped)
        self.assertIs(self.c.state, newest)
        n = 0
        for st in self.c.states(seconds=2.0):
            n += 1
        self.assertGreater(n, 5)
        self.assertGreaterEqual(self.c.fileno(), 0)

    def test_commands(self):
        st = self.c.latest_state()
        with self.assertRaises(ValueError):
            self.c.send_torques(np.zeros(6), st)
        seq = self.c.send_targets(st.position, kp=np.full(7, 50.0), kd=np.full(7, 5.0), state=st)
        self.assertEqual(self.c.send_torques(np.zeros(7), st), seq + 1)
        # found by command_seq, not among the next N states (a backlog of
        # older states on a loaded machine)
        self.until("the command applied", lambda st: st.command_seq == seq + 1)
        # a command the server rejects: the Error comes back
        bad = command_pb2.Command(model_generation=self.c.model.generation, seq=4242,
                                  state_seq=st.seq, tau=[0.0] * 3)
        self.c.command(bad)
        deadline = time.monotonic() + PATIENCE
        errors = []
        while not errors and time.monotonic() < deadline:
            errors = self.c.read_errors()
            time.sleep(0.01)
        self.assertTrue(errors)
        self.assertEqual(errors[0].command_seq, 4242)
        self.assertIn("3 values", errors[0].message)

    def test_requests(self):
        c = self.c
        paused_at = c.pause()
        # the stream ends with the paused state, repeated and flagged: waited
        # for by its flags (the states before it may come late), then silence
        st = self.until("the paused state", lambda st: st.has("PAUSED") and st.has("REPEATED"))
        self.assertEqual(st.seq, paused_at)
        with self.assertRaises(khz.Timeout):
            c.next_state(0.15)
        last = c.step(5)
        self.assertEqual(last, paused_at + 5)
        got = [c.next_state(PATIENCE).seq for _ in range(5)]
        self.assertEqual(got, list(range(paused_at + 1, paused_at + 6)))
        with self.assertRaises(khz.Timeout):  # exactly five
            c.next_state(0.2)
        c.resume()
        c.next_state(PATIENCE)
        c.set_setting("watchdog_ms", 250)
        self.assertEqual(float(c.get_setting("watchdog_ms")), 250)
        self.assertIn("rate_hz", c.settings())
        with self.assertRaises(khz.UnknownName) as e:
            c.set_setting("colour", "blue")
        self.assertIn("colour", str(e.exception))
        s = c.stats()
        self.assertGreaterEqual(s.tick.ticks, 5)  # the step above
        self.assertGreater(s.lateness.count, 0)
        c.apply_wrench("box1", force=(0, 0, 20), duration=0.1)
        with self.assertRaises(khz.UnknownName):
            c.apply_wrench("no_such_body", force=(0, 0, 1))
        c.clear_wrenches()
        with self.assertRaises(khz.UnknownName):
            c.set_contact_method("bogus")
        with self.assertRaises(ValueError):
            c.set_mode("sideways")
        c.set_mode("lockstep")
        c.set_mode("realtime")
        with self.assertRaises(khz.RequestRefused) as e:
            c.set_rate(5)
        self.assertEqual(e.exception.code_name, "OUT_OF_RANGE")
        seq = c.reset()
        self.assertGreater(seq, 0)
        self.assertEqual(c.counters["malformed"], 0)

    def test_recording(self):
        path = tempfile.mktemp(suffix=".khzrec")
        with khz.recording.Recorder(path) as rec:
            rec.model(self.c.model)
            for st in self.c.states(seconds=0.2, latest=False):
                rec.state(st)
            rec.stats(self.c.stats())
        r = khz.recording.read(path)
        self.assertEqual(len(r.states), rec.states)
        self.assertEqual(r.model.generation, self.c.model.generation)
        self.assertEqual(r.states[-1].raw, st.raw)  # every byte kept
        q, tau = r.joint_series("joint2")
        self.assertEqual(q.shape, (rec.states,))
        self.assertIsNotNone(r.stats)
        os.unlink(path)
        # the server's own recording format reads too: a file name in the
        # server's --record-dir (a path is refused)
        with self.assertRaises(khz.KhzError) as e:
            self.c.start_recording("/tmp/elsewhere.rec")
        self.assertIn("not a file name", str(e.exception))
        name = f"server-{os.getpid()}.rec"
        spath = os.path.join(self.server.dir, name)
        self.c.start_recording(name)
        first = self.c.latest_state().seq
        while self.c.next_state(5.0).seq < first + 40:  # 40 states published, however slowly
            pass
        self.c.stop_recording()
        s = khz.recording.read(spath)
        self.assertGreater(len(s.states), 20)
        self.assertIsNone(s.model)
        self.assertEqual(s.joint_series("q1")[0].shape, (len(s.states),))
        with self.assertRaises(khz.UnknownName):
            s.joint_series("joint2")
        os.unlink(spath)


class Restart(unittest.TestCase):
    def test_restart_resyncs(self):
        s = Server().start()
        try:
            c = khz.Client(s.state, s.command, timeout=PATIENCE)
            gen1 = c.model.generation
            c.next_state()
            self.assertFalse(c.model_changed())
            # the server goes away: no states; commands are dropped, not queued
            self.assertEqual(s.stop(), 0)
            while c.poll_state() is not None:
                pass
            with self.assertRaises(khz.Timeout):
                c.next_state(0.2)
            with self.assertRaises(khz.NotConnected) as e:
                c.send_torques(np.zeros(7))
            self.assertIn(s.command, str(e.exception))
            # another server, another scene, same endpoints: the client resyncs
            s.scene = "scenes/haptic_wall.yaml"
            s.start()
            end = time.monotonic() + PATIENCE
            while time.monotonic() < end:
                try:
                    st = c.next_state(0.1)
                except khz.Timeout:
                    continue
                if st.model_generation != gen1:
                    break
            self.assertNotEqual(st.model_generation, gen1)
            self.assertTrue(c.model_changed())
            self.assertFalse(c.model_changed())
            self.assertEqual((c.model.scene, c.model.nq, c.model.na), ("haptic_wall", 7, 0))
            self.assertEqual(st.model.generation, st.model_generation)
            self.assertEqual(c.counters["resyncs"], 1)
            end = time.monotonic() + PATIENCE
            while True:  # the DEALER reconnects shortly after the SUB
                try:
                    c.send_haptic("proxy", (0.01, 0, 0.3))
                    break
                except khz.NotConnected:
                    if time.monotonic() > end:
                        raise
                    time.sleep(0.02)
            end = time.monotonic() + PATIENCE
            while c.next_state(PATIENCE).has("HAPTIC_STALE"):  # until it takes the input
                if time.monotonic() > end:
                    self.fail("the new server never took the haptic input")
            self.assertEqual(c.read_errors(), [])
            c.close()
        finally:
            s.close()


class Fakes(unittest.TestCase):
    def expect(self, answer, exc, *words):
        with FakeServer(answer) as f:
            with self.assertRaises(exc) as e:
                khz.Client(f.state, f.command, timeout=1)
            msg = str(e.exception)
            print(msg)
            for w in words + (f.command,):
                self.assertIn(w, msg)

    def test_other_version(self):
        self.expect(answer_v2_reply, khz.ProtocolMismatch, "speaks khz.v2",
                    "this client speaks khz.v1")

    def test_other_revision(self):
        # a khz.v1 server of another protocol revision (Describe's protocol_version)
        self.expect(lambda body: answer_model(body, protocol_version=2), khz.ProtocolMismatch,
                    "speaks khz.v1 revision 2", "this client speaks revision 1")

    def test_other_version_error(self):
        def answer(body):
            e = messages_pb2.Error(code=1, message="could not decode a khz.v2.ClientMessage")
            return messages_pb2.ServerMessage(error=e).SerializeToString()
        self.expect(answer, khz.ProtocolMismatch, "speaks khz.v2")

    def test_malformed_reply(self):
        self.expect(answer_garbage, khz.MalformedReply, "malformed reply", "not a khz.v1")

    def test_malformed_model(self):
        self.expect(answer_bad_model, khz.MalformedReply, "malformed model description")

    def test_silent(self):
        self.expect(lambda body: None, khz.Timeout, "no reply", "Describe")

    def test_malformed_states(self):
        with FakeServer(answer_model, publish=b"\xff\xff garbage") as f:
            c = khz.Client(f.state, f.command, timeout=PATIENCE)
            # garbage is never returned as a state; waited for until some
            # arrived (the subscription and the fake's thread take a while on
            # a loaded machine)
            end = time.monotonic() + PATIENCE
            while True:
                with self.assertRaises(khz.Timeout):
                    c.next_state(0.3)
                if c.counters["malformed"] > 0 or time.monotonic() > end:
                    break
            self.assertGreater(c.counters["malformed"], 0)
            c.close()


class Ctrl(unittest.TestCase):
    """The model's own actuators (MJCF <actuator>) by name and by index."""

    def test_ctrl(self):
        with Server(scene="tests/loader/data/menagerie/kuka_iiwa_14/iiwa14.xml",
                    extra=["--mode", "lockstep", "--contact-method", "none"]) as s:
            with khz.Client(s.state, s.command) as c:
                m = c.model
                self.assertEqual(m.nu, 7)
                self.assertEqual(m.ctrl_names[1], "actuator2")
                a = m.model_actuators[1]
                self.assertEqual((a.type, a.joint, a.actuator), ("general", "joint2", 1))
                self.assertAlmostEqual(a.ctrlrange[1], 2.0944)
                self.assertTrue(a.kv_implicit)
                with self.assertRaises(ValueError):
                    c.send_ctrl(np.zeros(6))
                with self.assertRaises(khz.UnknownName):
                    c.send_ctrl({"nope": 1.0})
                # a servo to 0.3 rad on joint 2, by name: the joint gets there
                st = c.next_state()
                for _ in range(400):
                    c.send_ctrl({"actuator2": 0.3}, state=st)
                    st = c.next_state()
                self.assertAlmostEqual(st.q[1], 0.3, delta=0.03)
                # all seven by index; one outside its ctrlrange is clamped and said so
                c.send_ctrl([0, 9.0, 0, 0, 0, 0, 0], state=st)
                deadline = time.monotonic() + PATIENCE
                errors = []
                while not errors and time.monotonic() < deadline:
                    errors = c.read_errors()
                    time.sleep(0.01)
                self.assertTrue(errors)
                self.assertIn("actuator2", errors[0].message)
                self.assertIn("clamped", errors[0].message)


class Curve(unittest.TestCase):
    def test_curve(self):
        def keygen():
            out = subprocess.run([SERVER, "--curve-keygen"], capture_output=True, text=True).stdout
            keys = dict(line.split() for line in out.splitlines() if line.strip())
            return keys["public"], keys["secret"]
        spub, ssec = keygen()
        cpub, csec = keygen()
        keyfile = tempfile.mktemp()
        with open(keyfile, "w") as f:
            f.write(f"public {cpub}\nsecret {csec}\n")
        self.assertEqual(khz.read_keys(keyfile), (cpub, csec))
        os.unlink(keyfile)
        with Server(extra=["--curve-secret-key", ssec, "--curve-clients", cpub]) as s:
            with khz.Client(s.state, s.command, server_key=spub, public_key=cpub,
                            secret_key=csec) as c:
                self.assertEqual(c.model.na, 7)
                c.next_state()
            with self.assertRaises(khz.ServerNotRunning) as e:
                khz.Client(s.state, s.command, timeout=0.3)
            self.assertIn("CURVE", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
