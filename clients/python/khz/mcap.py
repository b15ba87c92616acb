"""khz.mcap — recordings as MCAP (https://mcap.dev/spec), the format
Foxglove and the ROS 2 tools open: `khz record --mcap`, `khz export --mcap`.

A writer of its own: Debian packages no MCAP library for Python (the format
is small: records of opcode + length + fields, chunks with message indexes,
a summary, a footer; CRC32 from zlib). Chunks are uncompressed (Python's
standard library has neither zstd nor lz4), each with one message index per
channel and a chunk index in the summary, so that readers can seek.

Channels (all protobuf; the schemas are FileDescriptorSets):
    /khz/model   khz.v1.ModelDescription   at the start and after a model change
    /khz/state   khz.v1.State              every state, the bytes exactly as published
    /tf          foxglove.FrameTransforms  world -> each body (frame = body name),
                                           at most tf_rate times a second of log time
    /scene       foxglove.SceneUpdate      the geoms, one entity per body, frame-locked
    /contacts    foxglove.SceneUpdate      contact points and force arrows (when the
                                           states carry contacts), at the tf rate
    /khz/sensors khz.mcap.SensorReadings   when the model has HIL sensors or drives:
                                           every state's readings by sensor name, their
                                           age and faults, the drives' faults
Message log and publish times are the state's wall_time_ns (when the server
completed it); the model and scene messages take the first state's.

The Foxglove schemas are written here as descriptors (names and field
numbers as Foxglove documents them), not copied from Foxglove's files.
"""

from __future__ import annotations

import struct
import zlib
from typing import BinaryIO

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from .errors import KhzError
from khz_msgs.v1 import control_pb2, state_pb2

MAGIC = b"\x89MCAP0\r\n"
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK = 1, 2, 3, 4, 5, 6
OP_MESSAGE_INDEX, OP_CHUNK_INDEX, OP_STATISTICS, OP_SUMMARY_OFFSET, OP_DATA_END = 7, 8, 11, 14, 15

_u16 = struct.Struct("<H").pack
_u32 = struct.Struct("<I").pack
_u64 = struct.Struct("<Q").pack
_MSG_HEAD = struct.Struct("<BQHIQQ")  # opcode, length, channel, sequence, log, publish


def _str(s: str) -> bytes:
    b = s.encode()
    return _u32(len(b)) + b


def _record(op: int, body: bytes) -> bytes:
    return bytes([op]) + _u64(len(body)) + body


