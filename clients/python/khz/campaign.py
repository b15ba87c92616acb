"""khz.campaign — `khz campaign SPEC.yaml`: one controller (or several)
against a matrix of scenes x parameters x seeds, one row per run, serially or
on Dask (docs/campaigns.md). Python controllers run in process; controller
programs against a khz-server of their own (khz.campaign_wire).

A run is a pure function of its description (scene, parameters, seed,
controller, duration): the simulator is deterministic, the seed drives every
random draw, so a row is the same whatever the worker and the order (the
wall time and the overruns, measured on the machine, excepted).
"""

import csv
import hashlib
import importlib
import itertools
import json
import math
import os
import sys
import time

import numpy as np

from . import campaign_wire, parquet
from .sim import Sim

#: the columns every row has, in order; parameter columns come after `seed`
FIXED_HEAD = ["run", "key", "scene", "controller", "seed"]
FIXED_TAIL = ["status", "attempts", "error", "steps", "final_time", "tracking_rms",
              "tracking_max", "peak_contact_force", "max_penetration", "energy_start",
              "energy_end", "energy_max", "warnings", "warnings_detail", "state_hash",
              "overruns", "wall_time_s"]
#: measured on the machine, so left out when two tables are compared
MACHINE_COLUMNS = ("wall_time_s", "overruns", "attempts")
#: the Parquet types of the fixed columns (runs.parquet)
COLUMN_TYPES = dict(
    {c: "int64" for c in ("run", "seed", "attempts", "steps", "warnings", "overruns")},
    **{c: "string" for c in ("key", "scene", "controller", "status", "error",
                              "warnings_detail", "state_hash", "method", "init_q", "push")},
    **{c: "double" for c in ("final_time", "tracking_rms", "tracking_max", "peak_contact_force",
                              "max_penetration", "energy_start", "energy_end", "energy_max",
                              "wall_time_s")})
PARAMETERS = ("mass_scale", "friction", "method", "init_noise", "init_q", "push")


class SpecError(ValueError):
    """A campaign file that cannot be run: the message names the key."""


# ---------------------------------------------------------------- the spec --
def load_spec(path):
    import yaml
    with open(path) as f:
        spec = yaml.safe_load(f)
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: expected a mapping at the top level")
    base = os.path.dirname(os.path.abspath(path))
    spec.setdefault("name", os.path.splitext(os.path.basename(path))[0])
    spec["_base"] = base
    return spec


def _resolve(base, p):
    if p == "default" or os.path.isabs(p):
        return p
    cand = os.path.join(base, p)
    return cand if os.path.exists(cand) else p  # relative to the spec, else to the cwd


def expand(spec):
    """The runs of the matrix in a fixed order: scenes, then parameter
    combinations (the product of `parameters`' lists in the file's key
    order, then the `cases` list), then seeds, then controllers."""
    known = {"name", "scenes", "parameters", "cases", "seeds", "controllers", "duration",
             "control_every", "mode", "retries", "path", "_base", "output", "server"}
    extra = set(spec) - known
    if extra:
        raise SpecError(f"unknown key(s) {', '.join(sorted(extra))}; expected {', '.join(sorted(known - {'_base'}))}")
    base = spec.get("_base", ".")
    scenes = spec.get("scenes")
    if not scenes or not isinstance(scenes, list):
        raise SpecError("scenes: expected a list of model or scene files (or 'default')")
    params = spec.get("parameters") or {}
    if not isinstance(params, dict):
        raise SpecError("parameters: expected a mapping of parameter -> list of values")
    for k, v in params.items():
        if k not in PARAMETERS:
            raise SpecError(f"parameters.{k}: unknown parameter; expected one of {', '.join(PARAMETERS)}")
        if not isinstance(v, list) or not v:
            raise SpecError(f"parameters.{k}: expected a non-empty list of values")
    keys = list(params)
    combos = [dict(zip(keys, vals)) for vals in itertools.product(*(params[k] for k in keys))]
    for i, case in enumerate(spec.get("cases") or []):
        if not isinstance(case, dict) or set(case) - set(PARAMETERS):
            raise SpecError(f"cases[{i}]: expected a mapping of {', '.join(PARAMETERS)}")
        combos.append(dict(case))
    if not combos:
        combos = [{}]
    seeds = spec.get("seeds", [0])
    if isinstance(seeds, int):
        seeds = list(range(seeds))
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
        raise SpecError("seeds: expected a list of integers or a count")
    ctls = spec.get("controllers") or [{"name": "none"}]
    for i, c in enumerate(ctls):
        if not isinstance(c, dict) or "name" not in c:
            raise SpecError(f"controllers[{i}]: expected a mapping with a name")
        if "python" in c and ":" not in str(c["python"]):
            raise SpecError(f"controllers[{i}].python: expected module:function, got {c['python']!r}")
        if "python" in c and "program" in c:
            raise SpecError(f"controllers[{i}]: give python or program, not both")
        if "program" in c:
            _check_program(c, f"controllers[{i}]", params, spec.get("cases") or [])
    duration = float(spec.get("duration", 1.0))
    if not duration > 0:
        raise SpecError("duration: expected a positive number of seconds")
    every = int(spec.get("control_every", 1))
    if every < 1:
        raise SpecError("control_every: expected an integer >= 1")
    mode = spec.get("mode", "fast")
    if mode not in ("fast", "lockstep"):
        raise SpecError(f"mode: expected fast or lockstep, got {mode!r}")
    runs = []
    for scene in scenes:
        for combo in combos:
            for seed in seeds:
                for ctl in ctls:
                    run = {"scene": _resolve(base, scene), "scene_name": scene,
                           "params": combo, "seed": seed, "controller": ctl,
                           "duration": duration, "control_every": every, "mode": mode,
                           "path": [base] + list(spec.get("path") or [])}
                    if "program" in ctl:
                        run["server"] = spec.get("server")
                    run["key"] = run_key(run)
                    run["run"] = len(runs)
                    runs.append(run)
    return runs


