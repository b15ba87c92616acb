"""khz.campaign_wire — a campaign run whose controller is an external program
speaking the wire protocol (docs/campaigns.md, "External controllers").

Per run: a khz-server of its own on two ipc:// endpoints in a fresh
temporary directory (no port to find, nothing shared between runs or
workers), started paused in lockstep; this process connects as an observer,
applies the run's initial state (Reset with q), starts the controller
program with the endpoints in its environment and arguments, waits until it
is connected, then advances the loop with Step requests in chunks. In
lockstep tick k+1 waits for the command answering state k, so the run is as
deterministic as the controller. The observer reads every state (SUB,
unbounded queue) for the figures, asks GetStats for the final state hash
and the lockstep timeouts, then stops the program and the server (SIGTERM,
then SIGKILL after stop_timeout). Whatever happens, both processes are gone
when the run returns.
"""

import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

#: controller keys of a program controller (beside name and program)
PROGRAM_KEYS = {"name", "program", "env", "mode", "startup_timeout", "lockstep_timeout_ms",
                "stop_timeout", "timeout", "chunk"}
#: State.warnings order (khzWarning order, state.proto)
WARNING_NAMES = ("stack", "badstate", "effort", "badctrl", "contactfull", "impulse", "lcp")
FLAG_LOCKSTEP_TIMEOUT, FLAG_CONTACTS_TRUNCATED = 2, 512


class RunError(RuntimeError):
    """A program run that could not complete; the message says which side failed."""


def check_program(c, where, params, cases):
    """Refuses, before anything runs, a program controller the campaign cannot run."""
    extra = set(c) - PROGRAM_KEYS
    if extra:
        raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(extra))} for a program "
                         f"controller; expected {', '.join(sorted(PROGRAM_KEYS))}")
    prog = c["program"]
    if not (isinstance(prog, str) and prog.strip()) and not (
            isinstance(prog, list) and prog and all(isinstance(a, str) for a in prog)):
        raise ValueError(f"{where}.program: expected a command line (a string or a list of "
                         "strings)")
    if c.get("mode", "lockstep") not in ("lockstep", "fast"):
        raise ValueError(f"{where}.mode: expected lockstep or fast, got {c['mode']!r}")
    for k in ("startup_timeout", "lockstep_timeout_ms", "stop_timeout", "timeout", "chunk"):
        if k in c and not (isinstance(c[k], (int, float)) and c[k] > 0):
            raise ValueError(f"{where}.{k}: expected a positive number")
    if "env" in c and not isinstance(c["env"], dict):
        raise ValueError(f"{where}.env: expected a mapping of variable -> value")


def find_server(given=None):
    """khz-server: the SPEC's `server:`, $KHZ_SERVER, the build tree's, the
    installed one beside the package, else PATH."""
    cands = [given, os.environ.get("KHZ_SERVER")]
    for mod in ("_paths", "_install"):
        try:
            cands.append(getattr(__import__(f"khz.{mod}", fromlist=["SERVER"]), "SERVER", None))
        except ImportError:
            pass
    cands.append(shutil.which("khz-server"))
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    if given:
        raise RunError(f"server: {given} is not an executable khz-server")
    raise RunError("no khz-server found (give server: in the SPEC, $KHZ_SERVER, or put it on "
                   "PATH)")


def _stop(proc, timeout):
    """SIGTERM, then SIGKILL after timeout; returns the exit status."""
    if proc is None:
        return None
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


def _tail(path, n=400):
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - n))
            return f.read().decode(errors="replace").strip().replace("\n", " | ")
    except OSError:
        return ""


def _pair_forces(contacts):
    """The largest normal force of one contact pair in a state: the points of
    a pair come one after another (the server's copy_contacts) with the same
    geoms (Contact.geoms; from a server before that field, the same bodies and
    normal, which merges two pairs of one body pair that share a normal);
    their forces along the normal add up. Contact.force is the point's whole
    force, the penalty method's implicit part included, as in process."""
    best, cur, key = 0.0, 0.0, None
    for c in contacts:
        k = tuple(c.geoms) if len(c.geoms) == 2 else (c.body1, c.body2, tuple(c.normal))
        if k != key:
            best, cur, key = max(best, cur), 0.0, k
        cur += c.force[0] * c.normal[0] + c.force[1] * c.normal[1] + c.force[2] * c.normal[2]
    return max(best, cur)


