"""test_cli_hil.py — the `khz` command on a scene with hardware-in-the-loop
sensors, drives and faults (scenes/hil_arm.yaml, docs/hil.md): `khz model`
lists them, `khz fault` sets and refuses faults, `khz status` shows the
readings and the faults."""

import unittest

from khztest import KHZ, Server, run


class KhzHil(unittest.TestCase):
    def khz(self, *args, ok=True, env=None):
        r = run([KHZ, *args], env=env)
        if ok:
            self.assertEqual(r.returncode, 0, f"khz {' '.join(args)}: {r.stderr}")
        return r

    def test_hil(self):
        """the sensors, drives and faults of scenes/hil_arm.yaml (docs/hil.md)"""
        with Server(scene="scenes/hil_arm.yaml") as srv:
            env = srv.env()
            out = self.khz("model", env=env).stdout
            self.assertIn("sensors (12; seed 7)", out)
            self.assertIn("wrist_accel      accelerometer arm/link7", out)
            self.assertIn("drives (7)", out)
            self.assertIn("fault freeze on 'enc3'", self.khz("fault", "enc3", "freeze", env=env).stdout)
            self.khz("fault", "arm/joint2", "limp", "--for", "30", env=env)
            out = self.khz("status", "--count", "1", "--interval", "0.2", env=env).stdout
            self.assertRegex(out, r"enc3 +encoder .*FAULT freeze")
            self.assertIn("drive arm/joint2: FAULT limp", out)
            self.assertRegex(out, r"box1_touch +touch +[0-9.]+")
            r = self.khz("fault", "nope", "freeze", ok=False, env=env)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no sensor or drive named 'nope'", r.stderr)
            r = self.khz("fault", "enc1", "limp", ok=False, env=env)
            self.assertIn("cannot take fault limp", r.stderr)



if __name__ == "__main__":
    unittest.main()
