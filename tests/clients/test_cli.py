"""test_cli.py — the `khz` command (build/clients/khz) against a real
khz-server: status, model, the control commands, push, record / plot /
export; and its errors: no server (the endpoint tried is named), another
protocol version, unknown joint and body names, bad arguments."""

import csv
import json
import os
import shutil
import tempfile
import unittest

from khztest import KHZ, FakeServer, Server, answer_v2_reply, run


class Khz(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server().start()
        cls.env = cls.server.env()
        cls.tmp = tempfile.mkdtemp(prefix="khz-cli-")

    @classmethod
    def tearDownClass(cls):
        assert cls.server.stop() == 0
        cls.server.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def khz(self, *args, ok=True, env=None):
        r = run([KHZ, *args], env=env or self.env)
        if ok:
            self.assertEqual(r.returncode, 0, f"khz {' '.join(args)}: {r.stderr}")
        return r

    def test_status(self):
        r = self.khz("status", "--count", "2", "--interval", "0.3")
        print(r.stdout)
        for word in ("scene 'default'", "rate", "Hz measured", "lateness", "p99", "overruns",
                     "clients", "latency", "watchdog", "warnings"):
            self.assertIn(word, r.stdout)
        self.assertEqual(r.stdout.count("khz-server at"), 2)

    def test_model(self):
        r = self.khz("model")
        self.assertIn("arm/joint1", r.stdout)
        self.assertIn("revolute", r.stdout)
        self.assertIn("bodies (16)", r.stdout)
        d = json.loads(self.khz("model", "--json").stdout)
        self.assertEqual(d["na"], 7)
        self.assertEqual(len(d["actuators"]), 7)

    def test_control(self):
        self.assertRegex(self.khz("pause").stdout, r"paused at state \d+")
        self.assertRegex(self.khz("step", "3").stdout, r"stepped 3 tick\(s\): paused at state \d+")
        self.assertIn("resumed", self.khz("resume").stdout)
        self.assertRegex(self.khz("reset").stdout, r"state \d+")
        self.assertIn("mode lockstep", self.khz("mode", "lockstep").stdout)
        self.assertIn("mode realtime", self.khz("mode", "realtime").stdout)
        self.assertIn("contact method none", self.khz("method", "none").stdout)
        self.khz("method", "penalty")
        r = self.khz("method", "bogus", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("this server knows: none, penalty", r.stderr)
        self.assertIn("watchdog_ms 150", self.khz("set", "watchdog_ms", "150").stdout)
        self.assertIn("rate_hz", self.khz("settings").stdout)
        r = self.khz("set", "rate_hz", "5", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("rate_hz", r.stderr)
        r = self.khz("mode", "sideways", ok=False)
        self.assertEqual(r.returncode, 2)  # argparse: the choices are listed

    def test_push(self):
        # from the initial state: test_control switched contact off for a while,
        # long enough on a loaded machine for the ball to fall through the table
        self.khz("reset")
        r = self.khz("push", "box1", "--force", "0,0,5", "--for", "0.1")
        self.assertIn("pushing 'box1' with force (0, 0, 5) N for 0.1 s", r.stdout)
        r = self.khz("push", "ball", "--force", "1,0,0", "--at", "0.45,0.25,0.9", "--for", "0.1")
        self.assertIn("torque", r.stdout)
        r = self.khz("push", "nobody", "--force", "0,0,5", "--for", "0.1", ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("body 'nobody' is not in the model 'default'", r.stderr)
        self.assertIn("box1", r.stderr)
        r = self.khz("push", "box1", "--force", "0,5", "--for", "0.1", ok=False)
        self.assertIn("three comma-separated numbers", r.stderr)

    def test_record_plot_export(self):
        rec = os.path.join(self.tmp, "run.khzrec")
        r = self.khz("record", rec, "--seconds", "1")
        self.assertIn(f"recording {rec}:", r.stderr)
        self.assertIn("1.0 / 1 s", r.stderr)
        self.assertRegex(r.stdout, r"\d+ states, model 'default'")
        png = os.path.join(self.tmp, "run.png")
        r = self.khz("plot", rec, "joint1", "arm/joint4", "--out", png)
        self.assertIn("arm/joint1, arm/joint4", r.stdout)
        with open(png, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        r = self.khz("export", rec, "--csv")
        with open(os.path.join(self.tmp, "run.csv")) as f:
            rows = list(csv.reader(f))
        self.assertIn("q:arm/joint1", rows[0])
        self.assertIn("tau:arm/joint7", rows[0])
        self.assertIn("stats.lateness_ns", rows[0])
        self.assertIn("body_pose[0]", rows[0])
        self.assertGreater(len(rows), 100)
        seq = rows[0].index("seq")
        self.assertEqual(int(rows[2][seq]), int(rows[1][seq]) + 1)
        # an unknown joint: named, with the ones there are
        r = self.khz("plot", rec, "joint99", "--out", png, ok=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn("joint 'joint99' is not in the model 'default'", r.stderr)
        self.assertIn("arm/joint1", r.stderr)
        r = self.khz("plot", os.path.join(self.tmp, "missing.khzrec"), "joint1", "--out", png,
                     ok=False)
        self.assertIn("cannot read the recording", r.stderr)

    def test_no_server(self):
        d = tempfile.mkdtemp()
        env = dict(os.environ, KHZ_STATE_ENDPOINT=f"ipc://{d}/state",
                   KHZ_COMMAND_ENDPOINT=f"ipc://{d}/cmd")
        for args in (["status"], ["model"], ["pause"]):
            r = run([KHZ, "--timeout", "0.3", *args], env=env)
            self.assertEqual(r.returncode, 1)
            self.assertIn(f"no khz-server at ipc://{d}/cmd", r.stderr)
        r = run([KHZ, "--command", "tcp://127.0.0.1:1", "--timeout", "0.3", "model"])
        self.assertIn("no khz-server at tcp://127.0.0.1:1", r.stderr)
        print(r.stderr)
        os.rmdir(d)

    def test_other_version(self):
        with FakeServer(answer_v2_reply) as f:
            r = run([KHZ, "model"], env=f.env())
        self.assertEqual(r.returncode, 1)
        self.assertIn("protocol version mismatch", r.stderr)
        self.assertIn("speaks khz.v2, this client speaks khz.v1", r.stderr)
        print(r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
