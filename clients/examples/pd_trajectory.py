#!/usr/bin/env python3
"""pd_trajectory.py — the Python twin of pd_trajectory.c: a joint-space PD
controller that moves the default arm from its start pose through three
waypoints and back (quintic segments), answering each state with torques
    tau = kp (q_d - q) + kd (qd_d - qd)
and printing the tracking error per segment.

    PYTHONPATH=build/clients/python python3 clients/examples/pd_trajectory.py [--segment S]

Endpoints: --state / --command, else $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT,
else khz-server's defaults. Exit status 0 when the arm followed the trajectory.
"""

import argparse
import sys

import numpy as np

import khz

# offsets from the start pose per actuator (rad); the same as pd_trajectory.c
WAYPOINTS = np.array([
    [0, 0, 0, 0, 0, 0, 0],
    [0.4, 0.25, -0.3, 0.35, 0.3, -0.3, 0.5],
    [-0.3, 0.35, 0.3, 0.5, -0.3, 0.25, -0.4],
    [0.2, -0.2, 0.2, -0.2, 0.4, 0.3, 0.3],
    [0, 0, 0, 0, 0, 0, 0],
])


def quintic(a: np.ndarray, b: np.ndarray, t: float, T: float) -> tuple[np.ndarray, np.ndarray]:
    """From a to b over T, zero velocity and acceleration at both ends."""
    s = t / T
    return (a + (b - a) * s**3 * (10 - 15 * s + 6 * s * s),
            (b - a) * 30 * s * s * (1 - 2 * s + s * s) / T)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--state")
    ap.add_argument("--command")
    ap.add_argument("--segment", type=float, default=1.0, help="seconds per segment")
    args = ap.parse_args()

    try:
        c = khz.Client(args.state, args.command, timeout=3.0)
    except khz.KhzError as e:
        print(f"pd_trajectory.py: {e}", file=sys.stderr)
        return 1
    with c:
        m = c.model
        effort = np.where(np.isfinite(m.effort_limit), m.effort_limit, 50.0)
        kp, kd = 8 * effort, 0.12 * effort
        way = np.resize(WAYPOINTS, (len(WAYPOINTS), m.na))
        print(f"pd_trajectory.py: scene '{m.scene}', {m.na} actuators, {len(way) - 1} segments "
              f"of {args.segment:.2f} s, kp = 8 effort, kd = 0.12 effort")

        # the loop: one answer per state, targets at the state's simulated time
        st = c.latest_state(2.0)
        q0, t0 = st.position.copy(), st.sim_time
        nseg = len(way) - 1
        total = nseg * args.segment + 0.5
        sq = np.zeros(nseg + 1)
        worst = np.zeros(nseg + 1)
        count = np.zeros(nseg + 1, dtype=int)
        final = 0.0
        for st in c.states(timeout=2.0):
            t = st.sim_time - t0
            if t > total:
                break
            k = min(int(t / args.segment), nseg)
            if k < nseg:
                q_d, qd_d = quintic(q0 + way[k], q0 + way[k + 1], t - k * args.segment, args.segment)
            else:
                q_d, qd_d = q0 + way[-1], np.zeros(m.na)
            e = q_d - st.position
            c.send_torques(kp * e + kd * (qd_d - st.velocity), st)
            sq[k] += e @ e / m.na
            final = np.abs(e).max()
            worst[k] = max(worst[k], final)
            count[k] += 1

        # the tracking error, per segment
        for k in range(nseg + 1):
            if count[k]:
                name = f"segment {k + 1}" if k < nseg else "hold"
                print(f"  {name:<10} rms {np.sqrt(sq[k] / count[k]):.4f} rad, max {worst[k]:.4f} "
                      f"rad ({count[k]} states)")
        rms = float(np.sqrt(sq.sum() / max(count.sum(), 1)))
        print(f"result: rms tracking error {rms:.4f} rad, max {worst.max():.4f} rad, final "
              f"{final:.4f} rad; {count.sum()} states answered, {c.counters['gaps']} not seen")
        return 0 if rms < 0.05 and final < 0.05 else 1


if __name__ == "__main__":
    sys.exit(main())
