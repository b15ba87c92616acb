"""Builds khz_msgs.v1's modules from proto/khz_msgs/v1/*.proto with protoc
(Debian: protobuf-compiler) while pip builds the package; everything else is
in pyproject.toml."""
import glob
import os
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))


class BuildWithMessages(build_py):
    def run(self):
        super().run()
        proto = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
        files = sorted(glob.glob(os.path.join(proto, "khz_msgs", "v1", "*.proto")))
        if not files:
            raise SystemExit(f"khz: no .proto files under {proto}: build from the khz source tree")
        try:
            subprocess.run(["protoc", f"--proto_path={proto}", f"--python_out={self.build_lib}",
                            *files], check=True)
        except FileNotFoundError:
            raise SystemExit("khz: protoc not found (apt-get install protobuf-compiler)")


setup(cmdclass={"build_py": BuildWithMessages})