def run_key(run):
    """A stable identity of a run (what resume matches rows on)."""
    ident = json.dumps([run["scene_name"], run["params"], run["seed"], run["controller"],
                        run["duration"], run["control_every"]], sort_keys=True)
    return hashlib.sha1(ident.encode()).hexdigest()[:16]


# ------------------------------------------------------------ controllers --
def pd_hold(sim, params):
    """A controller for campaigns and examples: PD on every 1-dof joint
    towards the posture it starts from (kp, kd from the controller's
    `gains`, default scaled to the effort limits)."""
    g = params.get("gains") or {}
    act, qa = sim.actuated_dofadr, sim.actuated_qadr
    eff = sim.dof_effort[act]
    kp = np.where(eff > 0, eff, 1.0) * float(g.get("kp_per_effort", 2.0)) if "kp" not in g \
        else np.full(len(act), float(g["kp"]))
    kd = kp * float(g.get("kd_over_kp", 0.1)) if "kd" not in g else np.full(len(act), float(g["kd"]))
    target = sim.q[qa].copy()

    def ctl(sim):
        tau = np.zeros(sim.nv)
        tau[act] = kp * (target - sim.q[qa]) - kd * sim.qd[act]
        return tau
    ctl.reference = target
    return ctl


def _check_program(c, where, params, cases):
    try:
        campaign_wire.check_program(c, where, params, cases)
    except ValueError as e:
        raise SpecError(str(e)) from None


def _observer_sim(run):
    """The run's scene loaded in this process with the run's model edits, for
    the energy of the states a khz-server publishes (None when it does not
    load here)."""
    p = run["params"]
    try:
        return Sim(run["scene"], mass_scale=p.get("mass_scale"), friction=p.get("friction"),
                   method=p.get("method"), quiet=True)
    except Exception:
        return None


def _simulate_program(run):
    return campaign_wire.simulate_program(run, _observer_sim)


def _controller(desc, sim, path):
    """The run's controller: `python: module:function` called as
    function(sim, controller_entry) -> callable(sim) -> torques (nv) or None."""
    if "python" not in desc:
        return None
    mod, _, fn = str(desc["python"]).partition(":")
    for p in path:
        if p not in sys.path:
            sys.path.insert(0, p)
    factory = getattr(importlib.import_module(mod), fn)
    return factory(sim, desc)


# ------------------------------------------------------------------ a run --
def run_one(run):
    """Runs one description; returns its row (never raises: a failure is a
    row with status 'failed' and the error)."""
    t0 = time.perf_counter()
    p = run["params"]
    row = {"run": run["run"], "key": run["key"], "scene": run["scene_name"],
           "controller": run["controller"]["name"], "seed": run["seed"]}
    for k in PARAMETERS:
        if k in p:
            row[k] = json.dumps(p[k], sort_keys=True) if isinstance(p[k], (dict, list)) else p[k]
    try:
        row.update(_simulate_program(run) if "program" in run["controller"] else _simulate(run))
        row["status"], row["error"] = "ok", ""
    except Exception as e:  # recorded, never lost: the campaign goes on
        row.update({"status": "failed", "error": f"{type(e).__name__}: {e}"})
    row["wall_time_s"] = round(time.perf_counter() - t0, 6)
    return row


