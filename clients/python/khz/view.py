"""khz.view — `khz view`: a live 3D view of a running khz-server in a browser,
or the playback of a recording (`khz view --play FILE.khzrec`).

A separate process, like the other tools: one thread owns a khz.Client (the
state stream and the control requests), an asyncio loop serves the page
(clients/viewer: index.html, viewer.js, three.js from node_modules) and one
WebSocket per browser. The browser gets the model and the geometry once, then
the newest state at the display's rate (--fps, 60 by default) whatever the
server's rate, with every state's values of the plotted joints since the last
one (the time plots show each state; the 3D view only the newest).

The shapes come from the server's Describe (ModelDescription.geoms and
.meshes), so any server's scene is drawn without its file. With --scene FILE
(or a server older than those fields) they come from the scene file instead,
read by khz-geoms (the khz loader itself, so that body indices agree; checked
against Describe's body names).

Messages to the browser (strict JSON text: a non-finite number is null, see page_json):
    {"t": "model", "scene", "bodies", "joints", "actuators", "contact_methods",
     "contact_method", "geoms", "meshes", "sensors", "drives",
     "source": "live"|"recording", "endpoint"}
    {"t": "state", "seq", "sim_time", "mode", "rate_hz", "flags", "pose", "twist",
     "q", "qd", "tau", "contacts", "stats", "warnings", "contact_method",
     "measured_hz", "paused", "server" (GetStats, twice a second), "index"?,
     "series"?}    (pose: 7 per body, twist: 6 per body, angular then linear;
     contacts: 12 numbers each: position, normal, depth, force, body1, body2;
     series: every state since the last message of the indices the page
     plots, {"seq": [...], "t": [...], "q": {index: [...]}, "qd", "tau", "sensor"};
     hil: the HIL readings or null, {"values" (NaN -> null), "age" (ticks per
     sensor), "faults" (FaultType per sensor), "drive_faults", "shown_seq"})
    {"t": "reply", "op", "ok", "text"}
    {"t": "timeline", "n", "t0", "t1", "index", "playing", "speed"}   (playback)
Foxglove (its app, or any foxglove.websocket.v1 client) connects to
ws://HOST:PORT/foxglove with that subprotocol: /khz/state, /tf, /scene,
/contacts and, with HIL sensors or drives, /khz/sensors.

From the browser: {"op": "plot", "q": [indices], "qd": [...], "tau": [...], "sensor": [...]} (what
    the series carry), {"op": "pause"|"resume"|"reset"|"step" (n)|"method" (name)
    |"contacts" (on)|"push" (body, force, torque, duration)
    |"play"|"stop"|"seek" (index)|"speed" (x)|"frame" (delta)|"ack"}
    ("ack": the page took a state; a page that acknowledges has at most two
    unacknowledged, see Server._send_state)
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import json
import math
import mimetypes
import os
import queue
import shutil
import socket
import subprocess
import sys
import threading
import time
from http import HTTPStatus

from .errors import KhzError, Timeout
from .model import MODE_NAMES, WARNINGS, Model, State, flag_names
from khz_msgs.v1 import state_pb2

try:
    from . import _paths  # written by meson into the build tree
except ImportError:  # installed: $KHZ_VIEWER_DIR and PATH
    _paths = None

DEFAULT_PORT = 8600
FOXGLOVE_SUBPROTOCOL = "foxglove.websocket.v1"


# ------------------------------------------------------------------ geometry
def geoms_program() -> str:
    """khz-geoms: $KHZ_GEOMS, the build tree's, or the one in PATH."""
    for p in (os.environ.get("KHZ_GEOMS"), _paths and _paths.GEOMS,
              os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "khz-geoms"),
              shutil.which("khz-geoms")):
        if p and os.access(p, os.X_OK):
            return p
    raise KhzError("khz-geoms not found (built as build/tools/khz-geoms, installed beside "
                   "khz-server; or set $KHZ_GEOMS)")


def scene_for(model: Model, scene: str | None) -> str:
    """The scene file to read the shapes from: --scene, else the server's
    scene when it is 'default' or a file that exists here."""
    if scene:
        return scene
    if model.scene == "default" or os.path.isfile(model.scene):
        return model.scene
    raise KhzError(f"the server runs the scene '{model.scene}' and its description carries no "
                   "shapes (a server older than ModelDescription.geoms): give the file it "
                   "loaded with --scene FILE")