class Writer:
    """A low-level MCAP writer: schemas, channels, messages in chunks."""

    def __init__(self, f: BinaryIO, profile: str = "", library: str = "khz",
                 chunk_size: int = 1 << 20):
        self.f = f
        self.chunk_size = chunk_size
        self.crc = 0  # the data section's CRC32, from the magic on
        self.pos = 0
        self.schemas: list[bytes] = []
        self.channels: list[bytes] = []
        self.counts: dict[int, int] = {}
        self.seq: dict[int, int] = {}
        self.chunk_indexes: list[bytes] = []
        self.start = self.end = None
        self._chunk: list[bytes] = []
        self._chunk_len = 0
        self._index: dict[int, list[tuple[int, int]]] = {}
        self._chunk_t: list[int] = []
        self._write(MAGIC + _record(OP_HEADER, _str(profile) + _str(library)))

    def _write(self, b: bytes) -> None:
        self.f.write(b)
        self.crc = zlib.crc32(b, self.crc)
        self.pos += len(b)

    def schema(self, name: str, encoding: str, data: bytes) -> int:
        sid = len(self.schemas) + 1
        rec = _record(OP_SCHEMA, _u16(sid) + _str(name) + _str(encoding) + _u32(len(data)) + data)
        self.schemas.append(rec)
        self._write(rec)
        return sid

    def channel(self, topic: str, schema: int, encoding: str = "protobuf",
                metadata: dict[str, str] | None = None) -> int:
        cid = len(self.channels)
        meta = b"".join(_str(k) + _str(v) for k, v in (metadata or {}).items())
        rec = _record(OP_CHANNEL, _u16(cid) + _u16(schema) + _str(topic) + _str(encoding) +
                      _u32(len(meta)) + meta)
        self.channels.append(rec)
        self.counts[cid] = 0
        self.seq[cid] = 0
        self._write(rec)
        return cid

    def message(self, channel: int, log_time: int, data: bytes, publish_time: int | None = None):
        seq = self.seq[channel]
        self.seq[channel] = seq + 1
        self.counts[channel] += 1
        self._index.setdefault(channel, []).append((log_time, self._chunk_len))
        head = _MSG_HEAD.pack(OP_MESSAGE, 22 + len(data), channel, seq & 0xFFFFFFFF, log_time,
                              log_time if publish_time is None else publish_time)
        self._chunk.append(head)
        self._chunk.append(data)
        self._chunk_len += len(head) + len(data)
        if not self._chunk_t:
            self._chunk_t = [log_time, log_time]
        else:
            self._chunk_t = [min(self._chunk_t[0], log_time), max(self._chunk_t[1], log_time)]
        self.start = log_time if self.start is None else min(self.start, log_time)
        self.end = log_time if self.end is None else max(self.end, log_time)
        if self._chunk_len >= self.chunk_size:
            self.flush()

    def flush(self) -> None:
        """Writes the open chunk and its message indexes."""
        if not self._chunk:
            return
        records = b"".join(self._chunk)
        t0, t1 = self._chunk_t
        body = (_u64(t0) + _u64(t1) + _u64(len(records)) + _u32(zlib.crc32(records)) + _str("") +
                _u64(len(records)) + records)
        chunk_start = self.pos
        self._write(_record(OP_CHUNK, body))
        chunk_len = self.pos - chunk_start
        offsets = []
        index_start = self.pos
        for cid in sorted(self._index):
            entries = b"".join(_u64(t) + _u64(o) for t, o in self._index[cid])
            offsets.append(_u16(cid) + _u64(self.pos))
            self._write(_record(OP_MESSAGE_INDEX, _u16(cid) + _u32(len(entries)) + entries))
        offs = b"".join(offsets)
        self.chunk_indexes.append(_record(OP_CHUNK_INDEX, (
            _u64(t0) + _u64(t1) + _u64(chunk_start) + _u64(chunk_len) + _u32(len(offs)) + offs +
            _u64(self.pos - index_start) + _str("") + _u64(len(records)) + _u64(len(records)))))
        self._chunk, self._chunk_len, self._index, self._chunk_t = [], 0, {}, []

    def close(self) -> None:
        self.flush()
        self._write(_record(OP_DATA_END, _u32(self.crc)))
        summary_start = self.pos
        crc = 0
        groups = []

        def put(b: bytes) -> None:
            nonlocal crc
            self.f.write(b)
            crc = zlib.crc32(b, crc)
            self.pos += len(b)

        counts = b"".join(_u16(c) + _u64(n) for c, n in sorted(self.counts.items()))
        stats = _record(OP_STATISTICS, (
            _u64(sum(self.counts.values())) + _u16(len(self.schemas)) + _u32(len(self.channels)) +
            _u32(0) + _u32(0) + _u32(len(self.chunk_indexes)) + _u64(self.start or 0) +
            _u64(self.end or 0) + _u32(len(counts)) + counts))
        for op, recs in ((OP_SCHEMA, self.schemas), (OP_CHANNEL, self.channels),
                         (OP_STATISTICS, [stats]), (OP_CHUNK_INDEX, self.chunk_indexes)):
            if recs:
                start = self.pos
                for r in recs:
                    put(r)
                groups.append((op, start, self.pos - start))
        offset_start = self.pos
        for op, start, length in groups:
            put(_record(OP_SUMMARY_OFFSET, bytes([op]) + _u64(start) + _u64(length)))
        footer_prefix = bytes([OP_FOOTER]) + _u64(20) + _u64(summary_start) + _u64(offset_start)
        crc = zlib.crc32(footer_prefix, crc)
        self.f.write(footer_prefix + _u32(crc) + MAGIC)
        self.f.flush()


# ------------------------------------------------------- protobuf schemas
def _file_set(*files) -> bytes:
    """A FileDescriptorSet of the files and everything they import."""
    seen, out = set(), descriptor_pb2.FileDescriptorSet()

    def add(fd) -> None:
        if fd.name in seen:
            return
        for dep in fd.dependencies:
            add(dep)
        seen.add(fd.name)
        fd.CopyToProto(out.file.add())

    for fd in files:
        add(fd)
    return out.SerializeToString()