def _simulate(run):
    p = run["params"]
    rng = np.random.default_rng(run["seed"])
    with Sim(run["scene"], mass_scale=p.get("mass_scale"), friction=p.get("friction"),
             method=p.get("method"), quiet=True) as sim:
        act, qa = sim.actuated_dofadr, sim.actuated_qadr
        for name, value in (p.get("init_q") or {}).items():
            sim.q[sim.joint(name)[0]] = float(value)
        noise = float(p.get("init_noise") or 0.0)
        draw = rng.uniform(-1.0, 1.0, len(qa))  # drawn always: the seed's stream is the same
        if noise > 0:
            sim.q[qa] += noise * draw
        sim.forward()
        push = p.get("push")
        if push:
            pb = sim.body(push["body"])
            if "force" in push:
                pf = np.asarray(push["force"], dtype=float)
            else:  # a random direction of the given magnitude, from the seed
                d = rng.normal(size=3)
                pf = float(push["magnitude"]) * d / np.linalg.norm(d)
            p0, p1 = float(push.get("at", 0.0)), float(push.get("at", 0.0)) + float(push.get("duration", 0.1))
        ctl = _controller(run["controller"], sim, run["path"])
        ref = getattr(ctl, "reference", None)
        ref = sim.q[qa].copy() if ref is None else np.asarray(ref, dtype=float)
        every = run["control_every"]
        period = every * sim.timestep
        steps = int(round(run["duration"] / sim.timestep))
        ke, pe = sim.energy()
        acc = (__import__("ctypes").c_double * 4)(0.0, 0.0, ke + pe, ke + pe)
        e0 = ke + pe
        sq, emax, n, overruns, done = 0.0, 0.0, 0, 0, 0
        while done < steps:
            if push:
                sim.xfrc[pb, :3] = pf if p0 <= sim.time < p1 else 0.0
            if ctl is not None:
                c0 = time.perf_counter()
                tau = ctl(sim)
                if time.perf_counter() - c0 > period:
                    overruns += 1
                if tau is not None:
                    sim.tau[:] = tau
            k = min(every, steps - done)
            sim.step_figures(k, acc)
            done += k
            r = ref(sim.time) if callable(ref) else ref
            e = sim.q[qa] - r
            if len(e):
                sq += float(np.dot(e, e)) / len(e)
                emax = max(emax, float(np.max(np.abs(e))))
            n += 1
        w = sim.warnings
        return {"steps": steps, "final_time": sim.time,
                "tracking_rms": math.sqrt(sq / n) if n else 0.0, "tracking_max": emax,
                "peak_contact_force": acc[1], "max_penetration": acc[0], "energy_start": e0,
                "energy_end": acc[3], "energy_max": acc[2], "warnings": sum(w.values()),
                "warnings_detail": json.dumps({k: v for k, v in w.items() if v}, sort_keys=True),
                "state_hash": f"{sim.hash():016x}", "overruns": overruns}


# -------------------------------------------------------------- the table --
def columns(runs):
    present = [k for k in PARAMETERS if any(k in r["params"] for r in runs)]
    return FIXED_HEAD + present + FIXED_TAIL


