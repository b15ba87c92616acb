#!/usr/bin/python3
"""make_server_seeds.py — writes fuzz/seeds/server/: one ClientMessage per
request kind, a command, a PD command, a haptic input, and a few broken ones
(the seed corpus of fuzz_server; committed, rerun after a schema change):
    PYTHONPATH=build/clients/python fuzz/make_server_seeds.py"""
import os

from khz_msgs.v1 import command_pb2, control_pb2, messages_pb2

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "server")
os.makedirs(out, exist_ok=True)
seeds = {}
reqs = {
    "describe": control_pb2.Describe(), "reset": control_pb2.Reset(q=[0.1] * 44),
    "pause": control_pb2.Pause(), "resume": control_pb2.Resume(), "step": control_pb2.Step(n=3),
    "set_mode": control_pb2.SetMode(mode=1), "set_rate": control_pb2.SetRate(rate_hz=500),
    "set_contact_method": control_pb2.SetContactMethod(method="deepest"),
    "set_gains": control_pb2.SetGains(kp=[10] * 7, kd=[1] * 7),
    "set_haptic_gains": control_pb2.SetHapticGains(proxy=0, stiffness=10, damping=1),
    "apply_wrench": control_pb2.ApplyWrench(body=control_pb2.BodyRef(name="box1"), force=[0, 0, 5],
                                            torque=[0, 0, 0.01], duration=0.1),
    "clear_wrenches": control_pb2.ClearWrenches(), "get_stats": control_pb2.GetStats(),
    "reset_stats": control_pb2.ResetStats(), "get_setting": control_pb2.GetSetting(name=""),
    "set_setting": control_pb2.SetSetting(name="watchdog_ms", value="50"),
    "start_recording": control_pb2.StartRecording(path="x.rec"),
    "stop_recording": control_pb2.StopRecording(), "claim": control_pb2.Claim(actuators=["arm/joint1"]),
    "release": control_pb2.Release(),
}
for i, (op, body) in enumerate(reqs.items()):
    rq = control_pb2.Request(id=i + 1)
    getattr(rq, op).CopyFrom(body)
    seeds[f"request_{op}"] = messages_pb2.ClientMessage(request=rq).SerializeToString()
seeds["command_torque"] = messages_pb2.ClientMessage(command=command_pb2.Command(
    model_generation=1, seq=1, state_seq=0, tau=[0.5] * 7)).SerializeToString()
seeds["command_pd"] = messages_pb2.ClientMessage(command=command_pb2.Command(
    model_generation=1, seq=2, q_target=[0] * 7, kp=[10] * 7, kd=[1] * 7)).SerializeToString()
seeds["haptic"] = messages_pb2.ClientMessage(haptic=command_pb2.HapticInput(
    proxy=0, position=[0, 0, 1], orientation=[1, 0, 0, 0])).SerializeToString()
seeds["garbage"] = b"\xff\xfe not protobuf"
seeds["empty"] = b""
seeds["unknown_field"] = bytes([0x1a, 0x05, 0x08, 0x05, 0xd0, 0x02, 0x07])
for name, data in seeds.items():
    with open(os.path.join(out, name + ".bin"), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds in {out}")
