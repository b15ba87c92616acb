"""khz.sim — the simulator in your own Python process (no server): the C
library libkhz.so through ctypes, its state as numpy arrays that are views on
the C buffers (no copies), docs/python.md.

    import khz.sim
    sim = khz.sim.Sim("/usr/share/mujoco/model/humanoid/humanoid.xml")
    sim.step(1000)                      # 1000 steps in C, one call
    print(sim.time, sim.q[:3], sim.xpos[sim.body("torso")])
    sim.tau[:] = 0.0                    # torques, written into the C buffer
    s = sim.save(); h = sim.hash(); sim.step(10); sim.restore(s); assert sim.hash() == h

The library is found at $KHZ_LIBRARY, else where meson built or installed it
(khz/_paths.py, khz/_install.py), else by the dynamic loader (ldconfig,
LD_LIBRARY_PATH), else in the libdir of `pkg-config khz`.
"""

import ctypes
import ctypes.util
import os
import subprocess

import numpy as np

__all__ = ["Sim", "SimError", "library", "METHODS"]

METHODS = ("none", "penalty", "deepest", "lcp")
#: step(n) holds the GIL for n up to this (a few ms at most), releases it above
HOLD_GIL_STEPS = 16
_ERR = 1024


class SimError(RuntimeError):
    """A model that does not load or compile, a bad parameter, a method the
    model refuses: the message names the file or the value."""


def _candidates():
    env = os.environ.get("KHZ_LIBRARY")
    if env:
        yield env
        return
    for mod in ("_paths", "_install"):
        try:
            m = __import__(f"{__package__}.{mod}", fromlist=["LIBKHZ"])
            if getattr(m, "LIBKHZ", None):
                yield m.LIBKHZ
        except ImportError:
            pass
    found = ctypes.util.find_library("khz")
    if found:
        yield found
    yield "libkhz.so.0"
    try:  # -L (with PKG_CONFIG_SYSROOT_DIR applied, for staged installs)
        out = subprocess.run(["pkg-config", "--libs-only-L", "khz"], capture_output=True,
                             text=True, timeout=10).stdout.split()
        for flag in out:
            if flag.startswith("-L"):
                yield os.path.join(flag[2:], "libkhz.so.0")
    except (OSError, subprocess.SubprocessError):
        pass


_LIB = None


def library():
    """The loaded libkhz.so (a ctypes.CDLL with its signatures set)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            break
        except OSError as e:
            tried.append(f"{path} ({e})")
    else:
        raise SimError("libkhz.so not found; tried " + "; ".join(tried) +
                       ". Set KHZ_LIBRARY=/path/to/libkhz.so.0, or install it (meson install) and "
                       "make pkg-config find it (PKG_CONFIG_PATH)")
    V, P, D, I, L, S = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double, ctypes.c_int, \
        ctypes.c_long, ctypes.c_size_t
    DP = ctypes.POINTER(ctypes.c_double)
    sig = {
        "khz_capi_version": (I, []),
        "khz_capi_open": (V, [P, P, S]),
        "khz_capi_close": (None, [V]),
        "khz_capi_model": (V, [V]),
        "khz_capi_data": (V, [V]),
        "khz_capi_rateHz": (D, [V]),
        "khz_capi_scaleMass": (I, [V, P, D, P, S]),
        "khz_capi_setFriction": (I, [V, D, P, S]),
        "khz_capi_recompile": (I, [V, P, S]),
        "khz_capi_reset": (None, [V]),
        "khz_capi_stateWritten": (None, [V]),
        "khz_capi_step": (None, [V, L]),
        "khz_capi_contactFigures": (None, [V, DP]),
        "khz_capi_stepFigures": (None, [V, L, DP]),
        "khz_capi_energy": (None, [V, DP]),
        "khz_capi_field": (I, [P, ctypes.POINTER(S), ctypes.POINTER(S)]),
        "khz_capi_nActuator": (I, [V]),
        "khz_capi_actuatorName": (P, [V, I]),
        "khz_capi_setCtrl": (I, [V, P, D, P, S]),
        "khz_capi_getCtrl": (D, [V, I]),
        "khz_stateSize": (S, [V]),
        "khz_saveState": (None, [V, V, V]),
        "khz_restoreState": (None, [V, V, V]),
        "khz_hashState": (ctypes.c_uint64, [V, V]),
        "khz_contactMethodName": (P, [I]),
        "khz_contactMethodFromName": (I, [P]),
        "khz_contactMethodRefusal": (P, [V, I]),
        "khz_warningName": (P, [I]),
        "khz_name2body": (I, [V, P]),
        "khz_name2joint": (I, [V, P]),
        "khz_wake": (None, [V, V, I]),
    }
    # the same functions called without releasing the GIL (ctypes.PyDLL), for
    # calls of a few microseconds: releasing it lets any other Python thread
    # (a Dask worker's event loop) take it, and on a loaded machine getting it
    # back can cost an OS time slice per call (measured: a campaign run 4.5x
    # slower in a Dask worker at load 25 with every call releasing it)
    held = ctypes.PyDLL(path)
    for name, (res, args) in sig.items():
        for handle in (lib, held):
            f = getattr(handle, name)
            f.restype, f.argtypes = res, args
    lib.held = held
    if lib.khz_capi_version() != 2:
        raise SimError(f"libkhz.so at {path}: C API version {lib.khz_capi_version()}, this "
                       "module speaks version 2")
    lib.path = path
    _LIB = lib
    return lib


_FIELDS = {}


def _field(name):
    """(offset, size) of STRUCT.member in the library's own layout."""
    if name not in _FIELDS:
        off, size = ctypes.c_size_t(), ctypes.c_size_t()
        if library().khz_capi_field(name.encode(), ctypes.byref(off), ctypes.byref(size)):
            raise SimError(f"libkhz.so has no field {name}")
        _FIELDS[name] = (off.value, size.value)
    return _FIELDS[name]


