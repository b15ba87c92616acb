"""khz.cli — the `khz` command: look at and steer a running khz-server.

    khz status [--count N] [--interval S]     live view: rate, lateness, overruns, clients,
                                              command latency, watchdog, warnings
    khz model [--json]                        joints and bodies, indices and limits
    khz pause | resume | reset | step N
    khz mode realtime|lockstep|fast
    khz method penalty|deepest|none|...
    khz push BODY --force FX,FY,FZ [--at X,Y,Z] --for SECONDS
    khz settings | khz set NAME VALUE
    khz record FILE --seconds N               the state stream into FILE (.khzrec)
    khz plot FILE JOINT... --out PNG          positions, torques, lateness histogram
    khz export FILE --csv [--out CSV]
    khz export --mcap IN.khzrec OUT.mcap [--scene FILE]   for Foxglove (docs/viewer.md)
    khz record FILE --mcap [--scene FILE] ...   the recording as MCAP instead
    khz view [--scene FILE] [--port 8600]       live 3D view in a browser (docs/viewer.md)
    khz view --play FILE.khzrec [--scene FILE]  a recording on a timeline

Endpoints: --state / --command, else $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT,
else tcp://127.0.0.1:5600 / :5601.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from typing import Sequence

import numpy as np

from . import recording
from .client import Client, default_endpoints, read_keys
from .errors import KhzError, NotConnected, Timeout
from .model import MODE_NAMES, WARNINGS, Model, State, flag_names


def _us(ns: float) -> str:
    return f"{ns / 1000:.1f}"


def _hist(h) -> str:
    if not h.count:
        return "no samples yet"
    return (f"p50 {_us(h.p50)}  p90 {_us(h.p90)}  p99 {_us(h.p99)}  p99.9 {_us(h.p999)}  "
            f"max {_us(h.max)} us  ({h.count} samples)")


def _vec3(text: str, what: str) -> list[float]:
    try:
        v = [float(x) for x in text.split(",")]
    except ValueError:
        v = []
    if len(v) != 3:
        raise KhzError(f"{what} needs three comma-separated numbers, e.g. 0,0,5 (got '{text}')")
    return v


def connect(args) -> Client:
    keys = {}
    if args.server_key:
        if not args.client_keys:
            raise KhzError("--server-key needs --client-keys FILE (from khz-server --curve-keygen)")
        pub, sec = read_keys(args.client_keys)
        keys = {"server_key": args.server_key, "public_key": pub, "secret_key": sec}
    return Client(args.state, args.command, timeout=args.timeout, **keys)


# ------------------------------------------------------------------ status
def status_view(c: Client, stats, st: State, rate: float | None, watchdog_ms: str) -> str:
    t = stats.tick
    mode = MODE_NAMES.get(stats.mode, str(stats.mode))
    lines = [f"khz-server at {c.command_endpoint}: scene '{c.model.scene}', {mode}"
             f"{' (PAUSED)' if stats.paused else ''}, {stats.rate_hz:g} Hz, state {stats.seq} "
             f"(t = {st.sim_time:.3f} s)"]
    lines.append(f"  rate       {f'{rate:.1f} Hz measured' if rate is not None else 'measuring...'}"
                 f"  ({t.ticks} ticks)")
    lines.append(f"  lateness   {_hist(stats.lateness)}")
    lines.append(f"  compute    {_hist(stats.compute)}")
    lines.append(f"  overruns   {t.overruns} ({t.missed} periods missed); states dropped "
                 f"{t.states_dropped}")
    lines.append(f"  clients    {stats.clients} seen on the command socket")
    taken = t.commands + t.superseded
    share = f"{100.0 * t.on_time / taken:.2f} % at the next tick" if taken else "none yet"
    lines.append(f"  commands   {t.commands} taken: {share}, {t.late} late, {t.superseded} "
                 f"superseded; {stats.rejected} rejected")
    lines.append(f"  latency    command (state complete -> applied) {_hist(stats.command_latency)}")
    lines.append(f"             response (state complete -> command received) "
                 f"{_hist(stats.command_response)}")
    flags = set(flag_names(st.flags))
    if "WATCHDOG" in flags and "NO_COMMAND" in flags:
        wd = "safe command applied: no command since the start or the last reset"
    elif "WATCHDOG" in flags:
        wd = f"ENGAGED: no command for over {watchdog_ms} ms, safe command applied"
    elif "LOCKSTEP_TIMEOUT" in flags:
        wd = "lockstep wait expired: safe command applied"
    else:
        wd = "ok (commands arriving)"
    lines.append(f"  watchdog   {wd}; engaged {t.watchdog_engaged} time(s), lockstep timeouts "
                 f"{t.lockstep_timeouts}")
    warn = [f"{WARNINGS[i] if i < len(WARNINGS) else i} {n}" for i, n in enumerate(st.warnings) if n]
    other = sorted(flags - {"WATCHDOG", "NO_COMMAND", "PAUSED", "REPEATED"})
    lines.append(f"  warnings   {', '.join(warn) if warn else 'none'}"
                 f"{'; flags ' + ' '.join(other) if other else ''}")
    if stats.rt_report:
        lines.append(f"  rt thread  {stats.rt_report.removeprefix('rt thread: ')}")
    lines += sensor_lines(c.model, st)
    return "\n".join(lines)


FAULTS = ["none", "freeze", "dropout", "bias", "limp", "torque_loss", "lock", "stall"]


def sensor_lines(m: Model, st: State) -> list[str]:
    """The hardware-in-the-loop sensors' readings (docs/hil.md), one line each."""
    md = m.msg
    if not md.sensors:
        return []
    tick = st.seq - st.reset_seq
    out = [f"  sensors    (readings as published; the exact state is q, qd, poses)"]
    for i, sn in enumerate(md.sensors):
        v = st.sensor_values[sn.value_index:sn.value_index + sn.dim]
        age = tick - st.sensor_sampled_tick[i] if i < len(st.sensor_sampled_tick) else 0
        fault = st.sensor_faults[i] if i < len(st.sensor_faults) else 0
        out.append(f"    {sn.name:<16} {sn.type:<13} {' '.join(f'{x:9.4g}' for x in v)}"
                   f"  ({age} ticks old{', FAULT ' + FAULTS[fault] if fault else ''})")
    for i, dr in enumerate(md.drives):
        fault = st.drive_faults[i] if i < len(st.drive_faults) else 0
        if fault:
            out.append(f"    drive {dr.joint}: FAULT {FAULTS[fault]}")
    if st.shown_seq and st.shown_seq != st.seq:
        out.append(f"  network    this state (tick {st.seq}) was shown at tick {st.shown_seq}")
    return out