_D = descriptor_pb2.FieldDescriptorProto
_TYPES = {"double": _D.TYPE_DOUBLE, "string": _D.TYPE_STRING, "bool": _D.TYPE_BOOL,
          "fixed32": _D.TYPE_FIXED32, "uint32": _D.TYPE_UINT32, "uint64": _D.TYPE_UINT64}

# Foxglove's message definitions (field name, type, number; "*" = repeated),
# after the schemas Foxglove publishes for FrameTransforms and SceneUpdate.
_FOXGLOVE = {
    "Vector3": [("x", "double", 1), ("y", "double", 2), ("z", "double", 3)],
    "Point3": [("x", "double", 1), ("y", "double", 2), ("z", "double", 3)],
    "Quaternion": [("x", "double", 1), ("y", "double", 2), ("z", "double", 3),
                   ("w", "double", 4)],
    "Color": [("r", "double", 1), ("g", "double", 2), ("b", "double", 3), ("a", "double", 4)],
    "Pose": [("position", ".foxglove.Vector3", 1), ("orientation", ".foxglove.Quaternion", 2)],
    "KeyValuePair": [("key", "string", 1), ("value", "string", 2)],
    "FrameTransform": [("timestamp", ".google.protobuf.Timestamp", 1),
                       ("parent_frame_id", "string", 2), ("child_frame_id", "string", 3),
                       ("translation", ".foxglove.Vector3", 4),
                       ("rotation", ".foxglove.Quaternion", 5)],
    "FrameTransforms": [("transforms", "*.foxglove.FrameTransform", 1)],
    "ArrowPrimitive": [("pose", ".foxglove.Pose", 1), ("shaft_length", "double", 2),
                       ("shaft_diameter", "double", 3), ("head_length", "double", 4),
                       ("head_diameter", "double", 5), ("color", ".foxglove.Color", 6)],
    "CubePrimitive": [("pose", ".foxglove.Pose", 1), ("size", ".foxglove.Vector3", 2),
                      ("color", ".foxglove.Color", 3)],
    "SpherePrimitive": [("pose", ".foxglove.Pose", 1), ("size", ".foxglove.Vector3", 2),
                        ("color", ".foxglove.Color", 3)],
    "CylinderPrimitive": [("pose", ".foxglove.Pose", 1), ("size", ".foxglove.Vector3", 2),
                          ("bottom_scale", "double", 3), ("top_scale", "double", 4),
                          ("color", ".foxglove.Color", 5)],
    "TriangleListPrimitive": [("pose", ".foxglove.Pose", 1), ("points", "*.foxglove.Point3", 2),
                              ("color", ".foxglove.Color", 3), ("colors", "*.foxglove.Color", 4),
                              ("indices", "*fixed32", 5)],
    "SceneEntityDeletion": [("timestamp", ".google.protobuf.Timestamp", 1),
                            ("type", "uint32", 2), ("id", "string", 3)],
    "SceneEntity": [("timestamp", ".google.protobuf.Timestamp", 1), ("frame_id", "string", 2),
                    ("id", "string", 3), ("lifetime", ".google.protobuf.Duration", 4),
                    ("frame_locked", "bool", 5), ("metadata", "*.foxglove.KeyValuePair", 6),
                    ("arrows", "*.foxglove.ArrowPrimitive", 7),
                    ("cubes", "*.foxglove.CubePrimitive", 8),
                    ("spheres", "*.foxglove.SpherePrimitive", 9),
                    ("cylinders", "*.foxglove.CylinderPrimitive", 10),
                    ("triangles", "*.foxglove.TriangleListPrimitive", 12)],
    "SceneUpdate": [("deletions", "*.foxglove.SceneEntityDeletion", 1),
                    ("entities", "*.foxglove.SceneEntity", 2)],
}