def simulate_program(run, sim_factory):
    """One run against a khz-server of its own; returns the row's figures
    (raises on failure: the caller records it)."""
    from . import Client, KhzError
    from .errors import Timeout
    from khz_msgs.v1 import control_pb2, messages_pb2

    ctl, p = run["controller"], run["params"]
    server = find_server(run.get("server"))
    tmp = tempfile.mkdtemp(prefix="khz-run-")
    state_ep, command_ep = f"ipc://{tmp}/state", f"ipc://{tmp}/command"
    startup = float(ctl.get("startup_timeout", 30.0))
    stop_timeout = float(ctl.get("stop_timeout", 5.0))
    budget = float(ctl.get("timeout", 600.0))
    mode = ctl.get("mode", "lockstep")
    argv = [server, "--scene", run["scene"], "--mode", mode, "--paused",
            "--state-endpoint", state_ep, "--command-endpoint", command_ep,
            "--rt-priority", "0", "--io-priority", "0", "--lock-memory", "false",
            "--cpu-dma-latency-us", "-1", "--publish-contacts", "--pub-hwm", "1000000",
            "--watchdog-ms", "0",
            "--lockstep-timeout-ms", str(int(ctl.get("lockstep_timeout_ms", 10000)))]
    if p.get("method"):
        argv += ["--contact-method", str(p["method"])]
    # the model edits khz.sim makes in process, made by the server before it
    # compiles the scene (floats in their shortest round-trip form: the same
    # doubles), and the run's seed for the hil sensors' noise
    if p.get("mass_scale") is not None:
        ms = p["mass_scale"]
        argv += ["--mass-scale", ",".join(f"{b}={float(f)!r}" for b, f in ms.items())
                 if isinstance(ms, dict) else repr(float(ms))]
    if p.get("friction") is not None:
        argv += ["--friction", repr(float(p["friction"]))]
    argv += ["--hil-seed", str(run["seed"])]
    srv = prog = client = sim = None
    srv_log, prog_log = os.path.join(tmp, "server.log"), os.path.join(tmp, "program.log")
    t_start = time.monotonic()
    try:
        with open(srv_log, "wb") as f:
            srv = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        # the observer: connects once the server answers Describe
        while True:
            if srv.poll() is not None:
                raise RunError(f"khz-server exited with status {srv.returncode} at start: "
                               f"{_tail(srv_log)}")
            try:
                client = Client(state_ep, command_ep, timeout=min(5.0, startup), rcvhwm=1 << 30)
                break
            except KhzError:
                if time.monotonic() - t_start > startup:
                    raise RunError(f"khz-server did not answer within {startup:g} s: "
                                   f"{_tail(srv_log)}") from None
                time.sleep(0.05)
        m = client.model
        rate = m.rate_hz
        period_ns = 1e9 / rate
        steps = int(round(run["duration"] * rate))
        # the initial state: init_q, then init_noise on the actuators, drawn as
        # an in-process run draws them (the same seed, the same numbers)
        rng = np.random.default_rng(run["seed"])
        # The server is paused and published its state once, perhaps before
        # this subscription was through (PUB/SUB drops a new subscriber's first
        # messages; only lockstep repeats it by itself): a Pause request makes
        # a paused server repeat its last state (FLAG_PAUSED), so ask until one
        # arrives. A fast-mode run waited 5 s for it in CI.
        while True:
            try:
                st0 = client.latest_state(0.5)
                break
            except Timeout:
                if time.monotonic() - t_start > startup:
                    raise RunError(f"khz-server published no state within {startup:g} s: "
                                   f"{_tail(srv_log)}") from None
                client.pause()
        q = st0.q.copy()
        for name, value in (p.get("init_q") or {}).items():
            q[m.joint(name).q_index] = float(value)
        draw = rng.uniform(-1.0, 1.0, len(m.act_q))
        noise = float(p.get("init_noise") or 0.0)
        if noise > 0:
            q[m.act_q] += noise * draw
        first = client.reset(q) if p.get("init_q") or noise > 0 else st0.seq
        push = p.get("push")
        if push:
            if "force" in push:
                pf = np.asarray(push["force"], dtype=float)
            else:  # a random direction of the given magnitude, from the seed
                d = rng.normal(size=3)
                pf = float(push["magnitude"]) * d / np.linalg.norm(d)
            push_tick = int(round(float(push.get("at", 0.0)) * rate))
            push_len = float(push.get("duration", 0.1))
        # the controller program, told where the server is
        subst = {"{python}": sys.executable, "{state}": state_ep, "{command}": command_ep,
                 "{seed}": str(run["seed"]), "{duration}": repr(run["duration"])}
        cmd = ctl["program"]
        cmd = shlex.split(cmd) if isinstance(cmd, str) else list(cmd)
        for key, value in subst.items():  # these words only: other braces stay as they are
            cmd = [a.replace(key, value) for a in cmd]
        env = dict(os.environ, KHZ_STATE_ENDPOINT=state_ep, KHZ_COMMAND_ENDPOINT=command_ep,
                   KHZ_RUN_SEED=str(run["seed"]), KHZ_RUN_DURATION=repr(run["duration"]),
                   KHZ_RUN_PARAMS=json.dumps(p, sort_keys=True))
        # the program runs in the SPEC's directory: PYTHONPATH made absolute, then the SPEC's path
        pp = [os.path.abspath(x) for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]
        env["PYTHONPATH"] = os.pathsep.join(pp + list(run.get("path") or []))
        env.update({str(k): str(v) for k, v in (ctl.get("env") or {}).items()})
        with open(prog_log, "wb") as f:
            try:
                prog = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=env,
                                        cwd=run["path"][0] if run.get("path") else None)
            except OSError as e:
                raise RunError(f"cannot start the controller {cmd[0]!r}: {e}") from None
        # it is connected when the server has seen a second peer (its Describe)
        while client.stats().clients < 2:
            if prog.poll() is not None:
                raise RunError(f"the controller exited with status {prog.returncode} before "
                               f"connecting: {_tail(prog_log)}")
            if time.monotonic() - t_start > startup:
                raise RunError(f"the controller did not connect within {startup:g} s: "
                               f"{_tail(prog_log)}")
            time.sleep(0.02)
        sim = sim_factory(run)  # the same scene in this process: energy from q, qd
        if sim is not None and (sim.nq != m.nq or sim.nv != m.nv):
            sim.close()
            sim = None
        ref = None
        sq = emax = depth = force = 0.0
        e0 = emax_e = e_end = math.nan
        n = overruns = truncated = timeouts = 0
        last = None
        done = 0
        chunk = int(ctl.get("chunk", 250))
        seen = st0.seq if st0.seq == first else first - 1

        def take(st):
            nonlocal ref, sq, emax, depth, force, e0, emax_e, e_end, n, overruns, truncated
            nonlocal timeouts, last
            if st.seq < first or (last is not None and st.seq <= last.seq):
                return  # from before the reset, or a repeat (lockstep keep-alive, pause)
            if ref is None:  # the posture the run starts from
                ref = st.q[m.act_q].copy()
            if sim is not None:
                sim.q[:] = st.q
                sim.qd[:] = st.qd
                sim.forward()
                e = sum(sim.energy())
                e0 = e if math.isnan(e0) else e0
                emax_e = e if math.isnan(emax_e) else max(emax_e, e)
                e_end = e
            if st.seq > first:
                err = st.q[m.act_q] - ref
                if len(err):
                    sq += float(np.dot(err, err)) / len(err)
                    emax = max(emax, float(np.max(np.abs(err))))
                n += 1
                if mode == "fast":  # the loop did not wait: a tick without the answer to
                    overruns += st.command_state_seq + 1 != st.seq  # the state before it
                # lockstep, the controller's turn: state k complete -> tick k+1
                # started; over one period a real-time tick was missed
                elif last is not None and st.seq == last.seq + 1 \
                        and st.seq - 1 not in chunk_ends \
                        and st.tick_time_ns - last.mono_time_ns > period_ns:
                    overruns += 1
            for c in st.contacts:
                depth = max(depth, c.depth)
            force = max(force, _pair_forces(st.contacts))
            truncated += bool(st.flags & FLAG_CONTACTS_TRUNCATED)
            timeouts += bool(st.flags & FLAG_LOCKSTEP_TIMEOUT)
            last = st

        chunk_ends = {first}  # the tick after waited for a Step request, not the controller
        if st0.seq == first:
            take(st0)
        while done < steps:
            k = min(chunk, steps - done)
            if push and done < push_tick < done + k:
                k = push_tick - done
            if push and done == push_tick:
                client.apply_wrench(push["body"], pf, duration=push_len)
            left = budget - (time.monotonic() - t_start)
            if left <= 0:
                raise RunError(f"the run took longer than its timeout ({budget:g} s)")
            # the Step request, watching the states and the program meanwhile:
            # a program that died or stalls ends the run now, not after a
            # lockstep timeout per remaining tick
            client._next_id += 1
            rq = control_pb2.Request(id=client._next_id)
            rq.step.n = k
            client._send(messages_pb2.ClientMessage(request=rq), wait=left)
            end, reply = time.monotonic() + left, None
            while reply is None:
                while (raw := client._recv_state()) is not None:
                    st = client._take(raw)
                    if st is not None:
                        take(st)
                        seen = max(seen, st.seq)
                if timeouts and mode == "lockstep":
                    break
                if client._wait(client._dealer, 0.02):
                    sm = client._recv_server()
                    if sm.WhichOneof("body") == "reply" and sm.reply.id == rq.id:
                        reply = sm.reply
                        if reply.code != control_pb2.OK:
                            raise RunError(f"Step refused by khz-server: {reply.error}")
                    continue
                if prog.poll() is not None:
                    raise RunError(f"the controller exited with status {prog.returncode} after "
                                   f"{seen - first} of {steps} steps: {_tail(prog_log)}")
                if srv.poll() is not None:
                    raise RunError(f"khz-server exited with status {srv.returncode}: "
                                   f"{_tail(srv_log)}")
                if time.monotonic() > end:
                    raise RunError(f"the run took longer than its timeout ({budget:g} s)")
            if reply is None:
                break  # the controller did not answer in time: failed below
            done += k
            chunk_ends.add(reply.state_seq)
            while seen < reply.state_seq:
                st = client.next_state(min(left, 10.0))
                take(st)
                seen = max(seen, st.seq)
        stats = client.stats()
        if mode == "lockstep" and (stats.tick.lockstep_timeouts or timeouts):
            missed = max(stats.tick.lockstep_timeouts, timeouts)
            limit = ctl.get("lockstep_timeout_ms", 10000)
            raise RunError(f"the controller missed {missed} lockstep deadline(s) of {limit} ms "
                           "(the safe command was applied): not a deterministic run")
        warn = dict(zip(WARNING_NAMES, (int(w) for w in last.warnings)))
        if truncated:
            warn["contacts_truncated"] = truncated
        return {"steps": steps, "final_time": last.sim_time,
                "tracking_rms": math.sqrt(sq / n) if n else 0.0, "tracking_max": emax,
                "peak_contact_force": force, "max_penetration": depth, "energy_start": e0,
                "energy_end": e_end, "energy_max": emax_e, "warnings": sum(warn.values()),
                "warnings_detail": json.dumps({k: v for k, v in warn.items() if v},
                                              sort_keys=True),
                "state_hash": f"{stats.state_hash:016x}", "overruns": overruns}
    finally:
        if client is not None:
            client.close()
        if sim is not None:
            sim.close()
        _stop(prog, stop_timeout)
        _stop(srv, stop_timeout)
        shutil.rmtree(tmp, ignore_errors=True)