def _struct_dtype(struct, members):
    """A numpy dtype laid out as the C struct (the library's offsets): members
    is [(name, numpy format)]; each size is checked against the C one."""
    names, formats, offsets = [], [], []
    for name, fmt in members:
        off, size = _field(f"{struct}.{name}")
        if np.dtype(fmt).itemsize != size:
            raise SimError(f"{struct}.{name}: {size} bytes in libkhz.so, {fmt} here")
        names.append(name)
        formats.append(fmt)
        offsets.append(off)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": _field(struct)[1]})


def _capture_stderr(fn, lines, quiet):
    """Calls fn with file descriptor 2 sent to a temporary file (the loaders
    print their warnings there), appends its lines to `lines` and, unless
    quiet, writes them to sys.stderr. Process-wide while fn runs: another
    thread's writes to fd 2 in that time land in `lines` too."""
    import sys
    import tempfile
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            result = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")
    lines.extend(line for line in text.splitlines() if line.strip())
    if text and not quiet:
        sys.stderr.write(text)
    return result


class Sim:
    """One model and its state, stepped in this process.

    model: a .xml (MJCF), .urdf, .yaml scene or "default". Optional
    parameters edit the model before it is compiled: mass_scale (a factor for
    every body, or {body: factor}), friction (every geom's Coulomb
    coefficient), method (contact method: none, penalty, deepest, lcp).
    The loaders' warnings (elements khz ignores, ...) are kept in
    load_warnings and printed to stderr unless quiet.

    Arrays (views on the C buffers; write q / qd then call forward()):
    q (nq), qd (nv), qdd (nv), tau (nv, the torques applied at the next step),
    xfrc (nbody x 6: world force and torque at each body's com), xpos
    (nbody x 3), xrot (nbody x 3 x 3), xcom (nbody x 3), contacts (the pairs
    of the last step: geom, body, normal, point_adr, npoint, deepest, mu),
    contact_points (pos, depth, force, force_implicit, bottom), warning_counts.

    The model's own actuators (MJCF <actuator>s, URDF <ros2_control>
    interfaces) are in actuators (names); set_ctrl({name: value}) sets their
    controls (MuJoCo's data.ctrl), which every step applies beside tau
    (each clamped to its ctrlrange, its force to its forcerange); they start at
    zero or the keyframe's, as in MuJoCo, and reset() restores that.
    """

    def __init__(self, model, *, mass_scale=None, friction=None, method=None, quiet=False):
        lib = library()
        self._lib, self._held = lib, lib.held
        self._h = None
        self.path = os.fspath(model)
        err = ctypes.create_string_buffer(_ERR)
        self.load_warnings = []
        self._h = _capture_stderr(lambda: lib.khz_capi_open(self.path.encode(), err, _ERR),
                                  self.load_warnings, quiet)
        if not self._h:
            raise SimError(err.value.decode(errors="replace"))
        edited = False
        if mass_scale is not None:
            items = mass_scale.items() if isinstance(mass_scale, dict) else [("", mass_scale)]
            for body, factor in items:
                if lib.khz_capi_scaleMass(self._h, body.encode(), float(factor), err, _ERR) < 0:
                    self.close()
                    raise SimError(f"{self.path}: {err.value.decode(errors='replace')}")
            edited = True
        if friction is not None:
            if lib.khz_capi_setFriction(self._h, float(friction), err, _ERR) < 0:
                self.close()
                raise SimError(f"{self.path}: {err.value.decode(errors='replace')}")
            edited = True
        if edited and lib.khz_capi_recompile(self._h, err, _ERR):
            self.close()
            raise SimError(f"{self.path}: {err.value.decode(errors='replace')}")
        self._bind()
        if method is not None:
            self.method = method

    # --------------------------------------------------------------- views --
    def _bind(self):
        lib, h = self._lib, self._h
        self._m, self._d = lib.khz_capi_model(h), lib.khz_capi_data(h)
        mi = lambda f: ctypes.c_int.from_address(self._m + _field("khzModel." + f)[0]).value
        self.nbody, self.nq, self.nv, self.ngeom = mi("nbody"), mi("nq"), mi("nv"), mi("ngeom")
        self.timestep = ctypes.c_double.from_address(self._m + _field("khzModel.timestep")[0]).value
        self.rate_hz = lib.khz_capi_rateHz(h)
        self.actuators = [lib.khz_capi_actuatorName(h, i).decode()
                          for i in range(lib.khz_capi_nActuator(h))]
        nb, nq, nv = self.nbody, self.nq, self.nv
        self.q, self.qd = self._darray("q", nq), self._darray("qd", nv)
        self.qdd, self.tau = self._darray("qdd", nv), self._darray("tau", nv)
        self.tau_applied = self._darray("tau_applied", nv)
        self.xfrc = self._darray("xfrc", nb * 6).reshape(nb, 6)
        self.xpos = self._darray("xpos", nb * 3).reshape(nb, 3)
        self.xrot = self._darray("xrot", nb * 9).reshape(nb, 3, 3)
        self.xcom = self._darray("xcom", nb * 3).reshape(nb, 3)
        off, size = _field("khzData.warning")
        self.warning_counts = np.ctypeslib.as_array(
            (ctypes.c_int * (size // ctypes.sizeof(ctypes.c_int))).from_address(self._d + off))
        self.warning_names = tuple(lib.khz_warningName(i).decode()
                                   for i in range(len(self.warning_counts)))
        # model arrays
        self.q0 = self._marray("q0", nq, ctypes.c_double)
        self.body_mass = self._marray("body_mass", nb, ctypes.c_double)
        self.body_parent = self._marray("body_parent", nb, ctypes.c_int)
        self.jnt_type = self._marray("jnt_type", nb, ctypes.c_int)
        self.jnt_qadr = self._marray("jnt_qadr", nb, ctypes.c_int)
        self.jnt_dofadr = self._marray("jnt_dofadr", nb, ctypes.c_int)
        self.jnt_nv = self._marray("jnt_nv", nb, ctypes.c_int)
        self.dof_effort = self._marray("dof_effort", nv, ctypes.c_double)
        for a in (self.q0, self.body_mass, self.body_parent, self.jnt_type, self.jnt_qadr,
                  self.jnt_dofadr, self.jnt_nv, self.dof_effort):
            a.flags.writeable = False  # the compiled model is immutable
        self.body_names = self._names("body_name", nb)
        self.joint_names = self._names("jnt_name", nb)
        # contacts: structured views over the whole capacity, sliced to the count
        cdt = _struct_dtype("khzContact", [("geom", "2i4"), ("body", "2i4"), ("normal", "3f8"),
                                           ("point_adr", "i4"), ("npoint", "i4"),
                                           ("deepest", "i4"), ("mu", "f8")])
        pdt = _struct_dtype("khzContactPoint", [("pos", "3f8"), ("depth", "f8"),
                                                ("force", "3f8"), ("force_implicit", "f8"),
                                                ("bottom", "i4")])
        npair = mi("npair_max")
        self._contact_all = self._records("contact", cdt, npair)
        self._cpoint_all = self._records("cpoint", pdt, npair * mi("max_points"))
        self._ncontact = ctypes.c_int.from_address(self._d + _field("khzData.ncontact")[0])
        self._ncpoint = ctypes.c_int.from_address(self._d + _field("khzData.ncpoint")[0])
        self._time = ctypes.c_double.from_address(self._d + _field("khzData.time")[0])
        self._method = ctypes.c_int.from_address(self._d + _field("khzData.contact_method")[0])
        self._state_size = lib.khz_stateSize(self._m)
        self._fig = (ctypes.c_double * 4)()
        # the 1-dof joints (revolute, continuous, prismatic): what a controller drives
        one = [b for b in range(1, nb) if self.jnt_type[b] in (1, 2, 3)]
        self.actuated_bodies = np.array(one, dtype=int)
        self.actuated_qadr = np.array([self.jnt_qadr[b] for b in one], dtype=int)
        self.actuated_dofadr = np.array([self.jnt_dofadr[b] for b in one], dtype=int)

    def _ptr(self, base, struct, member):
        return ctypes.c_void_p.from_address(base + _field(f"{struct}.{member}")[0]).value

    def _darray(self, member, n, ctype=ctypes.c_double):
        p = self._ptr(self._d, "khzData", member)
        return np.ctypeslib.as_array((ctype * n).from_address(p)) if n else np.zeros(0)

    def _marray(self, member, n, ctype):
        p = self._ptr(self._m, "khzModel", member)
        return np.ctypeslib.as_array((ctype * n).from_address(p)) if n else np.zeros(0)

    def _records(self, member, dtype, n):
        p = self._ptr(self._d, "khzData", member)
        raw = (ctypes.c_char * (dtype.itemsize * n)).from_address(p)
        return np.frombuffer(raw, dtype=dtype, count=n)

    def _names(self, member, n):
        p = self._ptr(self._m, "khzModel", member)
        return tuple(ctypes.string_at(p + 64 * i).decode() for i in range(n))

    # ----------------------------------------------------------- the state --
    @property
    def time(self):
        return self._time.value

    @property
    def contacts(self):
        """The pairs in contact after the last step (a view: valid until the next step)."""
        return self._contact_all[:self._ncontact.value]

    @property
    def contact_points(self):
        """Their points (contacts[i] has npoint of them from point_adr)."""
        return self._cpoint_all[:self._ncpoint.value]

    @property
    def warnings(self):
        """{name: count} of the counted warnings (stack, badstate, effort, ...)."""
        return dict(zip(self.warning_names, (int(c) for c in self.warning_counts)))

    @property
    def method(self):
        return self._lib.khz_contactMethodName(self._method.value).decode()

    @method.setter
    def method(self, name):
        k = self._lib.khz_contactMethodFromName(str(name).encode())
        if k < 0:
            raise SimError(f"contact method '{name}': expected one of {', '.join(METHODS)}")
        why = self._lib.khz_contactMethodRefusal(self._m, k)
        if why:
            raise SimError(f"{self.path}: contact method '{name}': {why.decode()}")
        self._method.value = k

    def body(self, name):
        """The index of body `name` (rows of xpos, xrot, xfrc)."""
        b = self._lib.khz_name2body(self._m, name.encode())
        if b < 0:
            raise SimError(f"{self.path}: no body named '{name}'")
        return b

    def joint(self, name):
        """(q index, qd index) of joint `name`'s first entry."""
        b = self._lib.khz_name2joint(self._m, name.encode())
        if b < 0:
            raise SimError(f"{self.path}: no joint named '{name}'")
        return int(self.jnt_qadr[b]), int(self.jnt_dofadr[b])

    def body_quat(self):
        """Body orientations as quaternions w x y z (nbody x 4; computed, a copy)."""
        R = self.xrot
        w = np.sqrt(np.maximum(0.0, 1.0 + R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2])) / 2
        x = np.copysign(np.sqrt(np.maximum(0.0, 1.0 + R[:, 0, 0] - R[:, 1, 1] - R[:, 2, 2])) / 2,
                        R[:, 2, 1] - R[:, 1, 2])
        y = np.copysign(np.sqrt(np.maximum(0.0, 1.0 - R[:, 0, 0] + R[:, 1, 1] - R[:, 2, 2])) / 2,
                        R[:, 0, 2] - R[:, 2, 0])
        z = np.copysign(np.sqrt(np.maximum(0.0, 1.0 - R[:, 0, 0] - R[:, 1, 1] + R[:, 2, 2])) / 2,
                        R[:, 1, 0] - R[:, 0, 1])
        return np.stack([w, x, y, z], axis=1)

    # ------------------------------------------------------------- actions --
    def step(self, n=1):
        """n steps of the model's timestep, in C (one call; up to HOLD_GIL_STEPS
        steps with the GIL held, more with it released so that other Python
        threads run meanwhile)."""
        n = int(n)
        (self._held if n <= HOLD_GIL_STEPS else self._lib).khz_capi_step(self._h, n)

    def set_ctrl(self, ctrl):
        """Sets actuator controls from {name: value}, all or nothing (SimError
        names an unknown actuator or a value that is not finite)."""
        err = ctypes.create_string_buffer(_ERR)
        before = self.ctrl
        for name, value in ctrl.items():
            if self._lib.khz_capi_setCtrl(self._h, str(name).encode(), float(value), err,
                                          _ERR) < 0:
                for n, v in before.items():
                    self._lib.khz_capi_setCtrl(self._h, n.encode(), v, err, _ERR)
                raise SimError(err.value.decode(errors="replace"))

    @property
    def ctrl(self):
        """The actuators' controls as {name: value}."""
        return {n: self._lib.khz_capi_getCtrl(self._h, i) for i, n in enumerate(self.actuators)}

    def step_figures(self, n, acc):
        """n steps keeping running figures in acc (a ctypes double[4], see khz/capi.h)."""
        n = int(n)
        (self._held if n <= HOLD_GIL_STEPS else self._lib).khz_capi_stepFigures(self._h, n, acc)

    def forward(self):
        """After writing q or qd: friction anchors, sleeping islands and kinematics follow."""
        self._held.khz_capi_stateWritten(self._h)

    def reset(self):
        """The model's initial state (q0, qd0), time 0, zero torques and wrenches."""
        self._lib.khz_capi_reset(self._h)

    def energy(self):
        """(kinetic, potential) in J at the current state."""
        out = (ctypes.c_double * 2)()
        self._held.khz_capi_energy(self._h, out)
        return out[0], out[1]

    def contact_figures(self):
        """(deepest depth in m, largest normal force of one pair in N) of the last step."""
        out = (ctypes.c_double * 2)()
        self._held.khz_capi_contactFigures(self._h, out)
        return out[0], out[1]

    def save(self):
        """The whole state (bit-exact, khz_saveState) as a numpy uint8 array."""
        buf = np.empty(self._state_size, dtype=np.uint8)
        self._lib.khz_saveState(self._m, self._d, buf.ctypes.data)
        return buf

    def restore(self, saved):
        """Back to a state save() returned (then stepping repeats bit for bit)."""
        buf = np.ascontiguousarray(np.frombuffer(saved, dtype=np.uint8))
        if buf.size != self._state_size:
            raise SimError(f"restore: a state of {buf.size} bytes, this model's are "
                           f"{self._state_size}")
        self._lib.khz_restoreState(self._m, self._d, buf.ctypes.data)

    def hash(self):
        """64-bit FNV-1a hash of the state (khz_hashState; the server's state hash)."""
        return int(self._held.khz_hashState(self._m, self._d))

    def close(self):
        if getattr(self, "_h", None):
            self._lib.khz_capi_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
