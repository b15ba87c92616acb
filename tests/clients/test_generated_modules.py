"""A client written from the .proto files alone generates its messages with
protoc --python_out (issue 20, item 5). Those modules must not collide with
the client package `khz`: they land under khz_msgs.v1, beside it, whether the
user's directory comes first or last on the path, and with or without the
__init__.py files a user may add; messages built by either decode in the
other."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROTOS = [os.path.join("khz_msgs", "v1", n + ".proto") for n in ("state", "command", "control", "messages")]

PROBE = r"""
import sys, khz, khz.model
from khz_msgs.v1 import state_pb2, messages_pb2
assert hasattr(khz, "Client") and hasattr(khz, "Model"), "khz is not the client package: " + khz.__file__
st = state_pb2.State(seq=7, q=[0.5, -0.25])
back = khz.model.state_pb2.State.FromString(st.SerializeToString())
assert back.seq == 7 and list(back.q) == [0.5, -0.25]
print(khz.__file__, state_pb2.__file__)
"""


class Generated(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        gen = self.tmp.name
        subprocess.run(["protoc", "--proto_path=" + os.path.join(ROOT, "proto"), "--python_out=" + gen]
                       + [os.path.join(ROOT, "proto", p) for p in PROTOS], check=True)
        self.gen = gen
        self.client = [p for p in os.environ.get("PYTHONPATH", "").split(":") if p and "clients/python" in p]
        self.assertTrue(self.client, "PYTHONPATH names no clients/python build directory")

    def tearDown(self):
        self.tmp.cleanup()

    def probe(self, path):
        env = dict(os.environ, PYTHONPATH=":".join(path))
        r = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=self.gen, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_generated_tree(self):
        self.assertTrue(os.path.exists(os.path.join(self.gen, "khz_msgs", "v1", "state_pb2.py")))
        self.assertFalse(os.path.exists(os.path.join(self.gen, "khz")), "protoc wrote into khz/")

    def test_user_first_and_last(self):
        for path in ([self.gen] + self.client, self.client + [self.gen]):
            client, _ = self.probe(path)
            self.assertNotIn(self.gen, client)

    def test_user_packages(self):
        # a user who makes the generated tree a regular package shadows only
        # khz_msgs (the same descriptors), never the client
        for d in ("khz_msgs", os.path.join("khz_msgs", "v1")):
            open(os.path.join(self.gen, d, "__init__.py"), "w").close()
        client, msgs = self.probe([self.gen] + self.client)
        self.assertNotIn(self.gen, client)
        self.assertIn(self.gen, msgs)


if __name__ == "__main__":
    unittest.main()
