"""khz.gym — a Gymnasium-style environment over khz.sim.Sim (reset, step,
observation_space, action_space) that does not need gymnasium installed:
with gymnasium importable the spaces are gymnasium.spaces.Box, else a small
Box of the same shape and bounds.

    env = khz.gym.Env("/usr/share/mujoco/model/humanoid/humanoid.xml", frame_skip=5)
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

Observation: q and qd concatenated (float64). Action: torques on the 1-dof
joints (revolute, continuous, prismatic) in body order, bounded by their
effort limits (unbounded joints get +-inf, the action is then not clipped).
Reward: reward(env) when given, else minus the squared distance of those
joints from their initial positions (hold the posture). Terminated: the step
rolled back a non-finite state (warning badstate). Truncated: max_steps.
"""

import numpy as np

from .sim import Sim

try:  # pragma: no cover - depends on the machine
    from gymnasium.spaces import Box
except ImportError:
    class Box:
        """The part of gymnasium.spaces.Box an agent uses: low, high, shape,
        dtype, sample(), contains()."""

        def __init__(self, low, high, shape=None, dtype=np.float64, seed=None):
            self.dtype = np.dtype(dtype)
            shape = shape if shape is not None else np.shape(low)
            self.low = np.broadcast_to(np.asarray(low, self.dtype), shape).copy()
            self.high = np.broadcast_to(np.asarray(high, self.dtype), shape).copy()
            self.shape = tuple(shape)
            self.np_random = np.random.default_rng(seed)

        def seed(self, seed=None):
            self.np_random = np.random.default_rng(seed)

        def sample(self):
            lo = np.where(np.isfinite(self.low), self.low, -1.0)
            hi = np.where(np.isfinite(self.high), self.high, 1.0)
            return self.np_random.uniform(lo, hi).astype(self.dtype)

        def contains(self, x):
            x = np.asarray(x)
            return x.shape == self.shape and bool(np.all(x >= self.low) and np.all(x <= self.high))

        def __repr__(self):
            return f"Box({self.shape}, {self.dtype})"


class Env:
    """model: as khz.sim.Sim; frame_skip: simulator steps per env step (the
    action held over them); max_steps: env steps per episode; init_noise:
    uniform noise (rad or m) on the 1-dof joints at reset, drawn from the
    reset's seed; sim_kwargs: mass_scale, friction, method."""

    metadata = {"render_modes": []}

    def __init__(self, model, *, frame_skip=1, max_steps=1000, init_noise=0.0, reward=None,
                 **sim_kwargs):
        self.sim = Sim(model, **sim_kwargs)
        self.frame_skip = int(frame_skip)
        self.max_steps = int(max_steps)
        self.init_noise = float(init_noise)
        self.reward_fn = reward
        s = self.sim
        eff = s.dof_effort[s.actuated_dofadr]
        bound = np.where(eff > 0, eff, np.inf)
        self.action_space = Box(-bound, bound, dtype=np.float64)
        self.observation_space = Box(-np.inf, np.inf, shape=(s.nq + s.nv,), dtype=np.float64)
        self.dt = s.timestep * self.frame_skip
        self._initial = None
        self._steps = 0
        self.np_random = np.random.default_rng()
        self._ibad = s.warning_names.index("badstate")

    def _obs(self):
        return np.concatenate([self.sim.q, self.sim.qd])

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.np_random = np.random.default_rng(seed)
            self.action_space.seed(seed)
        s = self.sim
        s.reset()
        if self.init_noise > 0 and len(s.actuated_qadr):
            s.q[s.actuated_qadr] += self.np_random.uniform(-self.init_noise, self.init_noise,
                                                           len(s.actuated_qadr))
            s.forward()
        self._initial = s.q[s.actuated_qadr].copy()
        self._steps = 0
        self._bad = s.warning_counts[self._ibad]
        return self._obs(), {"time": s.time}

    def step(self, action):
        s = self.sim
        a = np.asarray(action, dtype=np.float64)
        if a.shape != self.action_space.shape:
            raise ValueError(f"action: expected shape {self.action_space.shape}, got {a.shape}")
        s.tau[s.actuated_dofadr] = np.clip(a, self.action_space.low, self.action_space.high)
        s.step(self.frame_skip)
        self._steps += 1
        obs = self._obs()
        if self.reward_fn is not None:
            reward = float(self.reward_fn(self))
        else:
            reward = -float(np.sum((s.q[s.actuated_qadr] - self._initial) ** 2))
        bad = s.warning_counts[self._ibad]
        terminated = bool(bad > self._bad)
        self._bad = bad
        truncated = self._steps >= self.max_steps
        return obs, reward, terminated, truncated, {"time": s.time, "warnings": s.warnings}

    def close(self):
        self.sim.close()
