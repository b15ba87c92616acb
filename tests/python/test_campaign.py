"""test_campaign.py — `khz campaign`: a 20-run matrix (2 scenes x 5
parameter sets x 2 seeds) run serially and on a 2-worker Dask LocalCluster
gives identical tables (wall time, overruns and attempts excepted); an
interrupted campaign resumes from the rows already written; a run that fails
once is retried, one that always fails is recorded and the campaign goes on;
bad specs are named; runs.parquet holds runs.csv's table (an independent
reader, hyparquet); controller programs over the wire (test_program_controllers)."""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

from khz import campaign

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HUMANOID = "/usr/share/mujoco/model/humanoid/humanoid.xml"
#: a wire controller's start (Python, numpy, zmq) and its lockstep answers
#: wait this long at most: minutes at a load of 30 on 2 cores, not seconds
WAIT = "startup_timeout: 180, lockstep_timeout_ms: 120000"

SPEC = """
name: t20
duration: 0.3
control_every: 2
scenes: [box.yaml, {humanoid}]
parameters:
  mass_scale: [1.0, 2.0]
  friction: [0.4, 1.0]
cases:
  - {{init_noise: 0.05, push: {{body: {body}, magnitude: 20, at: 0.1, duration: 0.05}}}}
seeds: [1, 2]
controllers:
  - {{name: hold, python: "khz.campaign:pd_hold", gains: {{kp_per_effort: 1.0}}}}
"""

BOX = """khz_scene: 1
name: box_rest
rate_hz: 1000
gravity: [0, 0, -9.81]
ground: {height: 0}
objects:
  - {name: box, shape: box, size: [0.1, 0.1, 0.1], mass: 2, pos: [0, 0, 0.12]}
"""


def table(path):
    with open(path, newline="") as f:
        return campaign.comparable(list(csv.DictReader(f)))