def load_geometry(model: Model | None, scene: str) -> dict:
    """The shapes of `scene` (khz-geoms JSON), checked against the model."""
    prog = geoms_program()
    r = subprocess.run([prog, scene], capture_output=True, text=True)
    if r.returncode != 0:
        raise KhzError(f"cannot read the shapes of {scene}: {r.stderr.strip()}")
    g = json.loads(r.stdout)
    g["from"] = scene
    if model is not None and g["bodies"] != list(model.body_names):
        mine, theirs = g["bodies"], list(model.body_names)
        i = next((k for k in range(min(len(mine), len(theirs))) if mine[k] != theirs[k]),
                 min(len(mine), len(theirs)))
        raise KhzError(
            f"{scene} is not the scene the server runs ('{model.scene}'): body {i} is "
            f"'{mine[i] if i < len(mine) else '(none)'}' in the file, "
            f"'{theirs[i] if i < len(theirs) else '(none)'}' on the server "
            f"({len(mine)} vs {len(theirs)} bodies)")
    return g


def wire_geometry(model: Model) -> dict | None:
    """The shapes the server sent in Describe (ModelDescription.geoms and
    .meshes) in khz-geoms' form, or None when it sent none (a server from
    before those fields, or a model without geoms)."""
    msg = model.msg
    if not len(msg.geoms):
        return None
    geoms = [{"body": g.body, "type": g.type, "size": list(g.size), "pos": list(g.pos),
              "quat": list(g.quat), "rgba": list(g.rgba), "visual": 1 if g.visual else 0,
              "mesh": g.mesh} for g in msg.geoms]
    meshes = [{"name": m.name, "vertices": list(m.vertices), "faces": list(m.faces),
               "omitted": m.omitted, "lower": list(m.lower), "upper": list(m.upper)}
              for m in msg.meshes]
    return {"scene": msg.scene, "bodies": list(model.body_names), "geoms": geoms,
            "meshes": meshes, "from": "describe"}


def geometry_for(model: Model, scene: str | None) -> dict:
    """The shapes to draw: from the file given with --scene (checked against
    the model), else from the server's Describe, else (an older server) from
    the server's scene file when it is 'default' or a path that exists here."""
    if not scene:
        g = wire_geometry(model)
        if g is not None:
            return g
    return load_geometry(model, scene_for(model, scene))


def model_message(model: Model, geo: dict, source: str, endpoint: str) -> dict:
    msg = model.msg
    return {
        "t": "model", "source": source, "endpoint": endpoint, "scene": msg.scene,
        "bodies": list(model.body_names),
        "joints": [{"name": j.name, "type": j.type, "body": j.body, "q_index": j.q_index,
                    "nq": j.nq, "qd_index": j.qd_index, "nv": j.nv} for j in msg.joints],
        "actuators": [a.name for a in msg.actuators],
        "masses": [b.mass for b in msg.bodies],
        "contact_methods": list(msg.contact_methods), "contact_method": msg.contact_method,
        "geoms": geo["geoms"], "meshes": geo["meshes"], "geometry_from": geo.get("from"),
        # hardware-in-the-loop sensors and drives (docs/hil.md): their readings are
        # State.sensor_values[value_index : value_index + dim]
        "sensors": [{"name": sn.name, "type": sn.type, "object": sn.object,
                     "value_index": sn.value_index, "dim": sn.dim,
                     "rate_divisor": sn.rate_divisor, "latency_ticks": sn.latency_ticks}
                    for sn in msg.sensors],
        "drives": [{"joint": d.joint, "mode": d.mode} for d in msg.drives],
        "fault_names": [FAULT_NAMES.get(i, str(i)) for i in range(max(FAULT_NAMES) + 1)],
    }


# FaultType codes (state.proto) by name: "freeze", "dropout", ...
FAULT_NAMES = {v.number: v.name[len("FAULT_"):].lower()
               for v in state_pb2.FaultType.DESCRIPTOR.values}


def finite_or_none(values) -> list:
    """JSON has no NaN (a sensor's dropout reads NaN): null instead."""
    return [x if math.isfinite(x) else None for x in values]