def cmd_status(args) -> int:
    c = connect(args)
    tty = sys.stdout.isatty()
    prev = None
    shown = 0
    watchdog_ms = c.get_setting("watchdog_ms")
    try:
        while args.count is None or shown < args.count:
            stats = c.stats()
            now = time.monotonic()
            try:
                st = c.latest_state(args.timeout)
            except Timeout:
                raise Timeout(f"the server at {c.command_endpoint} answers requests but no state "
                              f"arrives from {c.state_endpoint}: is --state right?") from None
            rate = None
            if prev is not None and now > prev[0]:
                rate = (stats.tick.ticks - prev[1]) / (now - prev[0])
            prev = (now, stats.tick.ticks)
            if rate is None and (args.count is None or args.count > 0):
                time.sleep(min(args.interval, 0.5))
                continue
            view = status_view(c, stats, st, rate, watchdog_ms)
            print(("\x1b[H\x1b[J" if tty else "") + view + ("" if tty else "\n"), flush=True)
            shown += 1
            if args.count is None or shown < args.count:
                time.sleep(args.interval)
    except KeyboardInterrupt:
        pass
    finally:
        c.close()
    return 0


# ------------------------------------------------------------------- model
def model_text(m: Model) -> str:
    out = [f"scene '{m.scene}': model generation {m.generation}, {m.rate_hz:g} Hz "
           f"(timestep {m.timestep:g} s), nq {m.nq}, nv {m.nv}, na {m.na}, gravity "
           f"{' '.join(f'{g:g}' for g in m.gravity)}, contact '{m.contact_method}' "
           f"(methods: {', '.join(m.contact_methods)})", "",
           f"joints ({len(m.joints)}):",
           f"  {'name':<22} {'type':<10} {'q':>3} {'qd':>3} {'act':>3} {'lower':>8} {'upper':>8} "
           f"{'effort':>7} {'damping':>7} {'friction':>8}"]
    for j in m.joints:
        lim = (f"{j.lower:8.3f} {j.upper:8.3f}" if j.limited else f"{'-':>8} {'-':>8}")
        act = str(j.actuator) if j.actuator >= 0 else "-"
        out.append(f"  {j.name:<22} {j.type:<10} {j.q_index:>3} {j.qd_index:>3} {act:>3} {lim} "
                   f"{j.effort_limit:7.3g} {j.damping:7.3g} {j.friction:8.3g}")
    out += ["", f"bodies ({len(m.bodies)}):",
            f"  {'index':>5} {'name':<22} {'parent':>6} {'mass kg':>8}"]
    for b in m.bodies:
        out.append(f"  {b.index:>5} {b.name:<22} {b.parent:>6} {b.mass:8.3f}")
    md = m.msg
    if md.sensors:
        out += ["", f"sensors ({len(md.sensors)}; seed {md.hil_seed}):",
                f"  {'name':<16} {'type':<13} {'on':<16} {'values':>9} {'every':>5} {'latency':>7} "
                f"{'white':>8} {'bias walk':>9} {'step':>8}"]
        for sn in md.sensors:
            out.append(f"  {sn.name:<16} {sn.type:<13} {sn.object:<16} "
                       f"{f'{sn.value_index}..{sn.value_index + sn.dim - 1}':>9} {sn.rate_divisor:>5} "
                       f"{sn.latency_ticks:>7} {sn.white:8.3g} {sn.bias_walk:9.3g} {sn.resolution:8.3g}")
    if md.drives:
        out += ["", f"drives ({len(md.drives)}):"]
        for d in md.drives:
            out.append(f"  {d.joint:<22} {d.mode:<8} max {d.max_torque:g} N m, stall {d.stall_torque:g}"
                       f" N m at {d.no_load_speed:g} rad/s no-load, gear {d.gear:g}, lag {d.lag:g} s, "
                       f"friction {d.coulomb:g} + {d.viscous:g} qd")
    if md.HasField("network"):
        n = md.network
        out += ["", f"network: states {n.state_delay_ticks}+0..{n.state_jitter_ticks} ticks late, "
                f"loss {n.state_loss:g}; commands {n.command_delay_ticks}+0..{n.command_jitter_ticks}"
                f" ticks late, loss {n.command_loss:g}"]
    if m.haptic_proxies:
        out += ["", "haptic proxies:"]
        for p in m.haptic_proxies:
            out.append(f"  {p.index}: body '{p.body_name}' stiffness {p.stiffness:g} N/m, damping "
                       f"{p.damping:g} N s/m, rot {p.rot_stiffness:g} / {p.rot_damping:g}")
    return "\n".join(out)


