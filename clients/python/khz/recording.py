"""khz.recording — recordings of the state stream (`khz record`), read back
for `khz plot` and `khz export`.

File format (.khzrec), little-endian, documented in docs/clients.md:

    magic    8 bytes  b"KHZREC1\\n"
    record*  kind (1 byte) + length (uint32) + payload (length bytes)

    kind b"M"  a khz.v1.ModelDescription: the model the following states
               belong to (written first, and again after a model change)
    kind b"S"  a khz.v1.State, the bytes exactly as published (every field,
               including fields this reader does not know)
    kind b"T"  a khz.v1.Stats (GetStats when the recording ended), optional

The server's own recordings (StartRecording: length + State bytes, no
magic, no model) are read as well; their joints are then named q0, q1, ...
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import BinaryIO, Iterator

import numpy as np

from .errors import KhzError, UnknownName
from .model import Model, State
from khz_msgs.v1 import control_pb2, state_pb2

MAGIC = b"KHZREC1\n"
_HEADER = struct.Struct("<cI")


class Recorder:
    """Writes a .khzrec file: model descriptions and states as raw bytes."""

    def __init__(self, path: str):
        self.path = path
        self._f: BinaryIO = open(path, "wb")
        self._f.write(MAGIC)
        self.states = 0
        self.bytes = len(MAGIC)

    def _write(self, kind: bytes, payload: bytes) -> None:
        self._f.write(_HEADER.pack(kind, len(payload)))
        self._f.write(payload)
        self.bytes += _HEADER.size + len(payload)

    def model(self, model: Model) -> None:
        self._write(b"M", model.msg.SerializeToString())

    def state(self, st: State) -> None:
        self._write(b"S", st.raw or st.msg.SerializeToString())
        self.states += 1

    def stats(self, stats: control_pb2.Stats) -> None:
        self._write(b"T", stats.SerializeToString())

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _records(f: BinaryIO, path: str) -> Iterator[tuple[bytes, bytes]]:
    head = f.read(len(MAGIC))
    if head == MAGIC:
        while True:
            h = f.read(_HEADER.size)
            if not h:
                return
            if len(h) < _HEADER.size:
                raise KhzError(f"{path}: truncated record header at byte {f.tell() - len(h)}")
            kind, n = _HEADER.unpack(h)
            payload = f.read(n)
            if len(payload) < n:
                raise KhzError(f"{path}: truncated record at byte {f.tell() - len(payload)} "
                               f"({len(payload)} of {n} bytes): the recording was cut off")
            yield kind, payload
    else:
        # the server's format: uint32 length + State bytes
        f.seek(0)
        while True:
            h = f.read(4)
            if not h:
                return
            if len(h) < 4:
                raise KhzError(f"{path}: truncated length at byte {f.tell() - len(h)}")
            (n,) = struct.unpack("<I", h)
            payload = f.read(n)
            if len(payload) < n:
                raise KhzError(f"{path}: truncated state at byte {f.tell() - len(payload)}")
            yield b"S", payload


@dataclass
class Recording:
    """A recording read into memory: its models, states and final stats."""

    path: str
    models: list[Model] = field(default_factory=list)
    states: list[State] = field(default_factory=list)
    stats: control_pb2.Stats | None = None

    @property
    def model(self) -> Model | None:
        """The last model described (None for a server recording)."""
        return self.models[-1] if self.models else None

    def column(self, name: str) -> str:
        """The canonical name of a joint (actuated or not) for plots/exports."""
        m = self.model
        if m is None:
            return name
        return m.joint(name).name

    def joint_series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(position, torque) of a 1-dof joint over the recording. Without a
        model (server recordings) name is 'qN' for q[N]."""
        if self.model is None:
            if not (name.startswith("q") and name[1:].isdigit()):
                raise UnknownName(f"{self.path} holds no model description (a server recording):"
                                  f" name joints by index, q0, q1, ... (got '{name}')")
            i = int(name[1:])
            tau = self.array("tau")
            return self.array("q")[:, i], tau[:, i] if i < tau.shape[1] else np.zeros(len(tau))
        j = self.model.joint(name)
        return self.array("q")[:, j.q_index], self.array("tau")[:, j.qd_index]

    def array(self, name: str) -> np.ndarray:
        """A field over time: 'q', 'qd', 'tau' (N x n), 'sim_time', 'seq',
        'lateness_ns', 'compute_ns' (N)."""
        if name in ("q", "qd", "tau", "body_pose", "body_twist", "haptic_wrench"):
            rows = [list(getattr(s.msg, name)) for s in self.states]
            width = max((len(r) for r in rows), default=0)
            out = np.full((len(rows), width), np.nan)
            for i, r in enumerate(rows):
                out[i, :len(r)] = r
            return out
        if name in ("lateness_ns", "compute_ns", "ticks", "overruns", "missed"):
            return np.array([getattr(s.msg.stats, name) for s in self.states], dtype=float)
        return np.array([getattr(s.msg, name) for s in self.states], dtype=float)


def read(path: str) -> Recording:
    """Reads a .khzrec file (or a server recording)."""
    rec = Recording(path)
    model = None
    try:
        f = open(path, "rb")
    except OSError as e:
        raise KhzError(f"cannot read the recording {path}: {e.strerror}") from None
    with f:
        for kind, payload in _records(f, path):
            if kind == b"M":
                msg = control_pb2.ModelDescription()
                msg.ParseFromString(payload)
                model = Model(msg, path)
                rec.models.append(model)
            elif kind == b"S":
                msg = state_pb2.State()
                try:
                    msg.ParseFromString(payload)
                except Exception:
                    raise KhzError(f"{path}: state {len(rec.states)} is not a khz.v1.State "
                                   "(not a recording?)") from None
                rec.states.append(State(msg, payload, model))
            elif kind == b"T":
                rec.stats = control_pb2.Stats()
                rec.stats.ParseFromString(payload)
            # unknown kinds are skipped: later versions may add some
    return rec