def _finite(x):
    """x with every non-finite float (NaN, inf) replaced by None, in dicts and lists."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v) for v in x]
    return x


def page_json(msg: dict) -> str:
    """A message for the page as strict JSON: JSON has no NaN or Infinity
    (Python writes them, the browser's JSON.parse throws on them), so a
    non-finite number (a blown-up body's pose in a recording, a sensor's
    dropout) goes as null; the page shows such a body as not drawn."""
    try:
        return json.dumps(msg, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(msg), allow_nan=False)


def sensor_message(st) -> dict:
    """The HIL readings of a state for the page: values (NaN -> null), each
    sensor's age in ticks (its sampling tick against the state's tick since the
    last reset), fault codes, drive faults, and the tick the state was shown at."""
    tick = st.seq - st.reset_seq
    return {"values": finite_or_none(st.sensor_values),
            "age": [tick - t for t in st.sensor_sampled_tick],
            "faults": list(st.sensor_faults), "drive_faults": list(st.drive_faults),
            "shown_seq": st.shown_seq}


def state_message(st, measured_hz: float | None = None) -> dict:
    """One state for the browser (st: a khz.v1.State message)."""
    s = st.stats
    contacts = []
    for c in st.contacts:
        contacts += [*c.position, *c.normal, c.depth, *c.force, c.body1, c.body2]
    return {
        "t": "state", "seq": st.seq, "sim_time": st.sim_time,
        "mode": MODE_NAMES.get(st.mode, str(st.mode)), "rate_hz": st.rate_hz,
        "flags": flag_names(st.flags), "pose": list(st.body_pose), "q": list(st.q),
        "qd": list(st.qd), "tau": list(st.tau), "twist": list(st.body_twist),
        "contacts": contacts,
        "stats": {"lateness_ns": s.lateness_ns, "compute_ns": s.compute_ns, "ticks": s.ticks,
                  "overruns": s.overruns, "missed": s.missed,
                  "states_dropped": s.states_dropped, "commands": s.commands},
        "warnings": {(WARNINGS[i] if i < len(WARNINGS) else str(i)): n
                     for i, n in enumerate(st.warnings) if n},
        "contact_method": st.contact_method, "measured_hz": measured_hz,
        "hil": sensor_message(st) if (st.sensor_values or st.drive_faults) else None,
    }


# ------------------------------------------------------------ plot series
SERIES_MAX = 20000  # samples held for the page between two frames (20 s at 1 kHz)


class Series:
    """Every state's values of the plotted joints, for the page's time plots:
    the source adds one sample per state (the server's rate), the page takes
    them in a batch with each frame (the display's rate). `select` holds the
    State.q / .qd / .tau indices the pages plot (the union over the pages)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.select: dict[str, tuple[int, ...]] = {"q": (), "qd": (), "tau": (), "sensor": ()}
        self.seq: list[int] = []
        self.t: list[float] = []
        self.v: dict[str, list[list[float]]] = {"q": [], "qd": [], "tau": [], "sensor": []}
        self.dropped = 0

    def set(self, select: dict[str, tuple[int, ...]]) -> None:
        with self.lock:
            self.select = select
            self._clear()

    def _clear(self) -> None:
        self.seq, self.t = [], []
        self.v = {k: [] for k in self.v}

    def add(self, seq: int, t: float, msg) -> None:
        if not any(self.select.values()):
            return
        with self.lock:
            # (read under the lock: rows of an older selection would not match
            # the columns take() builds from the new one)
            sel = self.select
            if len(self.t) >= SERIES_MAX:  # the page stopped taking them
                self.dropped += len(self.t)
                self._clear()
            self.seq.append(seq)
            self.t.append(t)
            for k, arr in (("q", msg.q), ("qd", msg.qd), ("tau", msg.tau),
                           ("sensor", msg.sensor_values)):
                n = len(arr)
                # (None: no such value, or NaN, a sensor's dropout: a gap in the plot)
                self.v[k].append([arr[i] if i < n and math.isfinite(arr[i]) else None
                                  for i in sel[k]])

    def take(self) -> dict | None:
        """The samples since the last take, columns per index:
        {"seq", "t", "q": {index: [...]}, "qd": ..., "tau": ...}."""
        with self.lock:
            if not self.t:
                return None
            out = {"seq": self.seq, "t": self.t}
            for k, rows in self.v.items():
                out[k] = {str(i): [r[j] for r in rows] for j, i in enumerate(self.select[k])}
            self._clear()
            return out


INFLIGHT = 2  # states sent to a page and not yet acknowledged, at most


def merge_series(chunks: list[dict]) -> dict:
    """Series chunks (Series.take) in order as one; an index missing from a
    chunk (the selection changed between them) is None there."""
    if len(chunks) == 1:
        return chunks[0]
    out = {"seq": [], "t": []}
    for k in ("q", "qd", "tau", "sensor"):
        out[k] = {i: [] for i in sorted({i for c in chunks for i in c.get(k, {})}, key=int)}
    for c in chunks:
        n = len(c["t"])
        out["seq"] += c["seq"]
        out["t"] += c["t"]
        for k in ("q", "qd", "tau", "sensor"):
            for i, col in out[k].items():
                col += c.get(k, {}).get(i, [None] * n)
    return out


# -------------------------------------------------------------- live source
class LiveSource:
    """A thread that owns the client: keeps the newest state and carries out
    the browsers' requests in order."""

    source = "live"

    def __init__(self, client, geo: dict, scene: str | None):
        self.c = client
        self.geo = geo
        self.scene = scene
        self.model = client.model
        self.latest: State | None = None
        self.version = 0
        self.requests: queue.Queue = queue.Queue()
        self.replies: queue.Queue = queue.Queue()
        self.stop = threading.Event()
        self.measured: float | None = None
        self.server: dict = {}
        self.last_push: dict = {}  # body -> the simulated time of its last push
        try:
            self.publish_contacts = client.get_setting("publish_contacts") == "true"
        except KhzError:
            self.publish_contacts = False
        self.error: str | None = None
        self.series = Series()
        self.thread = threading.Thread(target=self._run, name="khz-view-client", daemon=True)

    def model_json(self) -> dict:
        m = model_message(self.model, self.geo, self.source, self.c.state_endpoint)
        m["publish_contacts"] = self.publish_contacts
        return m

    def _poll_stats(self) -> None:
        """The loop's statistics (GetStats): paused or not (a paused loop
        publishes nothing, so the states cannot say it), lateness and
        compute percentiles, clients."""
        try:
            s = self.c.stats()
        except KhzError:
            return
        h = lambda x: {"p50": x.p50, "p99": x.p99, "max": x.max, "count": x.count}  # noqa: E731
        self.server = {"paused": s.paused, "lateness": h(s.lateness), "compute": h(s.compute),
                       "clients": s.clients, "rejected": s.rejected,
                       "states_published": s.states_published}
        self.version += 1

    def _run(self) -> None:
        window: collections.deque = collections.deque()
        next_stats = 0.0
        while not self.stop.is_set():
            if time.monotonic() >= next_stats:
                self._poll_stats()
                next_stats = time.monotonic() + 0.5
            while True:
                try:
                    req = self.requests.get_nowait()
                except queue.Empty:
                    break
                self.replies.put(self._apply(req))
                if req.get("op") in ("pause", "resume", "step", "reset"):
                    next_stats = 0.0
            try:
                # every state in order (the plots take each one), not only the newest
                st = self.c.next_state(0.02)
            except Timeout:
                continue
            except KhzError as e:
                self.error = str(e)
                self.version += 1
                time.sleep(0.2)
                continue
            if self.c.model_changed():
                try:
                    self.geo = geometry_for(self.c.model, self.scene)
                except KhzError as e:
                    self.error = str(e)
                self.model = self.c.model
                self.replies.put({"t": "model-changed"})
            self.series.add(st.msg.seq, st.msg.sim_time, st.msg)
            now = time.monotonic()
            window.append((now, st.seq))
            while window and now - window[0][0] > 1.0:
                window.popleft()
            if len(window) > 1 and window[-1][0] > window[0][0]:
                self.measured = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
            self.latest = st
            self.version += 1

    def _apply(self, req: dict) -> dict:
        op = req.get("op")
        c = self.c
        try:
            if op == "pause":
                text = f"paused at state {c.pause()}"
            elif op == "resume":
                text = f"resumed at state {c.resume()}"
            elif op == "reset":
                text = f"reset: state {c.reset()}"
            elif op == "step":
                n = int(req.get("n", 1))
                text = f"stepped {n}: paused at state {c.step(n)}"
            elif op == "method":
                c.set_contact_method(str(req["name"]))
                text = f"contact method {req['name']}"
            elif op == "contacts":
                c.set_setting("publish_contacts", bool(req.get("on")))
                value = c.get_setting("publish_contacts")
                self.publish_contacts = value == "true"
                text = f"publish_contacts {value}"
            elif op == "push":
                # The page pushes every 50 ms of its own time for 0.06 s of
                # simulated time; a server behind its clock (a loaded
                # machine, a slow step) would collect them past its limit of
                # wrenches at once. So a body gets a new push only once
                # two thirds of its last one have passed in simulated time.
                body = int(req["body"])
                duration = float(req.get("duration", 0.1))
                st = self.latest
                now = st.msg.sim_time if st is not None else None
                last = self.last_push.get(body)
                if now is not None and last is not None and last <= now < last + 2 * duration / 3:
                    text = f"push {self.model.body_names[body]} (the last one still acts)"
                else:
                    c.apply_wrench(body, [float(x) for x in req["force"]],
                                   [float(x) for x in req.get("torque", (0, 0, 0))], duration)
                    if now is not None:
                        self.last_push[body] = now
                    text = f"push {self.model.body_names[body]}"
            else:
                return {"t": "reply", "op": op, "ok": False, "text": f"unknown op '{op}'"}
            return {"t": "reply", "op": op, "ok": True, "text": text}
        except (KhzError, KeyError, ValueError, TypeError, IndexError) as e:
            return {"t": "reply", "op": op, "ok": False, "text": str(e)}

    def start(self) -> None:
        self.thread.start()

    def frame(self) -> tuple[int, dict | None]:
        st = self.latest
        if st is None:
            return self.version, None
        msg = state_message(st.msg, self.measured)
        series = self.series.take()
        if series:
            msg["series"] = series
        msg["server"] = self.server
        msg["paused"] = bool(self.server.get("paused"))
        if self.error:
            msg["error"] = self.error
        return self.version, msg

    def current(self):
        """The newest state (a khz State) or None."""
        return self.latest

    def submit(self, req: dict) -> None:
        self.requests.put(req)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)


# --------------------------------------------------------- recording source
class PlaybackSource:
    """A recording played on a timeline: play / stop, seek, speed, frame."""

    source = "recording"

    def __init__(self, rec, geo: dict, path: str):
        self.rec = rec
        self.geo = geo
        self.path = path
        self.model = rec.model
        # the timeline: simulated time made monotone (a reset in the recording
        # starts sim_time again; the timeline goes on by one period there)
        self.times = [0.0]
        for a, b in zip(rec.states, rec.states[1:]):
            dt = b.msg.sim_time - a.msg.sim_time
            period = 1.0 / b.msg.rate_hz if b.msg.rate_hz > 0 else 1e-3
            self.times.append(self.times[-1] + (dt if dt > 0 else period))
        self.index = 0
        self.playing = True
        self.speed = 1.0
        self.version = 0
        self._clock = time.monotonic()
        self._t = self.times[0]
        self.replies: queue.Queue = queue.Queue()
        self.series = Series()
        self._fed = -1  # the last state index given to the series

    def model_json(self) -> dict:
        return model_message(self.model, self.geo, self.source, self.path)

    def start(self) -> None:
        pass

    def close(self) -> None:
        pass

    def _seek_time(self, t: float) -> None:
        import bisect
        i = bisect.bisect_right(self.times, t) - 1
        self._set(max(0, min(i, len(self.times) - 1)))

    def _set(self, i: int) -> None:
        if i != self.index:
            self.index = i
            self.version += 1

    def timeline(self) -> dict:
        return {"t": "timeline", "n": len(self.times), "t0": self.times[0], "t1": self.times[-1],
                "index": self.index, "playing": self.playing, "speed": self.speed}

    def frame(self) -> tuple[int, dict | None]:
        now = time.monotonic()
        if self.playing:
            self._t += (now - self._clock) * self.speed
            if self._t >= self.times[-1]:
                self._t = self.times[-1]
                self.playing = False
                self.version += 1
            self._seek_time(self._t)
        self._clock = now
        # the plots get every recorded state the timeline passed since the last
        # frame (a jump -- seek, a step back -- gives the one state)
        first = self._fed + 1 if 0 <= self.index - self._fed <= SERIES_MAX else self.index
        for i in range(first, self.index + 1):
            m = self.rec.states[i].msg
            self.series.add(m.seq, self.times[i], m)
        self._fed = self.index
        msg = state_message(self.rec.states[self.index].msg)
        series = self.series.take()
        if series:
            msg["series"] = series
        msg["index"] = self.index
        msg["timeline_t"] = self.times[self.index]
        return self.version, msg

    def current(self):
        return self.rec.states[self.index]

    def submit(self, req: dict) -> None:
        op = req.get("op")
        try:
            if op in ("play", "resume"):
                if self.index >= len(self.times) - 1:
                    self._set(0)
                self.playing = True
                self._t = self.times[self.index]
            elif op in ("stop", "pause"):
                self.playing = False
            elif op == "seek":
                self.playing = False
                self._set(max(0, min(int(req["index"]), len(self.times) - 1)))
            elif op in ("frame", "step"):
                self.playing = False
                self._set(max(0, min(self.index + int(req.get("delta", req.get("n", 1))),
                                     len(self.times) - 1)))
            elif op == "speed":
                self.speed = max(0.01, min(100.0, float(req["x"])))
            elif op == "reset":
                self.playing = False
                self._set(0)
            else:
                self.replies.put({"t": "reply", "op": op, "ok": False,
                                  "text": f"'{op}' does not apply to a recording"})
                return
            self._t = self.times[self.index]
            self.version += 1
            self.replies.put(self.timeline())
        except (KeyError, ValueError, TypeError) as e:
            self.replies.put({"t": "reply", "op": op, "ok": False, "text": str(e)})


# ------------------------------------------------------------------- server
def viewer_dir() -> str:
    for d in (os.environ.get("KHZ_VIEWER_DIR"), _paths and _paths.VIEWER_DIR):
        if d and os.path.isfile(os.path.join(d, "index.html")):
            if not os.path.isfile(os.path.join(d, "node_modules", "three", "build",
                                               "three.module.js")):
                raise KhzError(f"{d}/node_modules has no three.js: run scripts/bootstrap.sh "
                               f"(npm ci in {d})")
            return d
    raise KhzError("the viewer's page (clients/viewer) is not found: set $KHZ_VIEWER_DIR to "
                   "the clients/viewer folder of the khz sources")


def is_loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(a[4][0]).is_loopback
                       for a in socket.getaddrinfo(host, None))
        except OSError:
            return False