def cmd_model(args) -> int:
    with connect(args) as c:
        m = c.model
        if args.json:
            from google.protobuf import json_format
            print(json.dumps(json_format.MessageToDict(m.msg, preserving_proto_field_name=True),
                             indent=2))
        else:
            print(model_text(m))
    return 0


# --------------------------------------------------------------- control
def cmd_control(args) -> int:
    with connect(args) as c:
        if args.cmd == "pause":
            print(f"paused at state {c.pause()}")
        elif args.cmd == "resume":
            print(f"resumed at state {c.resume()}")
        elif args.cmd == "reset":
            print(f"reset: the initial state is now state {c.reset()}")
        elif args.cmd == "step":
            print(f"stepped {args.n} tick(s): paused at state {c.step(args.n)}")
        elif args.cmd == "mode":
            c.set_mode(args.mode)
            print(f"mode {args.mode}")
        elif args.cmd == "method":
            if args.method not in c.model.contact_methods:
                raise KhzError(f"unknown contact method '{args.method}' (this server knows: "
                               f"{', '.join(c.model.contact_methods)})")
            c.set_contact_method(args.method)
            print(f"contact method {args.method}")
        elif args.cmd == "settings":
            for name, value in c.settings().items():
                print(f"{name} {value}")
        elif args.cmd == "set":
            c.set_setting(args.name, args.value)
            print(f"{args.name} {c.get_setting(args.name)}")
    return 0


