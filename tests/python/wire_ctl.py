#!/usr/bin/env python3
"""wire_ctl.py — a small external controller for campaign tests: PD towards
the posture it first sees on every actuator, one Command per state, over the
wire protocol (khz.Client), until the server goes away or SIGTERM.

    wire_ctl.py [--kp-per-effort K] [--gyro-damping K [--gyro NAME]] [--exit-after N]
                [--stall-after N]

Endpoints from $KHZ_STATE_ENDPOINT / $KHZ_COMMAND_ENDPOINT (khz campaign
sets them). --exit-after N exits with status 3 after answering N states;
--stall-after N stops answering after N states (a controller that hangs).
--gyro-damping K also damps the last actuator with the hil gyro NAME's z
reading (wrist_gyro; scenes/hil_arm.yaml): torque -K * reading, so that the
run depends on the sensor's seeded noise.
"""

import argparse
import signal
import sys
import time

import numpy as np

import khz


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kp-per-effort", type=float, default=2.0)
    ap.add_argument("--exit-after", type=int, default=0)
    ap.add_argument("--stall-after", type=int, default=0)
    ap.add_argument("--gyro-damping", type=float, default=0.0)
    ap.add_argument("--gyro", default="wrist_gyro")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with khz.Client(timeout=10.0) as c:
        m = c.model
        # the gains of khz.campaign.pd_hold, rounded alike: the same run in
        # process and over the wire gives the same state, bit for bit
        eff = np.where(np.isfinite(m.effort_limit) & (m.effort_limit > 0), m.effort_limit, 1.0)
        kp = eff * a.kp_per_effort
        kd = kp * 0.1
        target, answered, last = None, 0, None
        gyro_z = None
        if a.gyro_damping:
            sn = [s for s in m.msg.sensors if s.name == a.gyro]
            if not sn:
                print(f"wire_ctl: no sensor named {a.gyro!r}", file=sys.stderr)
                return 4
            gyro_z = sn[0].value_index + 2
        while True:
            try:
                st = c.next_state(30.0)
            except khz.Timeout:
                return 0  # the campaign is over
            if last is not None and st.seq == last:
                continue  # a lockstep keep-alive repeat: already answered
            last = st.seq
            if target is None or st.has("RESET"):
                target = st.position.copy()
            tau = kp * (target - st.position) - kd * st.velocity
            if gyro_z is not None:
                w = st.sensor_values[gyro_z]
                tau[-1] -= a.gyro_damping * (w if np.isfinite(w) else 0.0)
            c.send_torques(tau, st)
            answered += 1
            if a.exit_after and answered >= a.exit_after:
                return 3
            if a.stall_after and answered >= a.stall_after:
                time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
