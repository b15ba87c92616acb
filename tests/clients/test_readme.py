"""test_readme.py — runs the README's walk-through, so that it cannot drift
from the code. Between <!-- clients: begin --> and <!-- clients: end -->
every fenced code block must carry a marker on the line before it:

    <!-- test: server -->         a command that starts khz-server: started in the
                                  background on private ipc:// endpoints (appended
                                  as --state-endpoint / --command-endpoint)
    <!-- test: file NAME -->      written to NAME in the working directory
    <!-- test: sh -->             run with bash -e in the working directory, where
                                  build/ is the build tree and $KHZ_*_ENDPOINT name
                                  the server above
    <!-- test: in PATH -->        every line appears in the source file PATH (the
                                  README quotes it)

The working directory is a fresh temporary one; python3 there is this
interpreter (the one with Debian's zmq and protobuf).
"""

import os
import re
import shlex
import subprocess
import tempfile
import unittest

from khztest import BUILD, PYTHON, QUIET, SOURCE, run

MARK = re.compile(r"<!--\s*test:\s*(\w+)\s*(\S*)\s*-->")


def blocks(text: str) -> list[tuple[str, str, str, int]]:
    """(kind, argument, code, line) of every fenced block in the clients part."""
    m = re.search(r"<!-- clients: begin -->(.*)<!-- clients: end -->", text, re.S)
    if not m:
        raise AssertionError("README.md has no <!-- clients: begin/end --> part")
    offset = text[:m.start(1)].count("\n")
    lines = m.group(1).split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            start = i
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            code = "\n".join(lines[i + 1:j]) + "\n"
            prev = next((lines[k] for k in range(start - 1, -1, -1) if lines[k].strip()), "")
            mark = MARK.search(prev)
            out.append((mark.group(1) if mark else "", mark.group(2) if mark else "", code,
                        offset + start + 1))
            i = j + 1
        else:
            i += 1
    return out


class Readme(unittest.TestCase):
    def test_walkthrough(self):
        with open(os.path.join(SOURCE, "README.md")) as f:
            found = blocks(f.read())
        self.assertGreaterEqual(len(found), 5)
        for kind, arg, code, line in found:
            self.assertIn(kind, ("server", "file", "sh", "in"),
                          f"README.md:{line}: a code block without a test marker")

        work = tempfile.mkdtemp(prefix="khz-readme-")
        os.symlink(os.path.abspath(BUILD), os.path.join(work, "build"))
        os.makedirs(os.path.join(work, ".bin"))
        os.symlink(PYTHON, os.path.join(work, ".bin", "python3"))
        env = dict(os.environ, PATH=os.path.join(work, ".bin") + ":" + os.environ["PATH"],
                   KHZ_STATE_ENDPOINT=f"ipc://{work}/state",
                   KHZ_COMMAND_ENDPOINT=f"ipc://{work}/cmd")
        server = None
        try:
            for kind, arg, code, line in found:
                where = f"README.md:{line}"
                if kind == "in":
                    with open(os.path.join(SOURCE, arg)) as f:
                        source = f.read()
                    for text in code.splitlines():
                        self.assertIn(text.strip(), source, f"{where}: not in {arg}: {text}")
                elif kind == "file":
                    if arg.endswith(".py"):
                        body = [x for x in code.splitlines() if x.strip()]
                        self.assertLess(len(body), 20, f"{where}: {arg} is not under 20 lines")
                    with open(os.path.join(work, arg), "w") as f:
                        f.write(code)
                elif kind == "server":
                    self.assertIsNone(server, f"{where}: a second server")
                    args = shlex.split(code.split("#")[0].strip()) + [
                        "--state-endpoint", env["KHZ_STATE_ENDPOINT"],
                        "--command-endpoint", env["KHZ_COMMAND_ENDPOINT"], *QUIET]
                    server = subprocess.Popen(args, cwd=work, env=env, stdout=subprocess.DEVNULL)
                    for _ in range(200):
                        if os.path.exists(f"{work}/cmd") and os.path.exists(f"{work}/state"):
                            break
                        self.assertIsNone(server.poll(), f"{where}: the server exited")
                        subprocess.run(["sleep", "0.025"])
                else:
                    r = subprocess.run(["bash", "-e", "-c", code], cwd=work, env=env,
                                       capture_output=True, text=True, timeout=120)
                    print(f"$ {code.strip()}\n{r.stdout}{r.stderr}")
                    self.assertEqual(r.returncode, 0, f"{where}: exit {r.returncode}\n{r.stderr}")
            self.assertIsNotNone(server, "the walk-through starts no server")
        finally:
            if server is not None:
                server.terminate()
                self.assertEqual(server.wait(10), 0, "khz-server did not stop cleanly")
            run(["rm", "-rf", work])


if __name__ == "__main__":
    unittest.main(verbosity=2)