def cmd_push(args) -> int:
    force = _vec3(args.force, "--force")
    with connect(args) as c:
        m = c.model
        b = m.body(args.body)
        torque = [0.0, 0.0, 0.0]
        if args.at:
            # a force at a point: the same force at the body origin plus (at - origin) x F
            # (the origin is the centre of mass for scene objects)
            at = np.array(_vec3(args.at, "--at"))
            origin = c.latest_state(args.timeout).body_pose[b, :3]
            torque = np.cross(at - origin, force).tolist()
        c.apply_wrench(b, force, torque, args.seconds)
        print(f"pushing '{m.body_names[b]}' with force ({', '.join(f'{f:g}' for f in force)}) N"
              f"{', torque (' + ', '.join(f'{x:.3g}' for x in torque) + ') N m' if args.at else ''}"
              f" for {args.seconds:g} s of simulated time")
    return 0


def cmd_fault(args) -> int:
    with connect(args) as c:
        c.set_fault(args.target, args.fault, args.value, args.seconds)
        print(f"fault {args.fault} on '{args.target}'"
              f"{f' (value {args.value:g})' if args.value else ''}"
              f"{f' for {args.seconds:g} s of simulated time' if args.seconds else ''}")
    return 0


# ----------------------------------------------------------- record / plot
def _mcap_geometry(model, scene):
    """The shapes for an MCAP file's /scene, or None (said on stderr)."""
    from . import view
    try:
        return view.geometry_for(model, scene)
    except KhzError as e:
        print(f"khz: no /scene in the MCAP file: {e}", file=sys.stderr)
        return None


def cmd_record(args) -> int:
    if args.mcap:
        from . import mcap
    with connect(args) as c, (mcap.Recorder(args.file, tf_rate=args.tf_rate) if args.mcap
                              else recording.Recorder(args.file)) as rec:
        if args.mcap:
            rec.model(c.model, _mcap_geometry(c.model, args.scene))
        else:
            rec.model(c.model)
        tty = sys.stderr.isatty()
        start = time.monotonic()
        next_print = start
        gaps0 = c.counters["gaps"]
        while True:
            now = time.monotonic()
            if now >= next_print or now - start >= args.seconds:
                done = now - start >= args.seconds
                line = (f"recording {args.file}: {min(now - start, args.seconds):.1f} / "
                        f"{args.seconds:g} s, {rec.states} states, "
                        f"{c.counters['gaps'] - gaps0} missed, {rec.bytes / 1e6:.2f} MB")
                if tty:
                    print("\r" + line + ("\n" if done else ""), end="", file=sys.stderr, flush=True)
                else:
                    print(line, file=sys.stderr, flush=True)
                next_print += 1.0
                if done:
                    break
            try:
                st = c.next_state(min(0.2, max(0.0, start + args.seconds - now)))
            except Timeout:
                continue
            if c.model_changed():
                if args.mcap:
                    rec.model(c.model, _mcap_geometry(c.model, args.scene))
                else:
                    rec.model(c.model)
            rec.state(st)
        if not args.mcap:
            try:
                rec.stats(c.stats())
            except KhzError:
                pass
        missed = c.counters["gaps"] - gaps0
    if rec.states == 0:
        raise Timeout(f"no state arrived from {c.state_endpoint} in {args.seconds:g} s")
    fmt = "MCAP, docs/viewer.md" if args.mcap else "format: docs/clients.md"
    print(f"{args.file}: {rec.states} states, model '{c.model.scene}' ({missed} missed; {fmt})")
    return 0