def read_rows(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Table:
    """runs.csv in the output directory, appended one row at a time as runs
    finish (flushed: an interrupted campaign keeps every finished row)."""

    def __init__(self, outdir, cols):
        os.makedirs(outdir, exist_ok=True)
        self.path = os.path.join(outdir, "runs.csv")
        self.cols = cols
        old = read_rows(self.path)
        if old and list(old[0].keys()) != cols:
            raise SpecError(f"{self.path}: written by another campaign (its columns differ); "
                            "give another --out or remove it")
        self.done = {r["key"]: r for r in old}
        new = not os.path.exists(self.path) or os.path.getsize(self.path) == 0
        self.f = open(self.path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=cols, extrasaction="ignore")
        if new:
            self.w.writeheader()
            self.f.flush()

    def add(self, row):
        self.w.writerow({c: _cell(row.get(c, "")) for c in self.cols})
        self.f.flush()
        os.fsync(self.f.fileno())
        self.done[row["key"]] = row

    def close(self):
        self.f.close()


def _cell(v):
    if isinstance(v, float):
        return repr(v)  # shortest round-trip form: the same bits give the same text
    return v


def column_types(cols, rows):
    """The Parquet type of each column: the fixed columns' own; a parameter
    column is double when every cell is a number, else string (JSON)."""
    types = {}
    for c in cols:
        if c in COLUMN_TYPES:
            types[c] = COLUMN_TYPES[c]
            continue
        try:
            for r in rows:
                if r.get(c) not in (None, ""):
                    float(r[c])
            types[c] = "double"
        except ValueError:
            types[c] = "string"
    return types


def finish(outdir, cols, runs, plot=True, log=print, name=None):
    """Rewrites runs.csv in run order, writes runs.parquet (khz.parquet: the
    same table, typed) and summary.png (when matplotlib is importable)."""
    path = os.path.join(outdir, "runs.csv")
    rows = {r["key"]: r for r in read_rows(path)}
    order = [rows[r["key"]] for r in runs if r["key"] in rows]
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in order:
            w.writerow(r)
    os.replace(tmp, path)
    pq_path = os.path.join(outdir, "runs.parquet")
    parquet.write_table(pq_path, cols, column_types(cols, order), order,
                        metadata={"khz.campaign": name or "", "khz.columns": "docs/campaigns.md"},
                        created_by="khz campaign (khz.parquet)")
    log(f"campaign: wrote {pq_path}")
    if plot:
        _plot(outdir, order, log)
    return order


def _plot(outdir, rows, log):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("campaign: matplotlib is not importable: no summary.png")
        return
    ok = [r for r in rows if r["status"] == "ok"]
    fig, ax = plt.subplots(1, 3, figsize=(13, 4))
    for ctl in sorted({r["controller"] for r in ok}):
        rs = [r for r in ok if r["controller"] == ctl]
        x = [int(r["run"]) for r in rs]
        ax[0].plot(x, [float(r["tracking_rms"]) for r in rs], "o", label=ctl)
        ax[1].plot(x, [1e3 * float(r["max_penetration"]) for r in rs], "o", label=ctl)
        ax[2].plot(x, [float(r["peak_contact_force"]) for r in rs], "o", label=ctl)
    for a, t in zip(ax, ("tracking error RMS (rad or m)", "max penetration (mm)",
                         "peak contact force (N)")):
        a.set_title(t)
        a.set_xlabel("run")
        a.grid(alpha=0.3)
    ax[0].legend()
    failed = len(rows) - len(ok)
    fig.suptitle(f"{len(ok)} runs ok, {failed} failed")
    fig.tight_layout()
    out = os.path.join(outdir, "summary.png")
    fig.savefig(out, dpi=80)
    plt.close(fig)
    log(f"campaign: wrote {out}")


# ------------------------------------------------------------ the runners --
def run_serial(todo, table, retries, log):
    for run in todo:
        for attempt in range(1, retries + 2):
            row = run_one(run)
            row["attempts"] = attempt
            if row["status"] == "ok":
                break
        table.add(row)
        log(f"campaign: run {run['run']} {row['status']} ({row['wall_time_s']:.2f} s)")


def run_dask(todo, table, retries, log, scheduler=None, workers=None):
    """Each run a Dask task (pure function of its description); a failed run
    or a lost worker is submitted again, at most `retries` more times."""
    from distributed import Client, LocalCluster, as_completed
    t0 = time.perf_counter()
    cluster = None
    if scheduler:
        client = Client(scheduler)
    else:
        # Dask's statistical profiler takes the GIL 100 times a second in every
        # worker: a run took 2.1 s with it, 1.0 s without (0.35 s serially) at
        # load 20 (bench/campaign_dask.py); the worker processes read the
        # setting from the environment they inherit
        os.environ.setdefault("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", "False")
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                               processes=True, dashboard_address=None)
        client = Client(cluster)
    try:
        startup = time.perf_counter() - t0
        log(f"campaign: Dask scheduler {client.scheduler.address}, "
            f"{len(client.scheduler_info()['workers'])} workers (ready in {startup:.1f} s)")
        futures, first = {}, []
        for run in todo:
            f = client.submit(run_one, run, key=f"khz-run-{run['key']}-1", pure=False)
            futures[f.key] = (run, 1)
            first.append(f)
        ac = as_completed(first)
        for f in ac:
            run, attempt = futures.pop(f.key)
            try:
                row = f.result()
            except Exception as e:  # the worker died, the task was lost
                row = {"run": run["run"], "key": run["key"], "scene": run["scene_name"],
                       "controller": run["controller"]["name"], "seed": run["seed"],
                       "status": "failed", "error": f"{type(e).__name__}: {e}"}
            row["attempts"] = attempt
            if row["status"] != "ok" and attempt <= retries:
                g = client.submit(run_one, run, key=f"khz-run-{run['key']}-{attempt + 1}",
                                  pure=False)
                futures[g.key] = (run, attempt + 1)
                ac.add(g)
                continue
            table.add(row)
            log(f"campaign: run {run['run']} {row['status']} ({row.get('wall_time_s', 0):.2f} s)")
        runs_s = time.perf_counter() - t0 - startup
    finally:
        # every row is written: a worker slow to stop (a loaded machine) is
        # killed by its nanny, which logs a timeout that means nothing here
        import logging
        quiet = [logging.getLogger(n) for n in ("distributed.nanny", "distributed.process")]
        levels = [q.level for q in quiet]
        for q in quiet:
            q.setLevel(logging.CRITICAL)
        try:
            client.close()
            if cluster is not None:
                cluster.close()
        finally:
            for q, lv in zip(quiet, levels):
                q.setLevel(lv)
    return startup, runs_s


