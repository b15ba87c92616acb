"""khz — the Python client of khz-server, a real-time rigid-body simulation
server (the khz.v1 wire protocol over ZeroMQ and protobuf).

    import khz
    with khz.Client() as c:                       # default endpoints or $KHZ_*_ENDPOINT
        m = c.model                               # joints, bodies, actuators; m.actuator("joint2")
        for st in c.states(seconds=3):            # st.q, st.qd, st.position, ... numpy arrays
            c.send_torques(-5.0 * st.velocity)    # answers st: applied at the next tick

Modules: khz.client (Client), khz.model (Model, State), khz.recording
(Recorder, read), khz.errors, khz_msgs.v1 (the generated messages, a package of its own), khz.cli (the
`khz` command).
"""

from .client import COMMAND_ENDPOINT, STATE_ENDPOINT, Client, default_endpoints, read_keys
from .errors import (KhzError, MalformedReply, NotConnected, ProtocolMismatch, RequestRefused,
                     ServerNotRunning, Timeout, UnknownName)
from .model import FLAGS, MODES, PROTOCOL, WARNINGS, Body, Joint, Model, State, flag_names

__version__ = "0.1.0"

__all__ = ["Client", "Model", "State", "Joint", "Body", "KhzError", "ServerNotRunning", "Timeout",
           "ProtocolMismatch", "MalformedReply", "RequestRefused", "UnknownName", "NotConnected",
           "FLAGS", "MODES", "WARNINGS", "PROTOCOL", "STATE_ENDPOINT", "COMMAND_ENDPOINT",
           "default_endpoints", "read_keys", "flag_names"]