class Campaign(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="khz-campaign-")
        with open(os.path.join(cls.tmp, "box.yaml"), "w") as f:
            f.write(BOX)
        # the seeded case pushes the body 'box', which the humanoid does not
        # have: those 2 runs fail, named, in both tables alike
        cls.spec = os.path.join(cls.tmp, "t20.yaml")
        with open(cls.spec, "w") as f:
            f.write(SPEC.format(humanoid=HUMANOID, body="box"))
        cls.log = []

    def run_campaign(self, out, **kw):
        return campaign.run_campaign(self.spec, outdir=out, plot=False, log=self.log.append, **kw)

    def test_serial_equals_dask_and_resume(self):
        ser = os.path.join(self.tmp, "serial")
        rows, t_serial = self.run_campaign(ser)
        self.assertEqual(len(rows), 20)
        status = {(r["scene"], r["status"]) for r in rows}
        # the humanoid has no body 'box' to push: those runs fail, named
        failed = [r for r in rows if r["status"] != "ok"]
        self.assertTrue(all("humanoid" in r["scene"] and "no body named 'box'" in r["error"]
                            for r in failed), status)
        self.assertEqual(len(failed), 2)
        ok = [r for r in rows if r["status"] == "ok"]
        # figures that mean something: the resting box carries about its weight
        box = [r for r in ok if r["scene"] == "box.yaml" and r["mass_scale"] and not r["push"]]
        self.assertTrue(box)
        for r in box:
            self.assertGreater(float(r["peak_contact_force"]), 0.9 * 2 * 9.81 * float(r["mass_scale"]))
            self.assertLess(float(r["max_penetration"]), 0.03)
        # the seed drives the random draws only: the same parameters without
        # noise give the same run whatever the seed, the seeded push differs
        by = {}
        for r in ok:
            by.setdefault((r["scene"], r["mass_scale"], r["friction"], r["push"]), []).append(r)
        for key, rs in by.items():
            hashes = {r["state_hash"] for r in rs}
            self.assertEqual(len(hashes), 2 if key[3] else 1, key)
        # twice the mass, twice the force: the box's landing from 2 cm
        force = {r["mass_scale"]: float(r["peak_contact_force"]) for r in box}
        self.assertAlmostEqual(force["2.0"] / force["1.0"], 2.0, delta=0.1)

        dsk = os.path.join(self.tmp, "dask")
        t0 = time.perf_counter()
        rows_d, t_dask = self.run_campaign(dsk, dask=True, workers=2)
        self.assertEqual(table(os.path.join(ser, "runs.csv")), table(os.path.join(dsk, "runs.csv")))
        print(f"serial {t_serial:.1f} s, Dask 2 workers {t_dask:.1f} s "
              f"(with the cluster's start {time.perf_counter() - t0:.1f} s)")

        # an interrupted campaign: the last 7 rows were never written
        res = os.path.join(self.tmp, "resume")
        os.makedirs(res)
        with open(os.path.join(ser, "runs.csv")) as f:
            lines = f.readlines()
        with open(os.path.join(res, "runs.csv"), "w") as f:
            f.writelines(lines[:-7])
        self.log.clear()
        rows_r, _ = self.run_campaign(res)
        self.assertIn("13 already in", self.log[0])
        self.assertEqual(sum(1 for m in self.log if m.startswith("campaign: run ")), 7)
        self.assertEqual(table(os.path.join(ser, "runs.csv")), table(os.path.join(res, "runs.csv")))

    def test_retry_and_failure(self):
        markers = os.path.join(self.tmp, "markers")
        os.makedirs(markers)
        spec = os.path.join(self.tmp, "flaky.yaml")
        with open(spec, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.05
                scenes: [box.yaml]
                path: [{HERE}]
                seeds: [1]
                controllers:
                  - {{name: flaky, python: "campaign_ctl:flaky", markers: {markers}}}
                  - {{name: broken, python: "campaign_ctl:broken"}}
                retries: 1
                """))
        rows, _ = campaign.run_campaign(spec, outdir=os.path.join(self.tmp, "flaky"), plot=False,
                                        log=self.log.append)
        by = {r["controller"]: r for r in rows}
        self.assertEqual((by["flaky"]["status"], by["flaky"]["attempts"]), ("ok", "2"))
        self.assertEqual((by["broken"]["status"], by["broken"]["attempts"]), ("failed", "2"))
        self.assertIn("ValueError: this controller never works", by["broken"]["error"])

    def test_cli_and_bad_specs(self):
        bad = os.path.join(self.tmp, "bad.yaml")
        for text, word in (("scenes: [box.yaml]\nparameters: {mass: [1]}\n", "parameters.mass"),
                           ("scenes: box.yaml\n", "scenes"),
                           ("scenes: [box.yaml]\nduration: -1\n", "duration"),
                           ("scenes: [box.yaml]\ncontrollers: [{name: c, python: nocolon}]\n",
                            "controllers[0].python"),
                           ("scenes: [box.yaml]\n"
                            "controllers: [{name: c, program: ctl, mode: slow}]\n",
                            "controllers[0].mode"),
                           ("scenes: [box.yaml]\ncontrollers: [{name: c, program: [1]}]\n",
                            "controllers[0].program")):
            with open(bad, "w") as f:
                f.write(text)
            p = subprocess.run([sys.executable, "-m", "khz", "campaign", bad, "--out",
                                os.path.join(self.tmp, "badout")], capture_output=True, text=True)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(word, p.stderr)
        # the command line end to end, with the summary plot when matplotlib is there
        good = os.path.join(self.tmp, "good.yaml")
        with open(good, "w") as f:
            f.write("duration: 0.05\nscenes: [box.yaml]\nseeds: 2\n")
        out = os.path.join(self.tmp, "good")
        p = subprocess.run([sys.executable, "-m", "khz", "campaign", good, "--out", out,
                            "--serial"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("2 to run serially", p.stdout)
        # without --serial: a LocalCluster on all cores when there is more than one
        # of each (the LocalCluster itself: test_serial_equals_dask_and_resume)
        self.assertEqual(campaign.default_runner(20, cores=2)[0], True)
        self.assertEqual(campaign.default_runner(1, cores=2)[0], False)
        self.assertEqual(campaign.default_runner(20, cores=1)[0], False)
        self.assertEqual(len(table(os.path.join(out, "runs.csv"))), 2)
        try:
            import matplotlib  # noqa: F401
            self.assertTrue(os.path.exists(os.path.join(out, "summary.png")))
        except ImportError:
            self.assertIn("no summary.png", p.stdout)

    def test_parquet(self):
        """runs.parquet read back by an independent reader (hyparquet, npm)
        holds runs.csv's table cell for cell, typed: integers, doubles bit
        for bit, strings, and nulls where a failed run has no figures."""
        node = shutil.which("node")
        viewer = os.path.join(ROOT, "clients", "viewer")
        if not node or not os.path.isdir(os.path.join(viewer, "node_modules", "hyparquet")):
            self.skipTest("node or clients/viewer/node_modules/hyparquet is absent (npm ci in "
                          "clients/viewer; scripts/bootstrap.sh does)")
        spec = os.path.join(self.tmp, "pq.yaml")
        with open(spec, "w") as f:
            f.write(textwrap.dedent("""
                duration: 0.03
                scenes: [box.yaml]
                parameters:
                  mass_scale: [1, 2.5]
                cases:
                  - {method: deepest, init_noise: 0.01}
                  - {push: {body: nobody, force: [0, 0, 5]}}
                seeds: [3]
                retries: 0
                """))
        out = os.path.join(self.tmp, "pq")
        campaign.run_campaign(spec, outdir=out, plot=False, log=self.log.append)
        with open(os.path.join(out, "runs.csv"), newline="") as f:
            csv_rows = list(csv.DictReader(f))
        p = subprocess.run([node, os.path.join(HERE, "parquet_read.mjs"),
                            os.path.join(out, "runs.parquet"), viewer],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout)
        self.assertEqual(got["num_rows"], "4")
        self.assertEqual(got["key_value_metadata"]["khz.campaign"], "pq")
        types = {s["name"]: s["type"] for s in got["schema"]}
        self.assertEqual(list(types), list(csv_rows[0]))
        want = {"run": "INT64", "seed": "INT64", "steps": "INT64", "key": "BYTE_ARRAY",
                "state_hash": "BYTE_ARRAY", "push": "BYTE_ARRAY", "method": "BYTE_ARRAY",
                "mass_scale": "DOUBLE", "init_noise": "DOUBLE", "energy_end": "DOUBLE"}
        self.assertEqual({k: types[k] for k in want}, want)
        self.assertEqual(len(got["rows"]), len(csv_rows))
        self.assertEqual([r["status"] for r in csv_rows], ["ok", "ok", "ok", "failed"])
        for i, (c, g) in enumerate(zip(csv_rows, got["rows"])):
            for k, cell in c.items():
                v = g[k]
                if cell == "":
                    self.assertIsNone(v, (i, k))
                elif types[k] == "DOUBLE":
                    self.assertEqual(float(cell), v, (i, k))  # the same double
                else:  # int64 as text from the reader, strings as they are
                    self.assertEqual(cell, v, (i, k))
        self.assertIsNone(got["rows"][3]["steps"])  # the failed run: no figures
        self.assertIn("no body named 'nobody'", got["rows"][3]["error"])

    def test_program_controllers(self):
        """External controller programs over the wire protocol, a khz-server
        per run in lockstep: the same PD as pd_hold in another process gives
        the in-process run's state and figures bit for bit, with the run's
        mass_scale and friction made by the server; the run's seed seeds the
        server's hil sensors, the same table on an existing Dask scheduler; a
        worker killed mid-run costs a retry, not the run; fast mode; a
        program that exits or stalls is a failed run, named."""
        spec = os.path.join(self.tmp, "wire.yaml")
        ctl = os.path.join(HERE, "wire_ctl.py")
        with open(spec, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.08
                scenes: [default]
                cases:
                  - {{init_noise: 0.05}}
                  - {{init_q: {{arm/joint2: 0.3}},
                     push: {{body: box1, force: [0, 30, 0], at: 0.02, duration: 0.02}}}}
                  - {{mass_scale: {{box1: 3.0, arm/link2: 1.2}}, friction: 0.3}}
                seeds: [1, 2]
                controllers:
                  - {{name: wire, program: "{{python}} {ctl}", {WAIT}}}
                  - {{name: hold, python: "khz.campaign:pd_hold"}}
                """))
        rows, _ = campaign.run_campaign(spec, outdir=os.path.join(self.tmp, "wire"), plot=False,
                                        log=self.log.append)
        # the baseline (no parameters), the three cases; two seeds; two controllers
        self.assertEqual([r["status"] for r in rows], ["ok"] * 16, [r["error"] for r in rows])
        by = {}
        for r in rows:
            by.setdefault((r["init_noise"], r["push"], r["mass_scale"], r["seed"]),
                          {})[r["controller"]] = r
        for key, pair in by.items():
            w, h = pair["wire"], pair["hold"]
            self.assertEqual(w["steps"], "80")
            if not key[1]:  # no push: the same torques from the same states, the same run;
                # the server scaled the masses and set the friction as khz.sim does, and
                # the wire's contacts (geoms, whole force) give the in-process pair force
                for col in ("state_hash", "tracking_rms", "tracking_max", "energy_start",
                            "energy_end", "energy_max", "max_penetration", "final_time",
                            "peak_contact_force"):
                    self.assertEqual(w[col], h[col], (key, col))
            self.assertGreater(float(w["peak_contact_force"]), 0.0)
        edited = {r["state_hash"] for r in rows if r["mass_scale"]}
        self.assertEqual(len(edited), 1)  # no draw: both seeds, both controllers alike
        self.assertNotIn(edited.pop(), {r["state_hash"] for r in rows if not r["mass_scale"]})
        base = [r for r in rows if r["controller"] == "wire"
                and not r["init_noise"] + r["push"] + r["mass_scale"]]
        self.assertEqual(base[0]["state_hash"], base[1]["state_hash"])  # no draw, no difference
        noise = [r for r in rows if r["controller"] == "wire" and r["init_noise"]]
        self.assertNotEqual(noise[0]["state_hash"], noise[1]["state_hash"])  # the seed's noise
        pushed = [r for r in rows if r["controller"] == "wire" and r["push"]]
        self.assertEqual(pushed[0]["state_hash"], pushed[1]["state_hash"])  # a fixed force: no draw
        self.assertNotIn(pushed[0]["state_hash"], {r["state_hash"] for r in noise})

        # on an existing Dask scheduler (--scheduler), 2 workers: the run's seed
        # seeds the server's hil sensors: a controller damping with a noisy gyro
        # runs differently for another seed, the same for the same seed on any
        # worker; a worker that dies mid-run: the run is done again
        hil = os.path.join(self.tmp, "wire-hil.yaml")
        with open(hil, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.05
                scenes: [{os.path.join(ROOT, "scenes", "hil_arm.yaml")}]
                seeds: [1, 2]
                controllers:
                  - {{name: gyro, program: "{{python}} {ctl} --gyro-damping 20", {WAIT}}}
                """))
        markers = os.path.join(self.tmp, "kill-markers")
        os.makedirs(markers)
        kill = os.path.join(self.tmp, "kill.yaml")
        with open(kill, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.05
                scenes: [default]
                path: [{HERE}]
                seeds: [1, 2]
                controllers:
                  - {{name: dies, python: "campaign_ctl:kills_worker", markers: {markers}}}
                """))
        rows_h = campaign.run_campaign(hil, outdir=os.path.join(self.tmp, "wire-hil"),
                                       plot=False, log=self.log.append)[0]
        from distributed import LocalCluster
        os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster:
            rows_hd = campaign.run_campaign(hil, outdir=os.path.join(self.tmp, "wire-hil-dask"),
                                            plot=False, log=self.log.append,
                                            scheduler=cluster.scheduler_address)[0]
            rows_k = campaign.run_campaign(kill, outdir=os.path.join(self.tmp, "kill"),
                                           plot=False, log=self.log.append,
                                           scheduler=cluster.scheduler_address)[0]
        self.assertTrue(any("2 workers" in m for m in self.log))
        self.assertEqual([r["status"] for r in rows_h], ["ok"] * 2, [r["error"] for r in rows_h])
        self.assertNotEqual(rows_h[0]["state_hash"], rows_h[1]["state_hash"])
        self.assertEqual(campaign.comparable(rows_h), campaign.comparable(rows_hd))
        self.assertTrue(os.path.exists(os.path.join(markers, "killed")))
        self.assertEqual([r["status"] for r in rows_k], ["ok", "ok"], [r["error"] for r in rows_k])
        self.assertEqual(rows_k[0]["state_hash"], rows_k[1]["state_hash"])  # no draw

        # the humanoid's feet: two geoms of one body on the floor, two pairs with
        # the same bodies and normal; the wire's Contact.geoms keeps them apart,
        # so the peak pair force is the in-process one (the feet land at about 0.2 s)
        hum = os.path.join(self.tmp, "wire-humanoid.yaml")
        with open(hum, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.25
                scenes: [{HUMANOID}]
                seeds: [1]
                controllers:
                  - {{name: wire, program: "{{python}} {ctl}", {WAIT}}}
                  - {{name: hold, python: "khz.campaign:pd_hold"}}
                """))
        w, h = campaign.run_campaign(hum, outdir=os.path.join(self.tmp, "wire-humanoid"),
                                     plot=False, log=self.log.append)[0]
        self.assertEqual((w["status"], h["status"]), ("ok", "ok"), (w["error"], h["error"]))
        for col in ("state_hash", "peak_contact_force", "max_penetration", "energy_end"):
            self.assertEqual(w[col], h[col], col)

        # as fast as possible: the loop does not wait for the program, whose
        # answers arrive ticks late (overruns counts the ticks without one)
        fast = os.path.join(self.tmp, "wire-fast.yaml")
        with open(fast, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.1
                scenes: [default]
                controllers:
                  - {{name: fast, program: "{{python}} {ctl}", mode: fast, {WAIT}}}
                """))
        r = campaign.run_campaign(fast, outdir=os.path.join(self.tmp, "wire-fast"),
                                  plot=False, log=self.log.append)[0][0]
        self.assertEqual((r["status"], r["steps"]), ("ok", "100"), r["error"])
        self.assertGreater(int(r["overruns"]), 0)
        self.assertLessEqual(int(r["overruns"]), 100)

        # programs that fail: exits early, never starts, stalls (a lockstep timeout)
        bad = os.path.join(self.tmp, "wire-bad.yaml")
        with open(bad, "w") as f:
            f.write(textwrap.dedent(f"""
                duration: 0.1
                scenes: [default]
                retries: 0
                controllers:
                  - {{name: exits, program: ["{{python}}", "{ctl}", "--exit-after", "30"]}}
                  - {{name: missing, program: /nonexistent/controller}}
                  - {{name: stalls, program: "{{python}} {ctl} --stall-after 30",
                     lockstep_timeout_ms: 300, stop_timeout: 2}}
                """))
        t0 = time.monotonic()
        rows, _ = campaign.run_campaign(bad, outdir=os.path.join(self.tmp, "wire-bad"),
                                        plot=False, log=self.log.append)
        by = {r["controller"]: r for r in rows}
        self.assertEqual({r["status"] for r in rows}, {"failed"})
        self.assertIn("exited with status 3", by["exits"]["error"])
        self.assertIn("cannot start the controller", by["missing"]["error"])
        self.assertIn("missed 1 lockstep deadline", by["stalls"]["error"])
        self.assertLess(time.monotonic() - t0, 120)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
