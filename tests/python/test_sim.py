"""test_sim.py — khz.sim (libkhz.so through ctypes) and khz.gym: the views
are the C buffers, torques written through them act, the contact figures
agree with the physics (a resting box carries its weight), state save /
restore / hash repeat bit for bit and agree with khz-sim's C loop, bad input
is named, and the Gymnasium-style wrapper is deterministic per seed."""

import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import khz.gym
import khz.sim
from khz.sim import Sim, SimError

BUILD = os.environ.get("KHZ_BUILD_ROOT", "build")
HUMANOID = "/usr/share/mujoco/model/humanoid/humanoid.xml"

BOX = """khz_scene: 1
name: box_rest
rate_hz: 1000
gravity: [0, 0, -9.81]
ground: {height: 0}
objects:
  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 2, pos: [0, 0, 0.1]}
"""


def box_scene(tmp):
    path = os.path.join(tmp, "box.yaml")
    with open(path, "w") as f:
        f.write(BOX)
    return path


class SimTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="khz-sim-test-")
        cls.box = box_scene(cls.tmp)

    def test_views_are_the_c_buffers(self):
        with Sim(HUMANOID, quiet=True) as s:
            self.assertEqual((s.nq, s.nv), (28, 27))
            addr = {n: getattr(s, n).ctypes.data for n in ("q", "qd", "tau", "xpos", "xrot")}
            for n in ("q", "qd", "tau", "xpos"):
                self.assertFalse(getattr(s, n).flags.owndata, n)
            before = s.q.copy()
            s.step(10)
            self.assertTrue(np.any(s.q != before), "the view did not follow the steps")
            for n, a in addr.items():
                self.assertEqual(getattr(s, n).ctypes.data, a, n)
            # the torso's pose row: the floating base's position is q[0:3]
            torso = s.body("torso")
            np.testing.assert_allclose(s.xpos[torso], s.q[:3], atol=1e-12)
            quat = s.body_quat()[torso]
            self.assertLess(min(np.abs(quat - s.q[3:7]).max(), np.abs(quat + s.q[3:7]).max()), 1e-9)

    def test_torques_act_and_are_clamped(self):
        with Sim(HUMANOID, quiet=True) as a, Sim(HUMANOID, quiet=True) as b:
            qi, vi = a.joint("abdomen_y")
            b.tau[vi] = 5.0
            a.step(50)
            b.step(50)
            self.assertGreater(abs(b.q[qi] - a.q[qi]), 1e-6, "a torque written into tau changed nothing")
            eff = b.dof_effort[vi]
            if eff > 0:
                b.tau[vi] = 10 * eff
                b.step(1)
                self.assertEqual(b.tau_applied[vi], eff)
                self.assertGreater(b.warnings["effort"], 0)

    def test_actuator_controls(self):
        """A model's own actuators: MuJoCo's ctrl (zero at the start: the servos
        pull to 0), set by name all or nothing, applied beside tau, reset."""
        ranges = "tests/loader/data/mjcf_actuator_ranges.xml"
        with Sim(ranges, quiet=True) as a, Sim(ranges, quiet=True) as b:
            self.assertEqual(a.actuators, ["hinge_motor", "hinge_servo", "slide_vel", "slide_servo"])
            self.assertEqual(a.ctrl["hinge_servo"], 0.0)
            b.set_ctrl({"hinge_servo": 0.5, "slide_vel": -0.25})
            a.step(100)
            b.step(100)
            self.assertGreater(abs(b.q[0] - a.q[0]), 1e-3, "a control changed nothing")
            with self.assertRaisesRegex(SimError, "'nope' is not one of the model's 4 actuators"):
                b.set_ctrl({"hinge_motor": 0.3, "nope": 1})
            self.assertEqual(b.ctrl["hinge_motor"], 0.0)  # all or nothing
            self.assertEqual(b.tau[0], 0.0)  # the caller's tau is left as written
            b.reset()
            self.assertEqual(b.ctrl["hinge_servo"], 0.0)

    def test_resting_box_contact(self):
        with Sim(self.box) as s:
            s.step(1000)
            self.assertGreater(len(s.contacts), 0)
            c = s.contacts[0]
            self.assertEqual({s.body_names[b] for b in c["body"]}, {"world", "box"})
            pts = s.contact_points[c["point_adr"]:c["point_adr"] + c["npoint"]]
            depth, force = s.contact_figures()
            self.assertEqual(depth, pts["depth"].max())
            # the box rests: its pair carries its weight (2 kg * 9.81)
            self.assertAlmostEqual(force, 2 * 9.81, delta=0.02 * 2 * 9.81)
            fn = float(np.sum(pts["force"] @ c["normal"]))
            self.assertAlmostEqual(fn, force, places=9)
            self.assertLess(depth, 1e-3)

    def test_light_box_under_heavy_contact(self):
        # a 50 g box under a 20 kg box: the ground pair carries 20.05 kg, most
        # of it through the implicit part, which each point's force already
        # holds (contact_figures added force_implicit again: 391 N)
        path = os.path.join(self.tmp, "column.yaml")
        with open(path, "w") as f:
            f.write(BOX.replace("box_rest", "column").replace(
                "  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 2, pos: [0, 0, 0.1]}",
                "  - {name: light, shape: box, size: [0.05, 0.05, 0.05], mass: 0.05, pos: [0, 0, 0.0501]}\n"
                "  - {name: heavy, shape: box, size: [0.05, 0.05, 0.05], mass: 20, pos: [0, 0, 0.1503]}"))
        with Sim(path) as s:
            s.step(1000)
            ground = [c for c in s.contacts if 0 in c["body"]]
            self.assertEqual(len(ground), 1)
            c = ground[0]
            pts = s.contact_points[c["point_adr"]:c["point_adr"] + c["npoint"]]
            self.assertGreater(float(np.sum(pts["force_implicit"])), 0.5 * 20.05 * 9.81)
            self.assertAlmostEqual(float(np.sum(pts["force"] @ c["normal"])), 20.05 * 9.81,
                                   delta=0.01 * 20.05 * 9.81)
            self.assertAlmostEqual(s.contact_figures()[1], 20.05 * 9.81, delta=0.01 * 20.05 * 9.81)

    def test_load_warnings_kept(self):
        with Sim(HUMANOID, quiet=True) as s:
            self.assertTrue(any("<texture>" in w for w in s.load_warnings), s.load_warnings)

    def test_save_restore_hash_and_the_c_loop(self):
        with Sim(HUMANOID, quiet=True) as s:
            saved, h0 = s.save(), s.hash()
            s.step(300)
            h300 = s.hash()
            s.restore(saved)
            self.assertEqual(s.hash(), h0)
            for _ in range(300):
                s.step()
            self.assertEqual(s.hash(), h300, "1 step per call differs from 300 in one")
            with self.assertRaises(SimError):
                s.restore(saved[:-1])
        out = subprocess.run([os.path.join(BUILD, "tools", "khz-sim"), "run", HUMANOID, "--steps",
                              "300"], capture_output=True, text=True, check=True).stdout
        self.assertEqual(json.loads(out)["state_hash"], f"{h300:016x}", "khz-sim's C loop")

    def test_method_switch_and_errors(self):
        with Sim(self.box) as s:
            self.assertEqual(s.method, "penalty")
            s.method = "deepest"
            self.assertEqual(s.method, "deepest")
            with self.assertRaisesRegex(SimError, "'bogus'"):
                s.method = "bogus"
            with self.assertRaisesRegex(SimError, "no body named 'nobody'"):
                s.body("nobody")
        with self.assertRaisesRegex(SimError, "nonexistent.xml"):
            Sim(os.path.join(self.tmp, "nonexistent.xml"))
        with self.assertRaisesRegex(SimError, "no body named 'wheel'"):
            Sim(self.box, mass_scale={"wheel": 2})

    def test_parameters(self):
        with Sim(self.box, mass_scale=3.0, friction=0.3) as s:
            self.assertAlmostEqual(s.body_mass[s.body("box")], 6.0)
            s.step(1000)
            self.assertAlmostEqual(s.contact_figures()[1], 6 * 9.81, delta=0.02 * 6 * 9.81)
            self.assertEqual(float(s.contacts[0]["mu"]), 0.3)

    def test_gym(self):
        env = khz.gym.Env(HUMANOID, frame_skip=5, max_steps=20, init_noise=0.05, quiet=True)
        self.assertEqual(env.observation_space.shape, (55,))
        self.assertEqual(env.action_space.shape, (21,))
        runs = []
        for _ in range(2):
            obs, info = env.reset(seed=7)
            env.action_space.seed(3)
            traj = [obs]
            for k in range(20):
                obs, r, term, trunc, info = env.step(env.action_space.sample())
                traj.append(obs)
                self.assertFalse(term)
                self.assertEqual(trunc, k == 19)
                self.assertLessEqual(r, 0.0)
            runs.append(np.array(traj))
        np.testing.assert_array_equal(runs[0], runs[1])
        self.assertAlmostEqual(env.sim.time, 20 * 5 * env.sim.timestep)
        other, _ = env.reset(seed=8)
        self.assertFalse(np.array_equal(other, runs[0][0]))
        env.close()


if __name__ == "__main__":
    unittest.main()