def run_campaign(spec_path, outdir=None, dask=False, scheduler=None, workers=None, plot=True,
                 retries=None, log=print, stats=None):
    """Runs (or resumes) the campaign; returns (rows in run order, wall time
    of the runs in s). stats, a dict, receives dask_startup_s (the cluster's
    start) and dask_runs_s (first submission to last row, without the stop)."""
    spec = load_spec(spec_path)
    runs = expand(spec)
    outdir = outdir or spec.get("output") or os.path.join(os.getcwd(), spec["name"])
    cols = columns(runs)
    table = Table(outdir, cols)
    todo = [r for r in runs if r["key"] not in table.done]
    retries = int(spec.get("retries", 2) if retries is None else retries)
    if dask == "auto" and not scheduler:
        dask, why = default_runner(len(todo), workers)
        log(f"campaign: {'on Dask' if dask else 'serially'} by default ({why}; --serial or "
            "--dask to choose)")
    log(f"campaign {spec['name']}: {len(runs)} runs, {len(runs) - len(todo)} already in "
        f"{table.path}, {len(todo)} to run {'on Dask' if dask or scheduler else 'serially'}")
    t0 = time.perf_counter()
    try:
        if dask or scheduler:
            startup, runs_s = run_dask(todo, table, retries, log, scheduler, workers)
            if stats is not None:
                stats["dask_startup_s"], stats["dask_runs_s"] = startup, runs_s
        else:
            run_serial(todo, table, retries, log)
    finally:
        table.close()
    wall = time.perf_counter() - t0
    rows = finish(outdir, cols, runs, plot=plot, log=log, name=spec["name"])
    failed = sum(r["status"] != "ok" for r in rows)
    log(f"campaign {spec['name']}: {len(rows)} rows ({failed} failed) in {wall:.1f} s -> "
        f"{os.path.join(outdir, 'runs.csv')}")
    return rows, wall


def comparable(rows):
    """The rows without the columns measured on the machine (for comparing tables)."""
    return [{k: v for k, v in r.items() if k not in MACHINE_COLUMNS} for r in rows]


def default_runner(ntodo, cores=None):
    """`khz campaign` without --serial, --dask or --scheduler: a LocalCluster on
    all cores when Dask imports, there is more than one core and more than one
    run to do; else serially."""
    cores = cores or os.cpu_count() or 1
    try:
        import distributed  # noqa: F401
    except ImportError:
        return False, "python3-distributed is not importable"
    if cores < 2 or ntodo < 2:
        return False, f"{cores} core(s), {ntodo} run(s) to do"
    return True, f"a LocalCluster on {cores} cores"


def cmd_campaign(args):
    if args.serial and (args.dask or args.scheduler):
        print("khz campaign: --serial and --dask/--scheduler exclude each other", file=sys.stderr)
        return 2
    try:
        rows, _ = run_campaign(args.spec, outdir=args.out,
                               dask=False if args.serial else (args.dask or "auto"),
                               scheduler=args.scheduler, workers=args.workers,
                               plot=not args.no_plot, retries=args.retries)
    except (SpecError, OSError) as e:
        print(f"khz campaign: {e}", file=sys.stderr)
        return 2
    return 1 if any(r["status"] != "ok" for r in rows) else 0
