"""khz.client — a connection to a khz-server: the state stream (ZeroMQ SUB),
commands, haptic inputs and control requests (DEALER), with the model
re-fetched by itself after a server restart.

    import khz
    with khz.Client() as c:                 # $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT or the defaults
        for st in c.states(seconds=3):
            c.send_torques(-5.0 * st.velocity)
"""

from __future__ import annotations

import os
import re
import time
from typing import Iterator, Sequence

import numpy as np
import zmq

from .errors import (KhzError, MalformedReply, NotConnected, ProtocolMismatch, RequestRefused,
                     ServerNotRunning, Timeout, UnknownName)
from .model import MODES, PROTOCOL, Model, State, error_code_name
from khz_msgs.v1 import command_pb2, control_pb2, messages_pb2, state_pb2

STATE_ENDPOINT = "tcp://127.0.0.1:5600"
COMMAND_ENDPOINT = "tcp://127.0.0.1:5601"

ArrayLike = Sequence[float] | np.ndarray


def default_endpoints() -> tuple[str, str]:
    """$KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT, or khz-server's defaults."""
    return (os.environ.get("KHZ_STATE_ENDPOINT") or STATE_ENDPOINT,
            os.environ.get("KHZ_COMMAND_ENDPOINT") or COMMAND_ENDPOINT)


def read_keys(path: str) -> tuple[str, str]:
    """(public, secret) from a file written by `khz-server --curve-keygen`."""
    keys = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[0] in ("public", "secret"):
                keys[parts[0]] = parts[1]
    if set(keys) != {"public", "secret"}:
        raise KhzError(f"{path}: expected lines 'public KEY' and 'secret KEY' "
                       "(as `khz-server --curve-keygen` writes)")
    return keys["public"], keys["secret"]


def _vector(name: str, values: ArrayLike | None, n: int) -> list[float] | None:
    if values is None:
        return None
    a = np.asarray(values, dtype=float).ravel()
    if a.size != n:
        raise ValueError(f"{name} has {a.size} values, expected {n}")
    return a.tolist()


