"""test_examples.py — every worked example in clients/examples run against
a real khz-server, checking what it shows (tracking, a bounded and settled
haptic force, commands applied at the controller's own rate), not timings.

    test_examples.py Examples.test_pd_c     (meson runs one test per example)
"""

import os
import re
import unittest

from khztest import EXAMPLES, PYTHON, SOURCE, Server, run


def number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if not m:
        raise AssertionError(f"'{pattern}' not in the output:\n{text}")
    return float(m.group(1))


class Examples(unittest.TestCase):
    def example(self, args, scene=None):
        with Server(scene=scene) as s:
            r = run(args, env=s.env(), timeout=60)
            rc = s.stop()
        print(r.stdout, r.stderr, sep="")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(rc, 0, "khz-server did not stop cleanly")
        return r.stdout

    def test_readme_c(self):
        out = self.example([os.path.join(EXAMPLES, "khz-example")])
        self.assertRegex(out, r"arm/joint1 at -?\d+\.\d+ rad, target -?\d+\.\d+")
        at, target = map(float, re.search(r"at (\S+) rad, target (\S+)", out).groups())
        self.assertLess(abs(at - target), 0.1)

    def check_tracking(self, out):
        rms = number(r"rms tracking error (\S+) rad", out)
        final = number(r"final (\S+) rad", out)
        self.assertLess(rms, 0.05)
        self.assertLess(final, 0.05)
        self.assertEqual(len(re.findall(r"segment \d", out)), 4)

    def test_pd_c(self):
        self.check_tracking(self.example([os.path.join(EXAMPLES, "pd_trajectory")]))

    def test_pd_python(self):
        script = os.path.join(SOURCE, "clients", "examples", "pd_trajectory.py")
        self.check_tracking(self.example([PYTHON, script]))

    def test_haptic(self):
        out = self.example([os.path.join(EXAMPLES, "haptic_bridge")],
                           scene="scenes/haptic_wall.yaml")
        self.assertIn("force bounded yes", out)
        self.assertIn("sustained oscillation no", out)
        self.assertRegex(out, r"hold .*\(settled\)")
        self.assertRegex(out, r"rest .*\(settled\)")
        if "wall: felt" in out:  # the core computes contact forces
            proxy = number(r"the proxy stopped at x = (\S+) m", out)
            force = number(r"rendering (\S+) N into the hand", out)
            self.assertLess(proxy, 0.08 + 0.01)
            self.assertGreater(force, 1.0)

    def test_own_clock(self):
        out = self.example([os.path.join(EXAMPLES, "own_clock"), "--seconds", "2"])
        applied = number(r"result: (\S+) % of commands applied", out)
        self.assertGreaterEqual(applied, 90)
        self.assertIn("watchdog never engaged", out)
        self.assertGreater(number(r"sent -> applied\s+p50\s+(\S+)", out), 0)
        self.assertIn("at 500 Hz", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
