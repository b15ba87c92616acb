"""khz.model — the model description (joints, bodies, actuators, haptic
proxies, with name lookup) and the state (numpy views of q, qd, tau, poses,
haptic wrenches; every other khz.v1.State field passes through)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import MalformedReply, UnknownName
from khz_msgs.v1 import control_pb2, state_pb2

PROTOCOL = "khz.v1"

# State.flags bits (state.proto StateFlag)
FLAGS = {v.name[len("FLAG_"):]: v.number for v in state_pb2.StateFlag.DESCRIPTOR.values if v.number}
MODES = {"realtime": state_pb2.MODE_REALTIME, "lockstep": state_pb2.MODE_LOCKSTEP,
         "fast": state_pb2.MODE_FAST}
MODE_NAMES = {v: k for k, v in MODES.items()}
# State.warnings order (khzWarning)
WARNINGS = ("stack", "badstate", "effort", "badctrl", "contactfull", "impulse", "lcp")


def flag_names(flags: int) -> list[str]:
    """The names of the StateFlag bits set in flags, e.g. ['WATCHDOG']."""
    return [name for name, bit in FLAGS.items() if flags & bit]


def error_code_name(code: int) -> str:
    try:
        return control_pb2.ErrorCode.Name(code)
    except ValueError:
        return str(code)


@dataclass(frozen=True)
class Joint:
    name: str
    type: str
    body: int
    q_index: int
    nq: int
    qd_index: int
    nv: int
    limited: bool
    lower: float
    upper: float
    velocity_limit: float
    effort_limit: float
    damping: float
    friction: float
    actuator: int  # index into command arrays, -1 when not actuated


@dataclass(frozen=True)
class ModelActuator:
    """One of the model's own actuators (MJCF <actuator>, URDF <ros2_control>
    command interface): what Client.send_ctrl drives. Joint torque
    gear (gain ctrl + bias[0] + bias[1] gear q + bias[2] gear qd)."""
    name: str
    type: str  # motor, position, velocity, general
    joint: str
    actuator: int  # its joint's index into command arrays
    gear: float
    ctrlrange: tuple[float, float] | None  # None: not limited
    forcerange: tuple[float, float] | None
    gain: float
    bias: tuple[float, float, float]
    kv_implicit: bool


@dataclass(frozen=True)
class Body:
    index: int
    name: str
    parent: int
    mass: float


def _lookup(kind: str, name: str, names: Sequence[str], scene: str) -> int:
    """Index of name in names: exact, or unambiguous without the robot prefix."""
    for i, n in enumerate(names):
        if n == name:
            return i
    short = [i for i, n in enumerate(names) if n.rsplit("/", 1)[-1] == name and "/" in n]
    if len(short) == 1:
        return short[0]
    listed = ", ".join(names) if names else "none"
    how = "is ambiguous" if short else "is not"
    plural = "bodies" if kind == "body" else kind + "s"
    raise UnknownName(f"{kind} '{name}' {how} in the model '{scene}' ({plural}: {listed})")


class Model:
    """A khz.v1.ModelDescription with names, index arrays and lookups.

    Arrays indexed by actuator (command order): act_q, act_qd (where each
    actuator's position / velocity sits in State.q / qd), lower, upper,
    effort_limit. The raw message is .msg.
    """

    def __init__(self, msg: control_pb2.ModelDescription, endpoint: str = "?"):
        self.msg = msg
        self.generation = msg.model_generation
        self.scene = msg.scene
        self.rate_hz = msg.rate_hz
        self.timestep = msg.timestep
        self.nq, self.nv, self.na = msg.nq, msg.nv, msg.na
        self.gravity = np.array(msg.gravity)
        self.mode = MODE_NAMES.get(msg.mode, str(msg.mode))
        self.contact_method = msg.contact_method
        self.contact_methods = list(msg.contact_methods)
        self.bodies = [Body(b.index, b.name, b.parent, b.mass) for b in msg.bodies]
        self.joints = [Joint(j.name, j.type, j.body, j.q_index, j.nq, j.qd_index, j.nv, j.limited,
                             j.lower, j.upper, j.velocity_limit, j.effort_limit, j.damping,
                             j.friction, j.actuator) for j in msg.joints]
        self.actuator_names = [a.name for a in msg.actuators]
        self.model_actuators = [
            ModelActuator(a.name, a.type, a.joint, a.actuator, a.gear,
                          (a.ctrl_lower, a.ctrl_upper) if a.ctrllimited else None,
                          (a.force_lower, a.force_upper) if a.forcelimited else None,
                          a.gain, tuple(a.bias) if len(a.bias) == 3 else (0.0, 0.0, 0.0),
                          a.kv_implicit) for a in msg.model_actuators]
        self.nu = len(self.model_actuators)
        self.ctrl_names = [a.name for a in self.model_actuators]
        self.body_names = [b.name for b in self.bodies]
        self.joint_names = [j.name for j in self.joints]
        self.proxy_names = [p.body_name for p in msg.haptic_proxies]
        self.haptic_proxies = list(msg.haptic_proxies)
        self.act_q = np.array([a.q_index for a in msg.actuators], dtype=np.intp)
        self.act_qd = np.array([a.qd_index for a in msg.actuators], dtype=np.intp)
        self.lower = np.array([a.lower if a.limited else -np.inf for a in msg.actuators])
        self.upper = np.array([a.upper if a.limited else np.inf for a in msg.actuators])
        self.effort_limit = np.array([a.effort_limit or np.inf for a in msg.actuators])
        self._check(endpoint)

    def _check(self, endpoint: str) -> None:
        """Indices must be within the arrays before anything indexes with them."""
        def bad(why: str) -> MalformedReply:
            return MalformedReply(f"malformed model description from {endpoint}: {why}")
        if self.generation == 0:
            raise bad("model_generation 0")
        if len(self.actuator_names) != self.na:
            raise bad(f"na {self.na} but {len(self.actuator_names)} actuators")
        if self.na and (self.act_q.max() >= self.nq or self.act_qd.max() >= self.nv):
            raise bad(f"an actuator index is outside nq {self.nq} / nv {self.nv}")
        for j in self.joints:
            if j.q_index + j.nq > self.nq or j.qd_index + j.nv > self.nv or j.actuator >= self.na:
                raise bad(f"joint '{j.name}' indices out of range")
        for i, b in enumerate(self.bodies):
            if b.index != i:
                raise bad(f"body {i} has index {b.index}")

    # lookups: exact names ("arm/joint2") or, when unambiguous, short ones ("joint2")
    def actuator(self, name: str | int) -> int:
        """Command-array index of an actuated joint."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < self.na:
                raise UnknownName(f"actuator {name} is not in 0..{self.na - 1}")
            return int(name)
        return _lookup("actuated joint", name, self.actuator_names, self.scene)

    def ctrl_index(self, name: str | int) -> int:
        """Command.ctrl index of one of the model's own actuators (by name)."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= name < self.nu:
                raise UnknownName(f"model actuator {name} is not in 0..{self.nu - 1}")
            return int(name)
        return _lookup("model actuator", name, self.ctrl_names, self.scene)

    def joint(self, name: str) -> Joint:
        return self.joints[_lookup("joint", name, self.joint_names, self.scene)]

    def body(self, name: str) -> int:
        """Body index (State.body_pose row)."""
        return _lookup("body", name, self.body_names, self.scene)

    def proxy(self, name: str) -> int:
        """Haptic proxy index (HapticInput.proxy) of a proxy body."""
        return _lookup("haptic proxy", name, self.proxy_names, self.scene)

    def __repr__(self) -> str:
        return (f"Model(scene={self.scene!r}, generation={self.generation}, nq={self.nq}, "
                f"nv={self.nv}, na={self.na}, rate_hz={self.rate_hz})")


class State:
    """One khz.v1.State with numpy arrays.

    q, qd, tau: the whole generalised vectors (nq, nv, nv); position,
    velocity, effort: the actuated joints in command order (na), like a ROS
    JointState; body_pose (nbody x 7: x y z qw qx qy qz), body_twist
    (nbody x 6), haptic_wrench (nproxy x 6). Every other field of the
    message (seq, sim_time, flags, stats, command_seq, ...) reads through;
    .msg is the message, .raw its bytes as received.
    """

    __slots__ = ("msg", "raw", "model", "_cache")

    def __init__(self, msg: state_pb2.State, raw: bytes = b"", model: Model | None = None):
        self.msg = msg
        self.raw = raw
        self.model = model
        self._cache: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.msg, name)

    def _array(self, key: str, field: str, cols: int = 0) -> np.ndarray:
        a = self._cache.get(key)
        if a is None:
            a = np.array(getattr(self.msg, field), dtype=float)
            if cols:
                a = a.reshape(-1, cols)
            a.flags.writeable = False
            self._cache[key] = a
        return a

    @property
    def q(self) -> np.ndarray:
        return self._array("q", "q")

    @property
    def qd(self) -> np.ndarray:
        return self._array("qd", "qd")

    @property
    def tau(self) -> np.ndarray:
        return self._array("tau", "tau")

    @property
    def body_pose(self) -> np.ndarray:
        return self._array("body_pose", "body_pose", 7)

    @property
    def body_twist(self) -> np.ndarray:
        return self._array("body_twist", "body_twist", 6)

    @property
    def haptic_wrench(self) -> np.ndarray:
        return self._array("haptic_wrench", "haptic_wrench", 6)

    def _need_model(self) -> Model:
        if self.model is None or self.model.generation != self.msg.model_generation:
            raise MalformedReply("this state's model is not known (describe the server first)")
        return self.model

    @property
    def position(self) -> np.ndarray:
        """Actuated joint positions, command order (na)."""
        return self.q[self._need_model().act_q]

    @property
    def velocity(self) -> np.ndarray:
        return self.qd[self._need_model().act_qd]

    @property
    def effort(self) -> np.ndarray:
        """The torques applied in this tick (after clamping), command order."""
        return self.tau[self._need_model().act_qd]

    @property
    def flag_names(self) -> list[str]:
        return flag_names(self.msg.flags)

    def has(self, flag: str) -> bool:
        """has('WATCHDOG'): whether that StateFlag bit is set."""
        return bool(self.msg.flags & FLAGS[flag.upper().removeprefix("FLAG_")])

    def __repr__(self) -> str:
        flags = "|".join(self.flag_names) or "-"
        return f"State(seq={self.msg.seq}, sim_time={self.msg.sim_time:.3f}, flags={flags})"