# only these are served: the page, its module and three.js's ES modules
_SERVED_PREFIXES = ("node_modules/three/build/", "node_modules/three/examples/jsm/")


class Viewer:
    def __init__(self, src, page_dir: str, host: str, port: int, fps: float):
        self.src = src
        self.dir = os.path.realpath(page_dir)
        self.host, self.port, self.fps = host, port, fps
        self.clients: set = set()
        self.selections: dict = {}  # page -> its plotted indices
        self.inflight: dict = {}    # page -> states sent, not yet acknowledged
        self.pending: dict = {}     # page -> plot series it has not been sent
        self.fox = None
        self.sensors = None  # khz.mcap.SensorReadings (the Foxglove bridge's /khz/sensors)

    def _file(self, path: str):
        rel = path.split("?", 1)[0].lstrip("/") or "index.html"
        if rel not in ("index.html", "viewer.js") and not rel.startswith(_SERVED_PREFIXES):
            return HTTPStatus.NOT_FOUND, [("Content-Type", "text/plain")], b"not found\n"
        full = os.path.realpath(os.path.join(self.dir, rel))
        if not full.startswith(self.dir + os.sep) or not os.path.isfile(full):
            return HTTPStatus.NOT_FOUND, [("Content-Type", "text/plain")], b"not found\n"
        ctype = "text/javascript" if full.endswith(".js") else (
            mimetypes.guess_type(full)[0] or "application/octet-stream")
        with open(full, "rb") as f:
            body = f.read()
        return HTTPStatus.OK, [("Content-Type", ctype), ("Cache-Control", "no-cache")], body

    async def _process_request(self, path, headers):
        if path.startswith("/ws") or path.startswith("/foxglove"):
            return None
        return self._file(path)

    async def _foxglove(self, ws) -> None:
        """Foxglove's WebSocket protocol (foxglove.websocket.v1): /khz/state,
        /tf, /scene, /contacts and (a model with HIL sensors or drives)
        /khz/sensors advertised with their protobuf schemas; the newest state
        at most --fps times a second to each subscription."""
        import base64
        import struct

        from . import mcap
        from khz_msgs.v1 import state_pb2
        if self.fox is None:
            self.fox = mcap.Foxglove()
        fox = self.fox
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        chans = {1: ("/khz/state", "khz.v1.State", mcap._file_set(state_pb2.DESCRIPTOR)),
                 2: ("/tf", "foxglove.FrameTransforms", fox.schema("FrameTransforms")),
                 3: ("/scene", "foxglove.SceneUpdate", fox.schema("SceneUpdate")),
                 4: ("/contacts", "foxglove.SceneUpdate", fox.schema("SceneUpdate"))}
        # the HIL readings by sensor name, as in MCAP (khz.mcap.SensorReadings),
        # when the model has sensors or drives
        md = self.src.model.msg
        if md.sensors or md.drives:
            if self.sensors is None:
                self.sensors = mcap.KhzSensors()
            chans[5] = ("/khz/sensors", "khz.mcap.SensorReadings", self.sensors.schema)
        await ws.send(json.dumps({"op": "serverInfo", "name": "khz view", "capabilities": [],
                                  "supportedEncodings": [], "metadata": {},
                                  "sessionId": str(time.time_ns())}))
        await ws.send(json.dumps({"op": "advertise", "channels": [
            {"id": i, "topic": t, "encoding": "protobuf", "schemaName": n, "schema": b64(d),
             "schemaEncoding": "protobuf"} for i, (t, n, d) in chans.items()]}))
        subs: dict[int, int] = {}  # subscription id -> channel id
        new_scene: set[int] = set()
        had_contacts: dict[int, bool] = {}  # /contacts subscription -> the last update had some

        async def read() -> None:
            async for text in ws:
                if not isinstance(text, str):
                    continue
                try:
                    m = json.loads(text)
                except ValueError:
                    continue
                if m.get("op") == "subscribe":
                    for sub in m.get("subscriptions", []):
                        if sub.get("channelId") in chans:
                            subs[int(sub["id"])] = sub["channelId"]
                            new_scene.add(int(sub["id"]))
                elif m.get("op") == "unsubscribe":
                    for i in m.get("subscriptionIds", []):
                        subs.pop(i, None)

        def frame(sub: int, ns: int, payload: bytes) -> bytes:
            return b"\x01" + struct.pack("<IQ", sub, ns) + payload

        reader = asyncio.ensure_future(read())
        sent = None
        try:
            while not reader.done():
                st = self.src.current()
                if st is not None and subs:
                    ns = st.msg.wall_time_ns
                    bodies = list(self.src.model.body_names)
                    for sub, ch in list(subs.items()):
                        if ch == 3 and sub in new_scene:
                            new_scene.discard(sub)
                            up = mcap.scene_update(fox, self.src.geo, bodies, ns)
                            await ws.send(frame(sub, ns, up.SerializeToString()))
                        elif st is not sent and ch == 1:
                            await ws.send(frame(sub, ns, st.raw or st.msg.SerializeToString()))
                        elif st is not sent and ch == 2:
                            tf = mcap.frame_transforms(fox, bodies, st.msg, ns)
                            await ws.send(frame(sub, ns, tf.SerializeToString()))
                        elif st is not sent and ch == 5:
                            # (named after the model now: it may have changed since)
                            up = mcap.sensor_readings(self.sensors, self.src.model.msg, st.msg, ns)
                            await ws.send(frame(sub, ns, up.SerializeToString()))
                        elif st is not sent and ch == 4 and (st.msg.contacts
                                                             or had_contacts.get(sub, True)):
                            # points and force arrows; one empty update after the last
                            up = mcap.contacts_update(fox, st.msg, ns)
                            await ws.send(frame(sub, ns, up.SerializeToString()))
                            had_contacts[sub] = bool(st.msg.contacts)
                    sent = st
                await asyncio.sleep(1.0 / self.fps)
        finally:
            reader.cancel()

    async def _handler(self, ws, path=None):
        if getattr(ws, "subprotocol", None) == FOXGLOVE_SUBPROTOCOL:
            try:
                await self._foxglove(ws)
            except Exception:
                pass
            return
        self.clients.add(ws)
        try:
            await ws.send(page_json(self.src.model_json()))
            if isinstance(self.src, PlaybackSource):
                await ws.send(page_json(self.src.timeline()))
            _, msg = self.src.frame()  # the newest state at once (a paused server sends none)
            series = msg.pop("series", None) if msg is not None else None
            if series:  # (taken from the stream: the other pages get them with their next state)
                for other in self.clients:
                    if other is not ws:
                        self.pending.setdefault(other, []).append(series)
            if msg is not None:
                await ws.send(page_json(msg))
            async for text in ws:
                try:
                    req = json.loads(text)
                except ValueError:
                    continue
                if isinstance(req, dict) and req.get("op") == "ack":
                    # (a page that acknowledges is sent states as it takes them; a
                    # client that never does gets every one)
                    self.inflight[ws] = max(0, self.inflight.get(ws, 0) - 1)
                elif isinstance(req, dict) and req.get("op") == "plot":
                    self._select(ws, req)
                elif isinstance(req, dict):
                    self.src.submit(req)
        except Exception:
            pass
        finally:
            self.clients.discard(ws)
            self.inflight.pop(ws, None)
            self.pending.pop(ws, None)
            self.selections.pop(ws, None)
            self._select(None, None)

    def _select(self, ws, req: dict | None) -> None:
        """A page's plotted indices ({"op": "plot", "q": [...], "qd": [...],
        "tau": [...], "sensor": [State.sensor_values indices]}): the series carry
        the union over the pages."""
        if ws is not None:
            try:
                self.selections[ws] = {k: {int(i) for i in req.get(k, ())}
                                       for k in ("q", "qd", "tau", "sensor")}
            except (TypeError, ValueError):
                return
        union = {k: tuple(sorted(set().union(*(s[k] for s in self.selections.values()))))
                 for k in ("q", "qd", "tau", "sensor")}
        self.src.series.set(union)

    async def _broadcast(self, text: str) -> None:
        for ws in list(self.clients):
            try:
                await ws.send(text)
            except Exception:
                self.clients.discard(ws)

    async def _send_state(self, msg: dict) -> None:
        """The newest state to each page that has taken the ones before: a page
        acknowledges every state ({"op": "ack"}) and has at most INFLIGHT
        unacknowledged; a page that is behind (software WebGL under load draws a
        frame a second) skips states instead of reading them from socket
        buffers seconds late. The plot series it skipped come with the next
        state it is sent (at most SERIES_MAX samples held per page)."""
        series = msg.pop("series", None)
        for ws in list(self.clients):
            pend = self.pending.setdefault(ws, [])
            if series:
                pend.append(series)
                while len(pend) > 1 and sum(len(p["t"]) for p in pend) > SERIES_MAX:
                    pend.pop(0)  # a page that stopped reading: the oldest go (a gap)
            if self.inflight.get(ws, 0) >= INFLIGHT:
                continue
            out = dict(msg)
            if pend:
                out["series"] = merge_series(pend)
                pend.clear()
            if ws in self.inflight:
                self.inflight[ws] += 1
            try:
                await ws.send(page_json(out))
            except Exception:
                self.clients.discard(ws)

    async def _pump(self) -> None:
        """The newest state at the display's rate; replies as they come."""
        sent = -1
        period = 1.0 / self.fps
        while True:
            t0 = time.monotonic()
            while True:
                try:
                    r = self.src.replies.get_nowait()
                except queue.Empty:
                    break
                if r.get("t") == "model-changed":
                    r = self.src.model_json()
                await self._broadcast(page_json(r))
            if self.clients:
                version, msg = self.src.frame()
                if msg is not None and version != sent:
                    sent = version
                    await self._send_state(msg)
            await asyncio.sleep(max(0.0, period - (time.monotonic() - t0)))

    async def run(self, ready=None) -> None:
        try:  # the API with process_request(path, headers): websockets 10 to 14
            from websockets.legacy.server import serve
        except ImportError:
            from websockets import serve
        async with serve(self._handler, self.host, self.port,
                                    process_request=self._process_request,
                                    subprotocols=[FOXGLOVE_SUBPROTOCOL],
                                    max_size=1 << 16) as server:
            port = server.sockets[0].getsockname()[1]
            url = f"http://{self.host if ':' not in self.host else '[' + self.host + ']'}:{port}/"
            print(f"khz view: {url} ({self.src.source} '{self.src.model.scene}'; Ctrl-C stops)",
                  flush=True)
            if ready:
                ready(url)
            await self._pump()


