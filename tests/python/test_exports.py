"""test_exports.py — libkhz.so exports exactly the functions the public
headers declare (lib/khz.map): every declared function is in the map and
defined in the library, the map names nothing the headers do not declare,
and no other symbol (the private rt/ and loader/ functions) is exported.

Usage: test_exports.py LIBKHZ.so (run from the source root)."""

import re
import subprocess
import sys
import unittest

HEADERS = ["rt/include/khz/khz.h", "rt/include/khz/loop.h", "rt/include/khz/hil.h",
           "loader/include/khz/load.h",
           "lib/include/khz/capi.h"]
LIB = sys.argv.pop(1) if len(sys.argv) > 1 else "build/lib/libkhz.so"


def declared():
    """Function names declared in the headers (a name followed by '(' at
    the end of a declaration's first line's type, outside comments)."""
    names = set()
    for h in HEADERS:
        text = open(h).read()
        text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        text = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)
        for m in re.finditer(r"\b(khz_\w+)\s*\(([^;{]*)\)\s*;", text):
            names.add(m.group(1))
    return names


def mapped():
    text = open("lib/khz.map").read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    glob = text.split("global:")[1].split("local:")[0]
    return {n.strip() for n in glob.split(";") if n.strip()}


class Exports(unittest.TestCase):
    def test_map_is_the_headers(self):
        d, m = declared(), mapped()
        self.assertGreater(len(d), 100)
        self.assertEqual(sorted(d - m), [], "declared in the headers but not exported")
        self.assertEqual(sorted(m - d), [], "exported but not declared")

    def test_library_exports(self):
        out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                             check=True).stdout
        syms = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
        khz = {s for s in syms if s.startswith("khz")}
        self.assertEqual(sorted(mapped() - khz), [], "in the map but not defined in the library")
        self.assertEqual(sorted(khz - mapped()), [], "exported beyond the map")


if __name__ == "__main__":
    unittest.main()