def cmd_plot(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rec = recording.read(args.file)
    if not rec.states:
        raise KhzError(f"{args.file} holds no states")
    t = rec.array("sim_time")
    series = [(rec.column(j), *rec.joint_series(j)) for j in args.joints]
    fig, ax = plt.subplots(3, 1, figsize=(9, 9), constrained_layout=True)
    for name, q, tau in series:
        ax[0].plot(t, q, label=name)
        ax[1].plot(t, tau, label=name)
    ax[0].set_ylabel("position (rad, m)")
    ax[0].set_title(f"{os.path.basename(args.file)}: scene "
                    f"'{rec.model.scene if rec.model else '?'}', {len(rec.states)} states")
    ax[1].set_ylabel("applied torque (N m, N)")
    ax[1].set_xlabel("simulated time (s)")
    for a in ax[:2]:
        a.grid(True, alpha=0.3)
        a.legend(loc="best", fontsize=8)
    late = rec.array("lateness_ns") / 1000.0
    ax[2].hist(late, bins=60, log=True, color="tab:gray")
    p = np.percentile(late, [50, 99]) if len(late) else [0, 0]
    ax[2].set_title(f"tick lateness: p50 {p[0]:.1f} us, p99 {p[1]:.1f} us, max {late.max():.1f} us")
    ax[2].set_xlabel("lateness (us)")
    ax[2].set_ylabel("ticks")
    fig.savefig(args.out, dpi=100)
    print(f"{args.out}: {', '.join(s[0] for s in series)} over {t[-1] - t[0]:.3f} s")
    return 0


def cmd_export(args) -> int:
    if args.csv == args.mcap:
        raise KhzError("say the format: --csv or --mcap")
    out = args.out or args.out_pos
    if args.mcap:
        return export_mcap(args, out or os.path.splitext(args.file)[0] + ".mcap")
    args.out = out
    rec = recording.read(args.file)
    m = rec.model
    q, qd, tau = rec.array("q"), rec.array("qd"), rec.array("tau")
    if m is not None:
        qn, vn = [""] * q.shape[1], [""] * qd.shape[1]
        for j in m.joints:
            for k in range(j.nq):
                qn[j.q_index + k] = j.name + (f"[{k}]" if j.nq > 1 else "")
            for k in range(j.nv):
                vn[j.qd_index + k] = j.name + (f"[{k}]" if j.nv > 1 else "")
    else:
        qn, vn = [str(i) for i in range(q.shape[1])], [str(i) for i in range(qd.shape[1])]
    scalars = ["seq", "sim_time", "tick_time_ns", "wall_time_ns", "mono_time_ns", "mode",
               "rate_hz", "flags", "reset_seq", "command_seq", "command_state_seq",
               "command_client_time_ns", "state_hash", "contact_method"]
    ticks = ["lateness_ns", "compute_ns", "ticks", "overruns", "missed", "commands", "on_time",
             "late", "superseded", "states_dropped", "watchdog_engaged", "lockstep_timeouts",
             "rejected"]
    header = (scalars + [f"stats.{s}" for s in ticks] + [f"q:{n}" for n in qn] +
              [f"qd:{n}" for n in vn] + [f"tau:{n}" for n in vn])
    arrays = ["body_pose", "body_twist", "haptic_wrench", "warnings"]
    widths = {a: max((len(getattr(s.msg, a)) for s in rec.states), default=0) for a in arrays}
    for a in arrays:
        header += [f"{a}[{i}]" for i in range(widths[a])]
    header.append("contacts")
    out = args.out or os.path.splitext(args.file)[0] + ".csv"
    f = sys.stdout if out == "-" else open(out, "w", newline="")
    w = csv.writer(f)
    w.writerow(header)
    for i, s in enumerate(rec.states):
        msg = s.msg
        row = [getattr(msg, k) for k in scalars] + [getattr(msg.stats, k) for k in ticks]
        row += [repr(x) for x in q[i]] + [repr(x) for x in qd[i]] + [repr(x) for x in tau[i]]
        for a in arrays:
            vals = list(getattr(msg, a))
            row += [repr(v) for v in vals] + [""] * (widths[a] - len(vals))
        row.append(";".join(f"{c.body1}-{c.body2}:{c.depth!r}" for c in msg.contacts))
        w.writerow(row)
    if f is not sys.stdout:
        f.close()
        print(f"{out}: {len(rec.states)} rows, {len(header)} columns", file=sys.stderr)
    return 0


def export_mcap(args, out: str) -> int:
    from . import mcap
    rec = recording.read(args.file)
    if not rec.states:
        raise KhzError(f"{args.file} holds no states")
    with mcap.Recorder(out, tf_rate=args.tf_rate) as w:
        model = None
        for s in rec.states:
            if s.model is not model and s.model is not None:
                model = s.model
                w.model(model, _mcap_geometry(model, args.scene))
            w.state(s)
    print(f"{out}: {w.states} states from {args.file} (MCAP: /khz/state, /khz/model, /tf, "
          f"/scene, /contacts; {w.bytes / 1e6:.2f} MB)", file=sys.stderr)
    return 0


# -------------------------------------------------------------------- view
def cmd_view(args) -> int:
    from . import view
    return view.cmd_view(args, connect)


# ---------------------------------------------------------------- campaign
def cmd_campaign(args) -> int:
    from . import campaign
    return campaign.cmd_campaign(args)


# -------------------------------------------------------------------- main
def parser() -> argparse.ArgumentParser:
    state_ep, cmd_ep = default_endpoints()
    p = argparse.ArgumentParser(prog="khz", description="Look at and steer a running khz-server.",
                                epilog="docs/clients.md has the details.")
    p.add_argument("--state", default=state_ep, help=f"state endpoint (default {state_ep})")
    p.add_argument("--command", default=cmd_ep, help=f"command endpoint (default {cmd_ep})")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds to wait for the server")
    p.add_argument("--server-key", help="CURVE: the server's public key (Z85); write --server-key=KEY, "
                   "as a key may begin with '-'")
    p.add_argument("--client-keys", help="CURVE: this client's keys (khz-server --curve-keygen output)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    s = sub.add_parser("status", help="live view of the server")
    s.add_argument("--count", type=int, help="views to print, then exit (default: until Ctrl-C)")
    s.add_argument("--interval", type=float, default=1.0, help="seconds between views")
    s.set_defaults(fn=cmd_status)
    s = sub.add_parser("model", help="joints and bodies with indices and limits")
    s.add_argument("--json", action="store_true", help="the ModelDescription as JSON")
    s.set_defaults(fn=cmd_model)
    for name, text in (("pause", "pause the loop"), ("resume", "resume the loop"),
                       ("reset", "back to the initial state"), ("settings", "every setting")):
        sub.add_parser(name, help=text).set_defaults(fn=cmd_control)
    s = sub.add_parser("step", help="run N ticks, then pause")
    s.add_argument("n", type=int)
    s.set_defaults(fn=cmd_control)
    s = sub.add_parser("mode", help="realtime, lockstep or fast")
    s.add_argument("mode", choices=["realtime", "lockstep", "fast"])
    s.set_defaults(fn=cmd_control)
    s = sub.add_parser("method", help="the contact method (penalty, deepest, none, ...)")
    s.add_argument("method")
    s.set_defaults(fn=cmd_control)
    s = sub.add_parser("set", help="change a setting at run time")
    s.add_argument("name")
    s.add_argument("value")
    s.set_defaults(fn=cmd_control)
    s = sub.add_parser("push", help="apply a force to a body for a while")
    s.add_argument("body")
    s.add_argument("--force", required=True, metavar="FX,FY,FZ", help="N, world frame")
    s.add_argument("--at", metavar="X,Y,Z", help="point of application, world frame (default: "
                   "the centre of mass)")
    s.add_argument("--for", dest="seconds", type=float, required=True, metavar="SECONDS",
                   help="duration in simulated time")
    s.set_defaults(fn=cmd_push)
    s = sub.add_parser("fault", help="a sensor, drive or command-channel fault (docs/hil.md)")
    s.add_argument("target", help="a sensor's name, a drive's joint, or 'commands'")
    s.add_argument("fault", choices=FAULTS)
    s.add_argument("--value", type=float, default=0.0,
                   help="bias: added to every value; torque_loss: the share kept, 0..1")
    s.add_argument("--for", dest="seconds", type=float, default=0.0, metavar="SECONDS",
                   help="duration in simulated time (default: until cleared with 'none')")
    s.set_defaults(fn=cmd_fault)
    s = sub.add_parser("record", help="record the state stream into FILE (.khzrec or --mcap)")
    s.add_argument("file")
    s.add_argument("--seconds", type=float, required=True)
    s.add_argument("--mcap", action="store_true", help="write MCAP (Foxglove) instead of .khzrec")
    s.add_argument("--scene", help="MCAP: the scene file the server loaded, for /scene "
                   "(default: the shapes in the server's Describe)")
    s.add_argument("--tf-rate", type=float, default=100.0, metavar="HZ",
                   help="MCAP: /tf and /contacts per second of wall time (0 = every state; "
                   "/khz/state always has every state)")
    s.set_defaults(fn=cmd_record)
    s = sub.add_parser("plot", help="joint positions, torques and the lateness histogram")
    s.add_argument("file")
    s.add_argument("joints", nargs="+", metavar="JOINT")
    s.add_argument("--out", required=True, metavar="PNG")
    s.set_defaults(fn=cmd_plot)
    s = sub.add_parser("export", help="a recording as CSV or MCAP")
    s.add_argument("file")
    s.add_argument("out_pos", nargs="?", metavar="OUT", help="output file (as --out)")
    s.add_argument("--csv", action="store_true", help="CSV, one row per state")
    s.add_argument("--mcap", action="store_true", help="MCAP with protobuf schemas (Foxglove)")
    s.add_argument("--out", help="output file (default FILE with .csv / .mcap; CSV: - = stdout)")
    s.add_argument("--scene", help="MCAP: the scene file of the recording, for /scene "
                   "(default: the shapes in the recording's model description)")
    s.add_argument("--tf-rate", type=float, default=100.0, metavar="HZ",
                   help="MCAP: /tf and /contacts per second (0 = every state)")
    s.set_defaults(fn=cmd_export)
    s = sub.add_parser("view", help="a live 3D view of the server in a browser, or a recording's "
                       "playback (--play)")
    s.add_argument("--scene", help="draw the shapes of this scene file (the one the server "
                   "loaded) instead of those in the server's Describe")
    s.add_argument("--bind", default="127.0.0.1", help="address to serve the page on (default "
                   "127.0.0.1; any other needs --server-key and --client-keys)")
    s.add_argument("--port", type=int, default=8600, help="port (default 8600; 0 = any free)")
    s.add_argument("--fps", type=float, default=60.0, help="states pushed per second at most")
    s.add_argument("--play", metavar="FILE", help="play a recording (.khzrec) instead")
    s.set_defaults(fn=cmd_view)
    s = sub.add_parser("campaign", help="run a matrix of simulations in this process or on Dask "
                       "(Python controllers in process, controller programs against a "
                       "khz-server per run; docs/campaigns.md)")
    s.add_argument("spec", metavar="SPEC.yaml", help="the campaign: scenes, parameters, seeds, "
                   "controllers")
    s.add_argument("--out", help="output directory (default: the spec's output, else ./NAME); "
                   "a campaign resumes from the rows already in OUT/runs.csv")
    s.add_argument("--dask", action="store_true", help="run on a Dask LocalCluster (all cores; "
                   "the default when python3-distributed imports, the machine has more than one "
                   "core and more than one run is to do)")
    s.add_argument("--serial", action="store_true", help="run in this process, one run after "
                   "the other")
    s.add_argument("--workers", type=int, help="LocalCluster workers (default: the cores)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler "
                   "(tcp://host:8786) instead")
    s.add_argument("--retries", type=int, help="attempts after a failed run (default: the "
                   "spec's retries, else 2)")
    s.add_argument("--no-plot", action="store_true", help="no summary.png")
    s.set_defaults(fn=cmd_campaign)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except (KhzError, NotConnected) as e:
        print(f"khz {args.cmd}: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