def cmd_view(args, connect) -> int:
    """`khz view` (connect: the cli's function that makes a Client)."""
    if not is_loopback(args.bind) and not (args.server_key and args.client_keys):
        raise KhzError(f"--bind {args.bind} is not a loopback address: refused without CURVE "
                       "credentials (--server-key and --client-keys), as khz-server refuses")
    try:
        import websockets  # noqa: F401
    except ImportError:
        raise KhzError("khz view needs python3-websockets (apt-get install python3-websockets; "
                       "scripts/bootstrap.sh does)") from None
    page = viewer_dir()
    if args.play:
        from . import recording
        rec = recording.read(args.play)
        if not rec.states:
            raise KhzError(f"{args.play} holds no states")
        if rec.model is None:
            raise KhzError(f"{args.play} is a server recording without a model description: "
                           "play a recording made by `khz record`")
        src = PlaybackSource(rec, geometry_for(rec.model, args.scene), args.play)
    else:
        c = connect(args)
        src = LiveSource(c, geometry_for(c.model, args.scene), args.scene)
    src.start()
    try:
        asyncio.run(Viewer(src, page, args.bind, args.port, args.fps).run())
    except OSError as e:
        raise KhzError(f"cannot serve on {args.bind}:{args.port}: {e.strerror}") from None
    finally:
        src.close()
    return 0
