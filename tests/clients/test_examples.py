"""test_examples.py — every worked example in clients/examples run against
a real khz-server, checking what it shows (tracking, a bounded and settled
haptic force, commands applied at the controller's own rate), not timings.

    test_examples.py Examples.test_pd_c     (meson runs one test per example)
"""

import os
import re
import time
import unittest

import khz
from khztest import EXAMPLES, PYTHON, SOURCE, Server, run


def number(pattern: str, text: str) -> float:
    m = re.search(pattern, text)
    if not m:
        raise AssertionError(f"'{pattern}' not in the output:\n{text}")
    return float(m.group(1))


class Examples(unittest.TestCase):
    def example_timed(self, args, scene=None):
        """Runs an example that keeps the server's clock (a realtime
        controller): (result, the share of the server's periods it missed
        meanwhile, the watchdog's engagements while it ran), both by the
        server's own counters: a loaded machine's doing, not the example's."""
        with Server(scene=scene) as s:
            with khz.Client(s.state, s.command, timeout=30) as c:
                t0 = c.stats().tick
            r = run(args, env=s.env(), timeout=120)
            with khz.Client(s.state, s.command, timeout=30) as c:
                # the engagement when the example's commands stop, counted first
                end = time.monotonic() + 30
                while not c.next_state(30).has("WATCHDOG") and time.monotonic() < end:
                    pass
                t1 = c.stats().tick
            rc = s.stop()
        print(r.stdout, r.stderr, sep="")
        self.assertEqual(rc, 0, "khz-server did not stop cleanly")
        missed = t1.missed - t0.missed
        engaged = max(0, t1.watchdog_engaged - t0.watchdog_engaged - 1)
        return r, missed / max(1, t1.ticks - t0.ticks + missed), engaged

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

    def check_tracking(self, args):
        # The example answers every state with PD targets: its tracking verdict
        # (rms and final error under 0.05 rad, its exit status) holds while
        # the server keeps its 1 kHz and the example its answers. When the
        # server missed more than 2 % of its periods, or the watchdog engaged
        # (no command for 100 ms: the example starved; under the full suite at
        # load 25 it engaged three times and the rms was 0.22 rad), that is
        # the machine: the verdict is not required (said so), the report is.
        r, server_share, engaged = self.example_timed(args)
        out = r.stdout
        self.assertEqual(len(re.findall(r"segment \d", out)), 4)
        rms = number(r"rms tracking error (\S+) rad", out)
        final = number(r"final (\S+) rad", out)
        if server_share > 0.02 or engaged:
            print(f"note: the machine is too loaded for the tracking verdict (the server missed "
                  f"{100 * server_share:.1f} % of its periods, its watchdog engaged {engaged} "
                  f"times): not required")
            self.assertIn(r.returncode, (0, 1), r.stderr)
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertLess(rms, 0.05)
        self.assertLess(final, 0.05)

    def test_pd_c(self):
        self.check_tracking([os.path.join(EXAMPLES, "pd_trajectory")])

    def test_pd_python(self):
        self.check_tracking([PYTHON, os.path.join(SOURCE, "clients", "examples",
                                                  "pd_trajectory.py")])

    def test_haptic(self):
        # The verdict (the rendered force bounded, settled, the wall held) is
        # about a sampled coupling at the server's 1 kHz: when the server itself
        # missed more than 2 % of its periods (a loaded machine stalling it:
        # device inputs come late or go stale, the force jumps) settling is not
        # required, and beyond 20 % (the loop mostly stalled: samples 5 and
        # more periods apart) neither is the bound (said so); the report is.
        r, server_share, _ = self.example_timed([os.path.join(EXAMPLES, "haptic_bridge")],
                                                scene="scenes/haptic_wall.yaml")
        out = r.stdout
        self.assertRegex(out, r"result: force bounded (yes|NO)")
        if server_share <= 0.2:
            self.assertIn("force bounded yes", out)
        if server_share > 0.02:
            print(f"note: the machine is too loaded for settling (the server missed "
                  f"{100 * server_share:.1f} % of its periods): not required")
            self.assertIn(r.returncode, (0, 1), r.stderr)
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sustained oscillation no", out)
        self.assertRegex(out, r"hold .*\(settled\)")
        self.assertRegex(out, r"rest .*\(settled\)")
        if "wall: felt" in out:  # the core computes contact forces
            proxy = number(r"the proxy stopped at x = (\S+) m", out)
            force = number(r"rendering (\S+) N into the hand", out)
            self.assertLess(proxy, 0.08 + 0.01)
            self.assertGreater(force, 1.0)

    def test_own_clock(self):
        # The example's own verdict (exit status 0: 90 % of its commands
        # applied, the watchdog never engaged) holds when both clocks are
        # kept: the server's 1 kHz and the controller's 500 Hz. On a machine so
        # loaded that either skips periods (the server's missed periods, from
        # its own counters; the controller's overruns, from its report) a
        # command is superseded whenever no tick came between two of them and
        # the watchdog engages after a stall of either: that is the machine,
        # so the verdict is then not required (said so), the report still is.
        r, server_share, _ = self.example_timed([os.path.join(EXAMPLES, "own_clock"),
                                                 "--seconds", "2"])
        out = r.stdout
        self.assertIn("at 500 Hz", out)
        periods = number(r"periods\s+(\d+) at", out)
        overran = number(r"at 500 Hz: (\d+) overran", out)
        applied = number(r"result: (\S+) % of commands applied", out)
        self.assertGreater(number(r"sent -> applied\s+p50\s+(\S+)", out), 0)
        if server_share > 0.02 or overran > 0.02 * periods:
            print(f"note: the machine is too loaded for the example's verdict (the server missed "
                  f"{100 * server_share:.1f} % of its periods, the controller overran "
                  f"{overran:.0f} of {periods:.0f}): not required")
            self.assertIn(r.returncode, (0, 1), r.stderr)
            self.assertGreater(applied, 0)
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreaterEqual(applied, 90)
        self.assertIn("watchdog never engaged", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