class Client:
    """A connection to one khz-server.

    Endpoints default to $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT or
    tcp://127.0.0.1:5600 / :5601. With connect=True (the default) the model is
    fetched at once, so a missing server raises ServerNotRunning here. CURVE:
    server_key (the server's public key) and public_key / secret_key (this
    client's pair). A Client belongs to one thread.
    """

    def __init__(self, state_endpoint: str | None = None, command_endpoint: str | None = None, *,
                 timeout: float = 2.0, connect: bool = True, server_key: str | None = None,
                 public_key: str | None = None, secret_key: str | None = None,
                 rcvhwm: int | None = None, resync: bool = True):
        default_state, default_cmd = default_endpoints()
        self.state_endpoint = state_endpoint or default_state
        self.command_endpoint = command_endpoint or default_cmd
        self.timeout = timeout
        self.resync = resync
        self._model: Model | None = None
        self._model_changed = False
        self._state: State | None = None
        self._next_id = 0
        self._seq = 0
        self.errors: list[messages_pb2.Error] = []  # Error messages the server sent (rejected commands)
        # states decoded; received but skipped by latest_state; never received
        # (jumps in seq: a slow subscriber); undecodable; model re-fetches; sends
        self.counters = {"states": 0, "skipped": 0, "gaps": 0, "malformed": 0, "resyncs": 0,
                         "commands": 0, "send_failures": 0}
        self._last_seq: int | None = None

        self._ctx = zmq.Context()
        self._sub = self._ctx.socket(zmq.SUB)
        self._dealer = self._ctx.socket(zmq.DEALER)
        for s in (self._sub, self._dealer):
            s.setsockopt(zmq.LINGER, 0)
            if server_key:
                s.curve_serverkey = server_key.encode()
                s.curve_publickey = (public_key or "").encode()
                s.curve_secretkey = (secret_key or "").encode()
        # nothing is queued while no server is connected: a command is never
        # delivered late to a restarted server
        self._dealer.setsockopt(zmq.IMMEDIATE, 1)
        for s in (self._sub, self._dealer):  # states and replies are kilobytes
            s.setsockopt(zmq.MAXMSGSIZE, 64 << 20)
        if rcvhwm:
            self._sub.setsockopt(zmq.RCVHWM, rcvhwm)
        self._sub.setsockopt(zmq.SUBSCRIBE, b"state")
        for sock, ep, what in ((self._sub, self.state_endpoint, "state"),
                               (self._dealer, self.command_endpoint, "command")):
            try:
                sock.connect(ep)
            except zmq.ZMQError as e:
                self.close()
                raise KhzError(f"cannot connect to the {what} endpoint '{ep}': {e} (endpoints "
                               "look like tcp://HOST:PORT or ipc:///PATH)") from None
        if connect:
            try:
                self.describe()
            except BaseException:
                self.close()
                raise

    # ------------------------------------------------------------ lifecycle
    def close(self) -> None:
        if self._ctx is not None:
            self._sub.close(0)
            self._dealer.close(0)
            self._ctx.term()
            self._ctx = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    # ---------------------------------------------------------------- model
    @property
    def model(self) -> Model:
        """The model description (fetched when there is none)."""
        if self._model is None:
            return self.describe()
        return self._model

    def describe(self, timeout: float | None = None) -> Model:
        """Fetches the model description (Describe)."""
        reply = self._request("describe", control_pb2.Describe(), timeout, strict=True)
        if reply.WhichOneof("result") != "model":
            raise MalformedReply(f"Describe: the reply from {self.command_endpoint} holds no "
                                 "model description")
        pv = reply.model.protocol_version
        if pv not in (0, state_pb2.PROTOCOL_VERSION):
            raise ProtocolMismatch(
                f"protocol version mismatch: the server at {self.command_endpoint} speaks "
                f"{PROTOCOL} revision {pv}, this client speaks revision {state_pb2.PROTOCOL_VERSION}")
        old = self._model
        self._model = Model(reply.model, self.command_endpoint)
        if old is not None and old.generation != self._model.generation:
            self._model_changed = True
            self.counters["resyncs"] += 1
        return self._model

    def model_changed(self) -> bool:
        """True once after the client re-fetched the model because the
        server's model changed (a restart or a reload), then False."""
        changed, self._model_changed = self._model_changed, False
        return changed

    # --------------------------------------------------------------- states
    def _recv_state(self) -> bytes | None:
        """The body of one queued state message, or None."""
        while True:
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK, copy=True)
            except zmq.Again:
                return None
            if len(frames) == 2 and frames[0] == b"state":
                return frames[1]
            self.counters["malformed"] += 1

    def _take(self, raw: bytes, skipped: int = 0) -> State | None:
        msg = state_pb2.State()
        try:
            msg.ParseFromString(raw)
        except Exception:
            msg = None
        if (msg is None or msg.model_generation == 0 or len(msg.qd) != len(msg.tau)
                or msg.protocol_version not in (0, state_pb2.PROTOCOL_VERSION)):
            self.counters["malformed"] += 1  # another protocol revision counts here too
            return None
        if (self._model is not None and msg.model_generation != self._model.generation
                and self.resync):
            self.describe()
            self._last_seq = None
        st = State(msg, raw, self._model)
        if (self._last_seq is not None and msg.seq > self._last_seq + 1 + skipped
                and not st.has("RESET")):
            self.counters["gaps"] += msg.seq - self._last_seq - 1 - skipped
        self._last_seq = msg.seq
        self.counters["states"] += 1
        self._state = st
        return st

    def _wait(self, sock: zmq.Socket, timeout: float | None, event: int = zmq.POLLIN) -> bool:
        ms = None if timeout is None or timeout < 0 else int(timeout * 1000)
        return bool(sock.poll(ms, event))

    def next_state(self, timeout: float | None = 1.0) -> State:
        """The next state in order; raises Timeout after timeout seconds
        (None = wait forever)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            raw = self._recv_state()
            if raw is not None:
                st = self._take(raw)
                if st is not None:
                    return st
                continue
            left = None if end is None else end - time.monotonic()
            if left is not None and left < 0:
                raise self._state_timeout(timeout)
            self._wait(self._sub, left)

    def latest_state(self, timeout: float | None = 1.0) -> State:
        """Drains the queue and returns the newest state (only that one is
        decoded), waiting up to timeout for one when none is queued."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            newest, n = None, 0
            while (raw := self._recv_state()) is not None:
                newest, n = raw, n + 1
            if newest is not None:
                self.counters["skipped"] += n - 1
                st = self._take(newest, n - 1)
                if st is not None:
                    return st
                continue
            left = None if end is None else end - time.monotonic()
            if left is not None and left < 0:
                raise self._state_timeout(timeout)
            self._wait(self._sub, left)

    def poll_state(self) -> State | None:
        """The newest state if one arrived since the last call, else None
        (never waits: for a loop with its own clock)."""
        try:
            return self.latest_state(0)
        except Timeout:
            return None

    @property
    def state(self) -> State | None:
        """The last state returned."""
        return self._state

    def states(self, seconds: float | None = None, latest: bool = True,
               timeout: float = 1.0) -> Iterator[State]:
        """Yields states until `seconds` of wall time have passed (None =
        forever): the newest each time (latest=True: a slow loop skips
        states) or every one in order. A lockstep keep-alive repeat of a
        state already yielded is skipped."""
        end = None if seconds is None else time.monotonic() + seconds
        last = None
        while end is None or time.monotonic() < end:
            st = self.latest_state(timeout) if latest else self.next_state(timeout)
            if last is not None and st.seq == last and st.has("REPEATED"):
                continue
            last = st.seq
            yield st

    def fileno(self) -> int:
        """The state socket's file descriptor for select/asyncio (ZeroMQ
        signals it edge-triggered: when readable, call poll_state() until
        None)."""
        return self._sub.getsockopt(zmq.FD)

    def _state_timeout(self, timeout: float | None) -> Timeout:
        return Timeout(f"no state from {self.state_endpoint} within {timeout} s (is khz-server "
                       "running and publishing there? paused?)")

    # ------------------------------------------------------------- commands
    def _send(self, msg: messages_pb2.ClientMessage, wait: float = 0) -> None:
        data = msg.SerializeToString()
        try:
            self._dealer.send(data, zmq.NOBLOCK)
            return
        except zmq.Again:
            pass
        if wait > 0 and self._wait(self._dealer, wait, zmq.POLLOUT):
            try:
                self._dealer.send(data, zmq.NOBLOCK)
                return
            except zmq.Again:
                pass
        why = ""
        if self.command_endpoint.startswith("ipc://") and not os.path.exists(self.command_endpoint[6:]):
            why = " (the socket file does not exist)"
        if wait > 0:
            raise ServerNotRunning(
                f"no khz-server at {self.command_endpoint}{why}: nothing accepted the connection "
                f"within {wait:g} s. Is khz-server running (build/server/khz-server), on this "
                "endpoint (--command-endpoint, $KHZ_COMMAND_ENDPOINT)? With CURVE, are this "
                "client's keys allowed?", self.command_endpoint)
        raise NotConnected(f"not connected to a khz-server at {self.command_endpoint}{why}: "
                           "nothing sent (commands are dropped, never queued)")

    def _command_header(self, state: State | None) -> command_pb2.Command:
        m = self.model
        st = state if state is not None else self._state
        self._seq += 1
        return command_pb2.Command(model_generation=m.generation, seq=self._seq,
                                   state_seq=st.seq if st is not None else 0,
                                   client_time_ns=time.monotonic_ns())

    def send_torques(self, tau: ArrayLike, state: State | None = None) -> int:
        """Torques for the actuators (na values, command order), answering
        `state` (default: the last state returned): applied at the next tick.
        Never blocks; raises NotConnected when no server is connected.
        Returns the command's seq (echoed in State.command_seq)."""
        cmd = self._command_header(state)
        cmd.tau.extend(_vector("tau", tau, self.model.na))
        return self.command(cmd)

    def send_targets(self, q: ArrayLike, qd: ArrayLike | None = None, kp: ArrayLike | None = None,
                     kd: ArrayLike | None = None, tau: ArrayLike | None = None,
                     state: State | None = None) -> int:
        """PD targets for the server's in-tick PD, evaluated every tick:
        tau = kp (q - q_now) + kd (qd - qd_now) + tau. Omitted gains are the
        server's (SetGains); omitted qd / tau are zero."""
        cmd = self._command_header(state)
        na = self.model.na
        for name, values in (("q_target", q), ("qd_target", qd), ("kp", kp), ("kd", kd),
                             ("tau", tau)):
            v = _vector(name, values, na)
            if v is not None:
                getattr(cmd, name).extend(v)
        return self.command(cmd)

    def send_ctrl(self, ctrl: ArrayLike | dict, tau: ArrayLike | None = None,
                  state: State | None = None) -> int:
        """Controls for the model's own actuators (Model.model_actuators: MJCF
        <actuator>s, URDF <ros2_control> command interfaces), as MuJoCo's
        data.ctrl: nu values in model_actuators order, or a dict
        {name: value} (short names when unambiguous; the actuators not named
        contribute nothing). The server clamps each to its ctrlrange (a CLAMPED
        error, applied) and runs position / velocity actuators as servos at
        the tick rate; tau (na values) adds joint torques."""
        m = self.model
        cmd = self._command_header(state)
        if isinstance(ctrl, dict):
            for name, value in ctrl.items():
                cmd.ctrl_names.append(m.ctrl_names[m.ctrl_index(name)])
                cmd.ctrl.append(float(value))
        else:
            cmd.ctrl.extend(_vector("ctrl", ctrl, m.nu))
        if tau is not None:
            cmd.tau.extend(_vector("tau", tau, m.na))
        return self.command(cmd)

    def send_haptic(self, proxy: int | str, position: ArrayLike,
                    orientation: ArrayLike = (1.0, 0.0, 0.0, 0.0),
                    velocity: ArrayLike | None = None,
                    angular_velocity: ArrayLike | None = None) -> int:
        """A haptic device's pose (world frame; orientation w x y z) for a
        proxy (index or body name). The force to render comes back in
        State.haptic_wrench[proxy]."""
        m = self.model
        p = m.proxy(proxy) if isinstance(proxy, str) else int(proxy)
        if not 0 <= p < len(m.proxy_names):
            raise UnknownName(f"no haptic proxy {p}: the model '{m.scene}' has "
                              f"{len(m.proxy_names)}")
        self._seq += 1
        h = command_pb2.HapticInput(model_generation=m.generation, proxy=p, seq=self._seq,
                                    device_time_ns=time.monotonic_ns())
        h.position.extend(_vector("position", position, 3))
        h.orientation.extend(_vector("orientation", orientation, 4))
        if velocity is not None:
            h.velocity.extend(_vector("velocity", velocity, 3))
        if angular_velocity is not None:
            h.angular_velocity.extend(_vector("angular_velocity", angular_velocity, 3))
        self.counters["commands"] += 1
        try:
            self._send(messages_pb2.ClientMessage(haptic=h))
        except NotConnected:
            self.counters["send_failures"] += 1
            raise
        return h.seq

    def command(self, cmd: command_pb2.Command) -> int:
        """Sends a Command as built by the caller."""
        self.counters["commands"] += 1
        try:
            self._send(messages_pb2.ClientMessage(command=cmd))
        except NotConnected:
            self.counters["send_failures"] += 1
            raise
        return cmd.seq

    def send_raw(self, data: bytes) -> None:
        """Any bytes on the command socket (for tests)."""
        self._dealer.send(data, zmq.NOBLOCK)

    def read_errors(self) -> list[messages_pb2.Error]:
        """Error messages the server sent since the last call (rejected or
        clamped commands), without waiting."""
        while self._wait(self._dealer, 0):
            sm = self._recv_server()
            if sm is not None and sm.WhichOneof("body") == "error":
                self.errors.append(sm.error)
        errors, self.errors = self.errors, []
        return errors

    # ------------------------------------------------------------- requests
    def _recv_server(self) -> messages_pb2.ServerMessage | None:
        frames = self._dealer.recv_multipart(zmq.NOBLOCK)
        sm = messages_pb2.ServerMessage()
        try:
            if len(frames) != 1:
                raise ValueError("several frames")
            sm.ParseFromString(frames[0])
            if sm.WhichOneof("body") is None:
                raise ValueError("empty")
        except Exception:
            raise MalformedReply(
                f"malformed reply from {self.command_endpoint}: {sum(map(len, frames))} bytes that "
                f"are not a {PROTOCOL}.ServerMessage (is this a khz-server of protocol "
                f"{PROTOCOL}?)") from None
        return sm

    def _mismatch(self, what: str, code: int, message: str) -> ProtocolMismatch:
        for m in re.finditer(r"khz\.v(\d+)", message):
            if f"khz.v{m.group(1)}" != PROTOCOL:
                return ProtocolMismatch(
                    f"protocol version mismatch: the server at {self.command_endpoint} speaks "
                    f"khz.v{m.group(1)}, this client speaks {PROTOCOL} ({what} answered "
                    f"{error_code_name(code)}: {message})")
        return ProtocolMismatch(
            f"protocol version mismatch: the server at {self.command_endpoint} does not "
            f"understand a {PROTOCOL} {what} request ({error_code_name(code)}: {message}); it is "
            f"not a khz-server speaking {PROTOCOL}")

    def _request(self, op: str, body, timeout: float | None = None,
                 strict: bool = True) -> control_pb2.Reply:
        timeout = self.timeout if timeout is None else timeout
        self._next_id += 1
        rq = control_pb2.Request(id=self._next_id)
        getattr(rq, op).CopyFrom(body)
        end = time.monotonic() + timeout
        self._send(messages_pb2.ClientMessage(request=rq), wait=timeout)
        what = "".join(p.capitalize() for p in op.split("_"))
        while True:
            left = end - time.monotonic()
            if left < 0 or not self._wait(self._dealer, left):
                if time.monotonic() < end:
                    continue
                raise Timeout(f"no reply from {self.command_endpoint} to {what} within "
                              f"{timeout:g} s (the server is connected but does not answer: "
                              "stopped, overloaded, or not a khz-server)")
            sm = self._recv_server()
            if sm.WhichOneof("body") == "error":
                e = sm.error
                if strict and e.command_seq == 0 and e.code in (control_pb2.BAD_MESSAGE,
                                                                control_pb2.UNKNOWN_TYPE):
                    raise self._mismatch(what, e.code, e.message)
                self.errors.append(e)
                continue
            r = sm.reply
            if r.id != rq.id:
                continue  # the late answer to an earlier request
            if strict and r.code in (control_pb2.BAD_MESSAGE, control_pb2.UNKNOWN_TYPE):
                raise self._mismatch(what, r.code, r.error)
            return r

    def request(self, op: str, body=None, timeout: float | None = None,
                check: bool = True) -> control_pb2.Reply:
        """Any control request by its Request field name ('get_stats',
        'set_setting', ...) with its message; raises RequestRefused when the
        server answers with an error code (check=True)."""
        if body is None:
            body = getattr(control_pb2, "".join(p.capitalize() for p in op.split("_")))()
        r = self._request(op, body, timeout)
        if check and r.code != control_pb2.OK:
            name = error_code_name(r.code)
            cls = UnknownName if r.code == control_pb2.UNKNOWN_NAME else RequestRefused
            what = "".join(p.capitalize() for p in op.split("_"))
            if cls is UnknownName:
                raise UnknownName(f"{what}: {r.error}")
            raise RequestRefused(f"{what} refused by the server ({name}): {r.error}", r.code, name)
        return r

    def pause(self) -> int:
        """Pauses the loop; returns the seq of the latest state."""
        return self.request("pause").state_seq

    def resume(self) -> int:
        return self.request("resume").state_seq

    def step(self, n: int = 1) -> int:
        """Runs n ticks in the current mode, then pauses (replied when done)."""
        timeout = max(self.timeout, n * 0.01 + 2)
        return self.request("step", control_pb2.Step(n=n), timeout=timeout).state_seq

    def reset(self, q: ArrayLike | None = None) -> int:
        """Back to the initial state (or q, nq values); returns the new state's seq."""
        body = control_pb2.Reset()
        if q is not None:
            body.q.extend(_vector("q", q, self.model.nq))
        return self.request("reset", body).state_seq

    def set_mode(self, mode: str) -> None:
        """'realtime', 'lockstep' or 'fast'."""
        if mode not in MODES:
            raise ValueError(f"unknown mode '{mode}' (realtime, lockstep or fast)")
        self.request("set_mode", control_pb2.SetMode(mode=MODES[mode]))

    def set_rate(self, rate_hz: float) -> None:
        self.request("set_rate", control_pb2.SetRate(rate_hz=rate_hz))

    def set_contact_method(self, method: str) -> None:
        self.request("set_contact_method", control_pb2.SetContactMethod(method=method))

    def set_gains(self, kp: ArrayLike, kd: ArrayLike) -> None:
        """The server's default PD gains (na values each)."""
        na = self.model.na
        self.request("set_gains", control_pb2.SetGains(kp=_vector("kp", kp, na),
                                                       kd=_vector("kd", kd, na)))

    def apply_wrench(self, body: str | int, force: ArrayLike = (0, 0, 0),
                     torque: ArrayLike = (0, 0, 0), duration: float = 0.1) -> None:
        """A force and torque (world frame) at the body's centre of mass for
        `duration` seconds of simulated time."""
        m = self.model
        b = m.body(body) if isinstance(body, str) else int(body)
        ref = control_pb2.BodyRef(id=control_pb2.BodyId(index=b, generation=m.generation))
        self.request("apply_wrench", control_pb2.ApplyWrench(
            body=ref, force=_vector("force", force, 3), torque=_vector("torque", torque, 3),
            duration=duration))

    def clear_wrenches(self) -> None:
        self.request("clear_wrenches")

    def set_fault(self, target: str, fault: str, value: float = 0.0,
                  duration: float = 0.0) -> None:
        """A fault on demand (docs/hil.md): target is a sensor's name, a
        drive's joint or "commands"; fault one of none, freeze, dropout,
        bias (value added), limp, torque_loss (value = share kept), lock,
        stall; duration in s of simulated time, 0 = until cleared."""
        try:
            code = state_pb2.FaultType.Value("FAULT_" + fault.upper())
        except ValueError:
            raise ValueError(f"set_fault: unknown fault '{fault}' (none, freeze, dropout, bias, "
                             "limp, torque_loss, lock, stall)") from None
        self.request("set_fault", control_pb2.SetFault(target=target, fault=code, value=value,
                                                       duration=duration))

    def stats(self) -> control_pb2.Stats:
        """The loop's statistics: histograms (lateness, compute, command
        latency and response, ns), counters, clients, state hash."""
        r = self.request("get_stats")
        if r.WhichOneof("result") != "stats":
            raise MalformedReply(f"GetStats: the reply from {self.command_endpoint} holds no "
                                 "statistics")
        return r.stats

    def reset_stats(self) -> None:
        self.request("reset_stats")

    def settings(self) -> dict[str, str]:
        """Every setting and its value."""
        r = self.request("get_setting", control_pb2.GetSetting(name=""))
        return {s.name: s.value for s in r.settings.settings}

    def get_setting(self, name: str) -> str:
        r = self.request("get_setting", control_pb2.GetSetting(name=name))
        return r.settings.settings[0].value

    def set_setting(self, name: str, value) -> None:
        if isinstance(value, bool):
            value = "true" if value else "false"
        self.request("set_setting", control_pb2.SetSetting(name=name, value=str(value)))

    def start_recording(self, name: str) -> None:
        """The server records every state into the file `name` (a file name,
        not a path) in the directory its operator gave as --record-dir; the
        file is created new. Refused when the server has no --record-dir."""
        self.request("start_recording", control_pb2.StartRecording(path=name))

    def stop_recording(self) -> None:
        self.request("stop_recording")

    def claim(self, actuators: Sequence[str] = ()) -> None:
        """Claims the actuators (names; none = all) for this client: other
        clients' commands and simulation-changing requests are refused until
        release() or until this client stops commanding for watchdog_ms."""
        self.request("claim", control_pb2.Claim(actuators=list(actuators)))

    def release(self) -> None:
        """Gives up every claim of this client."""
        self.request("release", control_pb2.Release())