def _foxglove_pool():
    """One .proto file per Foxglove message (as Foxglove lays them out),
    in a pool of their own with google's Timestamp and Duration."""
    from google.protobuf import duration_pb2, timestamp_pb2
    pool = descriptor_pool.DescriptorPool()
    for mod in (timestamp_pb2, duration_pb2):
        fdp = descriptor_pb2.FileDescriptorProto()
        mod.DESCRIPTOR.CopyToProto(fdp)
        pool.Add(fdp)
    order = ["Vector3", "Point3", "Quaternion", "Color", "KeyValuePair", "Pose",
             "FrameTransform", "FrameTransforms", "ArrowPrimitive", "CubePrimitive",
             "SpherePrimitive", "CylinderPrimitive", "TriangleListPrimitive",
             "SceneEntityDeletion", "SceneEntity", "SceneUpdate"]
    _add_messages(pool, "foxglove", _FOXGLOVE, order)
    return pool


def _add_messages(pool, package: str, defs: dict, order: list[str]) -> None:
    """One .proto file per message of defs (package/Name.proto), in order
    (a message after those it uses), added to pool."""
    for name in order:
        fdp = descriptor_pb2.FileDescriptorProto(name=f"{package}/{name}.proto",
                                                 package=package, syntax="proto3")
        deps = set()
        m = fdp.message_type.add(name=name)
        for fname, ftype, num in defs[name]:
            rep = ftype.startswith("*")
            t = ftype.lstrip("*")
            f = m.field.add(name=fname, number=num,
                            label=_D.LABEL_REPEATED if rep else _D.LABEL_OPTIONAL)
            if t in _TYPES:
                f.type = _TYPES[t]
            else:
                f.type = _D.TYPE_MESSAGE
                f.type_name = t
                deps.add("google/protobuf/timestamp.proto" if t.endswith("Timestamp") else
                         "google/protobuf/duration.proto" if t.endswith("Duration") else
                         f"{package}/{t.rsplit('.', 1)[1]}.proto")
        fdp.dependency.extend(sorted(deps))
        pool.Add(fdp)


# /khz/sensors: the hardware-in-the-loop readings of a state (docs/hil.md), one
# entry per sensor with its name, so that Foxglove plots them by name
# (/khz/sensors.sensors[:]{name=="wrist_gyro"}.values[0]) without looking up
# where a sensor's values start in State.sensor_values. An MCAP-only message
# of khz's (package khz.mcap), written here like Foxglove's.
_KHZ_MCAP = {
    "SensorReading": [("name", "string", 1), ("type", "string", 2), ("object", "string", 3),
                      ("values", "*double", 4),       # NaN while a dropout is in effect
                      ("sampled_tick", "uint64", 5),  # since the last reset
                      ("age_ticks", "uint64", 6),     # the state's tick - sampled_tick
                      ("age", "double", 7),           # s: age_ticks / rate
                      ("fault", "uint32", 8),         # khz.v1.FaultType
                      ("fault_name", "string", 9)],
    "DriveStatus": [("joint", "string", 1), ("fault", "uint32", 2), ("fault_name", "string", 3)],
    "SensorReadings": [("timestamp", ".google.protobuf.Timestamp", 1), ("seq", "uint64", 2),
                       ("shown_seq", "uint64", 3), ("sim_time", "double", 4),
                       ("sensors", "*.khz.mcap.SensorReading", 5),
                       ("drives", "*.khz.mcap.DriveStatus", 6)],
}

FAULT_NAMES = {v.number: v.name[len("FAULT_"):].lower()
               for v in state_pb2.FaultType.DESCRIPTOR.values}


class KhzSensors:
    """khz.mcap.SensorReadings: its class and schema."""

    def __init__(self):
        from google.protobuf import timestamp_pb2
        self.pool = descriptor_pool.DescriptorPool()
        fdp = descriptor_pb2.FileDescriptorProto()
        timestamp_pb2.DESCRIPTOR.CopyToProto(fdp)
        self.pool.Add(fdp)
        _add_messages(self.pool, "khz.mcap", _KHZ_MCAP,
                      ["SensorReading", "DriveStatus", "SensorReadings"])
        d = self.pool.FindMessageTypeByName("khz.mcap.SensorReadings")
        get = getattr(message_factory, "GetMessageClass", None)
        self.SensorReadings = get(d) if get else message_factory.MessageFactory(
            self.pool).GetPrototype(d)
        self.schema = _file_set(d.file)


