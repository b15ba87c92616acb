"""test_python_doc.py — every ```python block marked <!-- test: python --> in
docs/python.md and docs/campaigns.md runs (a fresh interpreter, a temporary
working directory) and exits 0, so that the documentation cannot drift from
the library. A block may also be marked <!-- test: file NAME --> (written to
NAME first, for the ones after it)."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

DOCS = ["docs/python.md", "docs/campaigns.md"]
MARK = re.compile(r"<!--\s*test:\s*(\w+)\s*(\S*)\s*-->\s*\n```\w*\n(.*?)```", re.S)


class Docs(unittest.TestCase):
    def test_blocks(self):
        n = 0
        for doc in DOCS:
            with open(doc) as f:
                text = f.read()
            with tempfile.TemporaryDirectory() as tmp:
                for m in MARK.finditer(text):
                    kind, arg, code = m.groups()
                    line = text[:m.start()].count("\n") + 1
                    if kind == "file":
                        with open(os.path.join(tmp, arg), "w") as f:
                            f.write(code)
                        continue
                    if kind == "sh":
                        cmd = ["bash", "-e", "-c", code]
                    else:
                        cmd = [sys.executable, "-c", code]
                    # `python3` in sh blocks is this interpreter (Debian's, with numpy)
                    bindir = os.path.join(tmp, ".bin")
                    os.makedirs(bindir, exist_ok=True)
                    if not os.path.exists(os.path.join(bindir, "python3")):
                        os.symlink(sys.executable, os.path.join(bindir, "python3"))
                    env = dict(os.environ, KHZ_SOURCE_ROOT=os.getcwd(),
                               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
                    p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, env=env,
                                       timeout=120)
                    print(f"{doc}:{line}:\n{p.stdout}{p.stderr}")
                    self.assertEqual(p.returncode, 0, f"{doc}:{line}: {p.stderr}")
                    n += 1
        self.assertGreaterEqual(n, 2)


if __name__ == "__main__":
    unittest.main()
