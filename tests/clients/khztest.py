"""khztest — helpers of the Python client tests: a real khz-server process
(the built binary) on private ipc:// endpoints, fake servers that speak
something else, and the build tree's paths (KHZ_BUILD_ROOT,
KHZ_SOURCE_ROOT, set by tests/clients/meson.build)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import zmq

BUILD = os.environ.get("KHZ_BUILD_ROOT", "build")
SOURCE = os.environ.get("KHZ_SOURCE_ROOT", ".")
SERVER = os.path.join(BUILD, "server", "khz-server")
KHZ = os.path.join(BUILD, "clients", "khz")
EXAMPLES = os.path.join(BUILD, "clients", "examples")
PYTHON = sys.executable
QUIET = ["--rt-priority", "0", "--io-priority", "0", "--lock-memory", "false",
         "--cpu-dma-latency-us", "-1", "--log-level", "warn"]


class Server:
    """khz-server on ipc:// endpoints in a temporary directory.

    with Server(scene="scenes/haptic_wall.yaml") as s:
        khz.Client(s.state, s.command)
    """

    def __init__(self, scene: str | None = None, extra: list[str] | None = None):
        self.dir = tempfile.mkdtemp(prefix="khz-pytest-")
        self.state = f"ipc://{self.dir}/state"
        self.command = f"ipc://{self.dir}/cmd"
        self.scene = scene
        self.extra = list(extra or [])
        self.proc: subprocess.Popen | None = None

    def start(self) -> "Server":
        args = [SERVER, "--state-endpoint", self.state, "--command-endpoint", self.command,
                "--record-dir", self.dir, *QUIET]
        if self.scene:
            args += ["--scene", os.path.join(SOURCE, self.scene)]
        self.proc = subprocess.Popen(args + self.extra, stdout=subprocess.DEVNULL)
        for _ in range(200):
            if os.path.exists(self.state[6:]) and os.path.exists(self.command[6:]):
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"khz-server exited with {self.proc.returncode}")
            time.sleep(0.025)
        raise RuntimeError("khz-server did not bind its endpoints")

    def stop(self) -> int:
        if self.proc is None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(10)
        self.proc = None
        return rc

    def env(self) -> dict[str, str]:
        """The environment with this server's endpoints as the defaults."""
        env = dict(os.environ)
        env["KHZ_STATE_ENDPOINT"] = self.state
        env["KHZ_COMMAND_ENDPOINT"] = self.command
        return env

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Server":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()


class FakeServer:
    """A ROUTER (and PUB) that answers every message with answer(bytes) ->
    bytes (or None: no answer): for protocol-version and malformed-reply
    tests. publish: bytes published as states every 5 ms, if given."""

    def __init__(self, answer, publish: bytes | None = None):
        self.dir = tempfile.mkdtemp(prefix="khz-fake-")
        self.state = f"ipc://{self.dir}/state"
        self.command = f"ipc://{self.dir}/cmd"
        self.answer = answer
        self.publish = publish
        self._ctx = zmq.Context()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._pub = self._ctx.socket(zmq.PUB)
        self._router.bind(self.command)
        self._pub.bind(self.state)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.publish is not None:
                self._pub.send_multipart([b"state", self.publish])
            if self._router.poll(5):
                ident, body = self._router.recv_multipart()[:2]
                out = self.answer(body)
                if out is not None:
                    self._router.send_multipart([ident, out])

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["KHZ_STATE_ENDPOINT"] = self.state
        env["KHZ_COMMAND_ENDPOINT"] = self.command
        return env

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._router.close(0)
        self._pub.close(0)
        self._ctx.term()
        shutil.rmtree(self.dir, ignore_errors=True)


def answer_v2_reply(body: bytes) -> bytes:
    """What a khz.v2 server might say to a khz.v1 Describe."""
    from khz_msgs.v1 import control_pb2, messages_pb2
    m = messages_pb2.ClientMessage()
    m.ParseFromString(body)
    r = control_pb2.Reply(id=m.request.id, code=control_pb2.UNKNOWN_TYPE,
                          error="unknown request type (field 2): this server speaks khz.v2")
    return messages_pb2.ServerMessage(reply=r).SerializeToString()


def answer_garbage(body: bytes) -> bytes:
    return b"\xff\xfe not protobuf"


def answer_model(body: bytes, q_index: int = 0, protocol_version: int = 0) -> bytes:
    """A small description (one actuator at q_index)."""
    from khz_msgs.v1 import control_pb2, messages_pb2
    m = messages_pb2.ClientMessage()
    m.ParseFromString(body)
    d = control_pb2.ModelDescription(model_generation=77, scene="fake", rate_hz=1000, nq=2, nv=2,
                                     na=1, protocol_version=protocol_version)
    d.actuators.add(name="j", q_index=q_index)
    r = control_pb2.Reply(id=m.request.id, model=d)
    return messages_pb2.ServerMessage(reply=r).SerializeToString()


def answer_bad_model(body: bytes) -> bytes:
    """A description whose actuator points outside q."""
    return answer_model(body, q_index=5)


def run(args: list[str], env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    """A program's exit status and text output."""
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)