def sensor_readings(ks: KhzSensors, md, msg, ns: int):
    """A state's readings (msg: khz.v1.State) as khz.mcap.SensorReadings,
    named after the model's sensors and drives (md: khz.v1.ModelDescription)."""
    out = ks.SensorReadings()
    _ts(out.timestamp, ns)
    out.seq, out.shown_seq, out.sim_time = msg.seq, msg.shown_seq, msg.sim_time
    tick = msg.seq - msg.reset_seq
    nt, nf = len(msg.sensor_sampled_tick), len(msg.sensor_faults)
    for i, sn in enumerate(md.sensors):
        r = out.sensors.add(name=sn.name, type=sn.type, object=sn.object)
        r.values.extend(msg.sensor_values[sn.value_index:sn.value_index + sn.dim])
        if i < nt:
            r.sampled_tick = msg.sensor_sampled_tick[i]
            r.age_ticks = max(0, tick - r.sampled_tick)
            r.age = r.age_ticks / msg.rate_hz if msg.rate_hz > 0 else 0.0
        r.fault = msg.sensor_faults[i] if i < nf else 0
        r.fault_name = FAULT_NAMES.get(r.fault, str(r.fault))
    for i, dr in enumerate(md.drives):
        f = msg.drive_faults[i] if i < len(msg.drive_faults) else 0
        out.drives.add(joint=dr.joint, fault=f, fault_name=FAULT_NAMES.get(f, str(f)))
    return out


class Foxglove:
    """Foxglove's message classes, built from the descriptors above."""

    def __init__(self):
        self.pool = _foxglove_pool()
        factory = message_factory.MessageFactory(self.pool)
        get = getattr(message_factory, "GetMessageClass", None)
        for name in ("FrameTransforms", "SceneUpdate"):
            d = self.pool.FindMessageTypeByName(f"foxglove.{name}")
            setattr(self, name, get(d) if get else factory.GetPrototype(d))

    def schema(self, name: str) -> bytes:
        return _file_set(self.pool.FindMessageTypeByName(f"foxglove.{name}").file)


# ------------------------------------------------------------- the scene
def _ts(msg, ns: int) -> None:
    msg.seconds, msg.nanos = divmod(ns, 1_000_000_000)


def _pose(p, pos, quat_wxyz) -> None:
    p.position.x, p.position.y, p.position.z = pos
    p.orientation.w, p.orientation.x, p.orientation.y, p.orientation.z = quat_wxyz


def _color(c, rgba) -> None:
    c.r, c.g, c.b, c.a = rgba


def _quat_mul(a, b):
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    return (aw * bw - ax * bx - ay * by - az * bz, aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx, aw * bz + ax * by - ay * bx + az * bw)


def _rotate(q, v):
    w, x, y, z = q
    r = _quat_mul(_quat_mul(q, (0.0, *v)), (w, -x, -y, -z))
    return r[1:]


def scene_update(fox: Foxglove, geo: dict, bodies: list[str], ns: int):
    """One frame-locked entity per body with its geoms (the visual ones
    where the body has some) as Foxglove primitives
    (a capsule is a cylinder and two spheres, a plane a 20 m thin tile, a mesh
    a triangle list)."""
    up = fox.SceneUpdate()
    ents = {}
    has_visual = {g["body"] for g in geo["geoms"] if g["visual"]}
    for g in geo["geoms"]:
        b = g["body"]
        if not g["visual"] and b in has_visual:
            continue  # a body with visual geoms shows those
        e = ents.get(b)
        if e is None:
            e = ents[b] = up.entities.add(frame_id=bodies[b], id=f"body/{bodies[b]}",
                                          frame_locked=True)
            _ts(e.timestamp, ns)
        a, bb, c = g["size"]
        pos, quat, rgba = g["pos"], g["quat"], g["rgba"]
        t = g["type"]
        if t == "box":
            p = e.cubes.add()
            p.size.x, p.size.y, p.size.z = 2 * a, 2 * bb, 2 * c
        elif t == "sphere":
            p = e.spheres.add()
            p.size.x = p.size.y = p.size.z = 2 * a
        elif t in ("cylinder", "capsule"):
            p = e.cylinders.add(bottom_scale=1.0, top_scale=1.0)
            p.size.x, p.size.y, p.size.z = 2 * a, 2 * a, 2 * bb
            if t == "capsule":
                for s in (-1, 1):
                    cap = e.spheres.add()
                    cap.size.x = cap.size.y = cap.size.z = 2 * a
                    off = _rotate(quat, (0.0, 0.0, s * bb))
                    _pose(cap.pose, [pos[k] + off[k] for k in range(3)], quat)
                    _color(cap.color, rgba)
        elif t == "plane":
            p = e.cubes.add()
            p.size.x, p.size.y, p.size.z = 20.0, 20.0, 0.002
            off = _rotate(quat, (0.0, 0.0, -0.001))
            _pose(p.pose, [pos[k] + off[k] for k in range(3)], quat)
            _color(p.color, rgba)
            continue
        elif t == "mesh" and 0 <= g["mesh"] < len(geo["meshes"]) and \
                geo["meshes"][g["mesh"]].get("omitted"):
            # over Describe's mesh bound: its bounding box, scaled
            m, s = geo["meshes"][g["mesh"]], g["size"]
            p = e.cubes.add()
            p.size.x, p.size.y, p.size.z = ((m["upper"][k] - m["lower"][k]) * s[k] for k in range(3))
            mid = _rotate(quat, [0.5 * (m["upper"][k] + m["lower"][k]) * s[k] for k in range(3)])
            _pose(p.pose, [pos[k] + mid[k] for k in range(3)], quat)
            _color(p.color, rgba)
            continue
        elif t == "mesh" and 0 <= g["mesh"] < len(geo["meshes"]):
            m = geo["meshes"][g["mesh"]]
            v, s = m["vertices"], g["size"]
            p = e.triangles.add()
            for i in m["faces"]:
                pt = p.points.add()
                pt.x, pt.y, pt.z = v[3 * i] * s[0], v[3 * i + 1] * s[1], v[3 * i + 2] * s[2]
        else:
            continue
        _pose(p.pose, pos, quat)
        _color(p.color, rgba)
    return up


def contacts_update(fox: Foxglove, msg, ns: int):
    """A state's contacts as one world-frame entity: points (spheres) and
    force arrows, 1 N draws 1 mm (an arrow points along its pose's +x); no
    contacts gives the entity empty, which clears the previous ones."""
    up = fox.SceneUpdate()
    e = up.entities.add(frame_id="world", id="contacts")
    _ts(e.timestamp, ns)
    for c in msg.contacts:
        s = e.spheres.add()
        s.size.x = s.size.y = s.size.z = 0.01
        _pose(s.pose, c.position, (1.0, 0.0, 0.0, 0.0))
        _color(s.color, (1.0, 0.82, 0.25, 1.0))
        f = list(c.force)
        n = sum(x * x for x in f) ** 0.5
        if n > 0:
            a = e.arrows.add(shaft_diameter=0.004, head_diameter=0.01)
            length = 0.001 * n
            a.shaft_length, a.head_length = 0.7 * length, 0.3 * length
            _pose(a.pose, c.position, _quat_from_x(f, n))
            _color(a.color, (1.0, 0.35, 0.25, 1.0))
    return up


def frame_transforms(fox: Foxglove, bodies: list[str], msg, ns: int):
    """world -> each body (but the world) at a state's poses."""
    tf = fox.FrameTransforms()
    pose = msg.body_pose
    for b in range(1, min(len(bodies), len(pose) // 7)):
        t = tf.transforms.add(parent_frame_id="world", child_frame_id=bodies[b])
        _ts(t.timestamp, ns)
        o = 7 * b
        t.translation.x, t.translation.y, t.translation.z = pose[o], pose[o + 1], pose[o + 2]
        t.rotation.w, t.rotation.x, t.rotation.y, t.rotation.z = pose[o + 3:o + 7]
    return tf


class Recorder:
    """Writes khz states (and the model, the scene, transforms) into an MCAP file."""

    def __init__(self, path: str, geometry: dict | None = None, tf_rate: float = 100.0):
        try:
            self._f = open(path, "wb")
        except OSError as e:
            raise KhzError(f"cannot write {path}: {e.strerror}") from None
        self.path = path
        self.w = Writer(self._f, profile="", library="khz")
        self.geo = geometry
        self.fox = Foxglove()
        self.tf_period = int(1e9 / tf_rate) if tf_rate > 0 else 0
        self.next_tf = None
        self.states = 0
        self.bodies: list[str] | None = None
        st_schema = self.w.schema("khz.v1.State", "protobuf",
                                  _file_set(state_pb2.DESCRIPTOR))
        md_schema = self.w.schema("khz.v1.ModelDescription", "protobuf",
                                  _file_set(control_pb2.DESCRIPTOR))
        tf_schema = self.w.schema("foxglove.FrameTransforms", "protobuf",
                                  self.fox.schema("FrameTransforms"))
        su_schema = self.w.schema("foxglove.SceneUpdate", "protobuf",
                                  self.fox.schema("SceneUpdate"))
        self.ch_model = self.w.channel("/khz/model", md_schema)
        self.ch_state = self.w.channel("/khz/state", st_schema)
        self.ch_tf = self.w.channel("/tf", tf_schema)
        self.ch_scene = self.w.channel("/scene", su_schema)
        self.ch_contacts = self.w.channel("/contacts", su_schema)
        self.ks = KhzSensors()
        self._sensor_schema = None
        self.ch_sensors = None  # /khz/sensors: added with the first model that has sensors
        self.md = None
        self._pending_model = None

    @property
    def bytes(self) -> int:
        return self.w.pos

    def model(self, model, geometry: dict | None = None) -> None:
        """The model (a khz Model) for the states that follow; written with
        the next state's time."""
        if geometry is not None:
            self.geo = geometry
        self.bodies = list(model.body_names)
        self.md = model.msg
        if (model.msg.sensors or model.msg.drives) and self.ch_sensors is None:
            self._sensor_schema = self.w.schema("khz.mcap.SensorReadings", "protobuf",
                                                self.ks.schema)
            self.ch_sensors = self.w.channel("/khz/sensors", self._sensor_schema)
        self._pending_model = model
        self.next_tf = None

    def state(self, st) -> None:
        """One state (a khz State: its raw bytes are written as they came)."""
        msg = st.msg
        ns = msg.wall_time_ns
        if self._pending_model is not None:
            self.w.message(self.ch_model, ns, self._pending_model.msg.SerializeToString())
            if self.geo is not None:
                self.w.message(self.ch_scene, ns,
                               scene_update(self.fox, self.geo, self.bodies, ns).SerializeToString())
            self._pending_model = None
        self.w.message(self.ch_state, ns, st.raw or msg.SerializeToString())
        self.states += 1
        if self.ch_sensors is not None and (self.md.sensors or self.md.drives):
            self.w.message(self.ch_sensors, ns,
                           sensor_readings(self.ks, self.md, msg, ns).SerializeToString())
        if self.bodies is None or (self.next_tf is not None and ns < self.next_tf):
            return
        # on a grid of tf_period from the first state (a late state does not shift it)
        self.next_tf = (ns if self.next_tf is None else self.next_tf) + self.tf_period
        if self.next_tf <= ns:
            self.next_tf = ns + self.tf_period
        tf = frame_transforms(self.fox, self.bodies, msg, ns)
        self.w.message(self.ch_tf, ns, tf.SerializeToString())
        if msg.contacts or self._had_contacts:
            self._contacts(msg, ns)

    _had_contacts = False

    def _contacts(self, msg, ns: int) -> None:
        self._had_contacts = bool(msg.contacts)
        self.w.message(self.ch_contacts, ns, contacts_update(self.fox, msg, ns).SerializeToString())

    def close(self) -> None:
        if not self._f.closed:
            self.w.close()
            self._f.close()

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _quat_from_x(v, n: float):
    """The rotation (w, x, y, z) taking +x onto v (|v| = n > 0)."""
    x, y, z = v[0] / n, v[1] / n, v[2] / n
    w = 1.0 + x  # half-way quaternion between (1, 0, 0) and v
    if w < 1e-9:
        return (0.0, 0.0, 0.0, 1.0)
    q = (w, 0.0, -z, y)
    k = sum(c * c for c in q) ** 0.5
    return tuple(c / k for c in q)
