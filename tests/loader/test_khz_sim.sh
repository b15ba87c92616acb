#!/usr/bin/env bash
# test_khz_sim.sh — the khz-sim command line end to end (tools/khz-sim.c):
# info / fd / run on `default` and on scenes/models/arm7.urdf, the JSON they
# print, fd and run repeat exactly, the trajectory and contact CSVs have the
# documented shape, bad flags exit 2 with one message, model errors exit 1.
#
#   tests/loader/test_khz_sim.sh PATH/TO/khz-sim     (cwd: the source root)
set -u
SIM=${1:?usage: test_khz_sim.sh PATH/TO/khz-sim}
ARM=scenes/models/arm7.urdf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
checks=0
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect CODE DESCRIPTION -- COMMAND...: runs it, stdout in $TMP/out, stderr in $TMP/err
expect() {
  local want=$1 desc=$2
  shift 3
  checks=$((checks + 1))
  "$@" >"$TMP/out" 2>"$TMP/err"
  local got=$?
  if [ "$got" != "$want" ]; then
    fail "$desc: exit $got, expected $want: $*"
    sed 's/^/  stderr: /' "$TMP/err" >&2
    return 1
  fi
  return 0
}

# a bad command line: exit 2 and exactly one stderr line that contains $2
expect_usage() {
  local what=$1 phrase=$2
  shift 2
  expect 2 "$what" -- "$SIM" "$@" || return
  checks=$((checks + 1))
  if [ "$(wc -l <"$TMP/err")" != 1 ] || ! grep -qF -- "$phrase" "$TMP/err"; then
    fail "$what: expected one line with '$phrase', got: $(cat "$TMP/err")"
  fi
}

# py CHECK-DESCRIPTION 'python code reading json j from $TMP/out'
py() {
  local desc=$1 code=$2
  checks=$((checks + 1))
  if ! python3 -c "import json, sys
j = json.load(open(sys.argv[1]))
$code" "$TMP/out" 2>"$TMP/pyerr"; then
    fail "$desc: $(tail -1 "$TMP/pyerr")"
  fi
}

# ------------------------------------------------------------------ help --
expect 0 "--help" -- "$SIM" --help
# issue 19: the help names every format khz-sim reads
for fmt in FILE.urdf FILE.xml FILE.yaml default STL OBJ; do
  checks=$((checks + 1))
  grep -q "$fmt" "$TMP/out" || fail "--help does not name the format $fmt"
done
for cmd in info fd run; do
  expect 0 "$cmd --help" -- "$SIM" "$cmd" --help
  checks=$((checks + 1))
  grep -q "floating" "$TMP/out" || fail "$cmd --help does not document the floating layout"
done

# ------------------------------------------------------------------ info --
for model in default "$ARM"; do
  expect 0 "info $model" -- "$SIM" info "$model"
  checks=$((checks + 1))
  if ! grep -q "joint1" "$TMP/out" || ! grep -q "total mass" "$TMP/out" ||
    ! grep -q "nq:" "$TMP/out"; then
    fail "info $model: text lacks joints, nq or total mass"
  fi
  expect 0 "info --json $model" -- "$SIM" info "$model" --json
  py "info --json $model" '
b = j["bodies"]
assert j["nbody"] == len(b) + 1, "nbody"
assert sum(x["nq"] for x in b) == j["nq"] and sum(x["nv"] for x in b) == j["nv"], "nq/nv sums"
for x in b:
    for k in ("name", "parent", "joint", "type", "qadr", "dofadr", "lower", "upper",
              "velocity", "effort", "damping", "friction"):
        assert k in x, k
assert abs(sum(x["mass"] for x in b) - j["total_mass"]) < 1e-9, "mass"'
done
expect 0 "info --json arm7" -- "$SIM" info "$ARM" --json
py "arm7 has 7 revolute joints" '
assert j["nq"] == 7 and j["nv"] == 7, (j["nq"], j["nv"])
rev = [x for x in j["bodies"] if x["type"] == "revolute"]
assert len(rev) == 7 and all(x["limited"] for x in rev)
assert [x["qadr"] for x in rev] == list(range(7))'
expect 0 "info --json default" -- "$SIM" info default --json
cp "$TMP/out" "$TMP/info_default.json"
py "default has the arm and five floating objects" '
types = [x["type"] for x in j["bodies"]]
assert types.count("revolute") == 7 and types.count("floating") == 5, types
assert j["contact"] == "penalty" and abs(j["timestep"] - 1e-3) < 1e-15'

# -------------------------------------------------------------------- fd --
expect 0 "fd default" -- "$SIM" fd default
cp "$TMP/out" "$TMP/fd1.json"
py "fd default JSON" '
info = json.load(open(sys.argv[1].rsplit("/", 1)[0] + "/info_default.json"))
assert len(j["qdd"]) == info["nv"] == j["nv"], "qdd length"
assert len(j["joints"]) == 12 and j["joints"][0] == "arm/joint1", j["joints"]
assert all(isinstance(v, float) or isinstance(v, int) for v in j["qdd"])
# the loose objects fall freely: linear z acceleration = gravity
for k in range(5):
    assert abs(j["qdd"][7 + 6 * k + 2] + 9.81) < 1e-9, j["qdd"][7 + 6 * k + 2]'
expect 0 "fd default again" -- "$SIM" fd default
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/fd1.json" || fail "fd default differs between two invocations"

Q="0.1,-0.5,0.2,-1.8,0.1,1.4,0.3"
QD="0.1,0,0,0,0,0,-0.2"
TAU="1,2,3,4,0.5,0.25,0.125"
expect 0 "fd arm7 with a state" -- "$SIM" fd "$ARM" --q "$Q" --qd "$QD" --tau "$TAU"
cp "$TMP/out" "$TMP/fd2.json"
py "fd arm7 JSON" '
assert j["nv"] == 7 and len(j["qdd"]) == 7 and len(j["joints"]) == 7'
expect 0 "fd arm7 again (--flag=value form)" -- "$SIM" fd "$ARM" --tau="$TAU" --qd="$QD" --q="$Q"
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/fd2.json" || fail "fd arm7 differs between two invocations"
expect 0 "fd arm7 at q0" -- "$SIM" fd "$ARM"
checks=$((checks + 1))
cmp -s "$TMP/out" "$TMP/fd2.json" && fail "fd arm7 ignores --q/--qd/--tau"
expect 0 "fd --passive" -- "$SIM" fd "$ARM" --q "$Q" --qd "$QD" --passive
py "fd --passive JSON" 'assert j["passive"] is True and len(j["qdd"]) == 7'

# ------------------------------------------------------------------- run --
expect 0 "run default --out" -- "$SIM" run default --steps 100 --out "$TMP/traj.csv"
cp "$TMP/out" "$TMP/run1.json"
py "run default JSON" '
for k in ("steps", "dt", "integrator", "wall_time_s", "us_per_step", "final_time",
          "energy_start", "energy_end", "warnings", "state_hash", "contact_method",
          "contacts_at_end"):
    assert k in j, k
assert j["steps"] == 100 and j["dt"] == 1e-3 and j["integrator"] == "rk4"
assert abs(j["final_time"] - 0.1) < 1e-12
for e in ("energy_start", "energy_end"):
    assert set(j[e]) == {"kinetic", "potential", "total"}
assert j["energy_start"]["kinetic"] == 0
assert j["contact_method"] == "penalty", j["contact_method"]
assert len(j["state_hash"]) == 16 and int(j["state_hash"], 16) >= 0
assert set(j["warnings"]) == {"stack", "badstate", "effort", "badctrl", "contactfull", "impulse", "lcp"}'
checks=$((checks + 1))
python3 - "$TMP/traj.csv" "$TMP/info_default.json" <<'EOF' || fail "run --out CSV shape"
import csv, json, sys
rows = list(csv.reader(open(sys.argv[1])))
info = json.load(open(sys.argv[2]))
head = rows[0]
assert head[0] == "t" and head[1] == "q:arm/joint1[0]", head[:2]
assert len(head) == 1 + info["nq"] + info["nv"], len(head)
assert head[1 + info["nq"]] == "qd:arm/joint1[0]", head[1 + info["nq"]]
assert "q:box1[6]" in head and "qd:box1[5]" in head
assert len(rows) == 1 + 101, len(rows)
assert all(len(r) == len(head) for r in rows)
assert float(rows[1][0]) == 0 and abs(float(rows[-1][0]) - 0.1) < 1e-12
EOF
expect 0 "run default again" -- "$SIM" run default --steps 100
py "run is deterministic" '
first = json.load(open(sys.argv[1].rsplit("/", 1)[0] + "/run1.json"))
assert j["state_hash"] == first["state_hash"], (j["state_hash"], first["state_hash"])'

# the step on more threads (--threads, khz_setThreads): the same bits
expect 0 "run default --threads 2" -- "$SIM" run default --steps 100 --threads 2
py "run --threads 2 gives the 1-thread state" '
first = json.load(open(sys.argv[1].rsplit("/", 1)[0] + "/run1.json"))
assert j["state_hash"] == first["state_hash"], (j["state_hash"], first["state_hash"])'
expect_usage "run: --threads 0" "--threads: expected an integer from 1 to 16" run default --steps 10 --threads 0

expect 0 "run arm7 euler" -- \
  "$SIM" run "$ARM" --steps 50 --dt 0.002 --integrator euler --out "$TMP/arm.csv"
py "run arm7 JSON" '
assert j["dt"] == 0.002 and j["integrator"] == "euler" and j["steps"] == 50
assert j["contact_method"] == "none" and abs(j["final_time"] - 0.1) < 1e-12'
checks=$((checks + 1))
ncols=$(head -1 "$TMP/arm.csv" | tr ',' '\n' | wc -l)
if [ "$(wc -l <"$TMP/arm.csv")" != 52 ] || [ "$ncols" != 15 ]; then
  fail "run arm7 CSV: expected 52 lines of 15 columns"
fi

# -------------------------------------------------------- run --contacts --
# a 2 kg box resting on the ground: one pair (world, crate), the normal toward
# body0 (the world: -z), the bottom points' forces on body0 add up to -m g
cat >"$TMP/rest.yaml" <<'EOF'
khz_scene: 1
ground: {}
objects:
  - {name: crate, shape: box, size: [0.1, 0.1, 0.1], mass: 2, pos: [0.3, 0, 0.1]}
EOF
expect 0 "run --contacts" -- "$SIM" run "$TMP/rest.yaml" --steps 3000 --out "$TMP/rest.csv" \
  --contacts "$TMP/contacts.csv"
checks=$((checks + 1))
grep -q "contact rows to" "$TMP/err" || fail "run --contacts: no 'contact rows' note on stderr"
checks=$((checks + 1))
python3 - "$TMP/contacts.csv" "$TMP/rest.csv" <<'EOF' || fail "run --contacts CSV"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
head = rows[0]
assert head == ["step", "t", "body0", "body1", "geom0", "geom1", "point", "bottom", "x", "y", "z",
                "nx", "ny", "nz", "depth", "fx", "fy", "fz"], head
assert all(len(r) == len(head) for r in rows)
rows = [dict(zip(head, r)) for r in rows[1:]]
assert rows
steps = [int(r["step"]) for r in rows]
assert steps == sorted(steps) and 1 <= steps[0] and steps[-1] == 3000, (steps[0], steps[-1])
traj = list(csv.reader(open(sys.argv[2])))
for r in rows:
    assert r["body0"] == "world" and r["body1"] == "crate" and (r["geom0"], r["geom1"]) == ("0", "1")
    assert (float(r["nx"]), float(r["ny"]), float(r["nz"])) == (0, 0, -1), r
    assert float(r["depth"]) >= 0 and r["bottom"] in ("0", "1")
    assert float(r["t"]) == float(traj[int(r["step"]) + 1][0])  # the step's row in --out
    if r["bottom"] == "0":
        assert float(r["fx"]) == float(r["fy"]) == float(r["fz"]) == 0, r
last = [r for r in rows if r["step"] == "3000"]
assert sum(r["bottom"] == "1" for r in last) == 4, last
fz = sum(float(r["fz"]) for r in last)
assert abs(fz + 2 * 9.81) < 0.05, fz
assert all(abs(float(r["x"]) - 0.3) <= 0.1 + 1e-9 for r in last)
EOF
expect 1 "unwritable --contacts" -- "$SIM" run default --steps 1 --contacts "$TMP/no/such/dir/c.csv"
expect_usage "run: empty --contacts" "--contacts: expected a file name" \
  run default --steps 1 --contacts ""
expect_usage "run: --contacts with an experiment" "drop --steps/--out/--contacts" \
  run scenes/validation/stack.yaml --contacts "$TMP/c.csv"

# ----------------------------------------------------- actuators (--ctrl) --
# a model's own actuators: listed by info, at ctrl 0 by default (the servos
# pull to 0), --ctrl by name held for the run (test_actuator_oracle compares
# the same with MuJoCo)
ACT=tests/loader/data/mjcf_actuator_ranges.xml
expect 0 "info lists actuators" -- "$SIM" info "$ACT" && {
  checks=$((checks + 1))
  grep -q "hinge_motor *motor *joint hinge" "$TMP/out" || fail "info: no actuator lines"
}
expect 0 "run at ctrl 0" -- "$SIM" run "$ACT" --steps 200 && {
  py "ctrl 0" 'assert j["ctrl"] == {"hinge_motor": 0, "hinge_servo": 0, "slide_vel": 0, "slide_servo": 0}, j["ctrl"]'
  cp "$TMP/out" "$TMP/ctrl0.json"
}
expect 0 "run with --ctrl" -- "$SIM" run "$ACT" --steps 200 --ctrl hinge_servo=0.5,slide_vel=-0.25 && \
  py "--ctrl held and changes the run" '
c = json.load(open("'"$TMP/ctrl0.json"'"))
assert j["ctrl"]["hinge_servo"] == 0.5 and j["ctrl"]["slide_vel"] == -0.25 and j["ctrl"]["hinge_motor"] == 0
assert j["state_hash"] != c["state_hash"]'
expect_usage "run: --ctrl unknown" "'nope' is not one of the model's 4 actuators" \
  run "$ACT" --steps 1 --ctrl nope=1
expect_usage "run: --ctrl no value" "'hinge_motor' is not NAME=VALUE" \
  run "$ACT" --steps 1 --ctrl hinge_motor
expect_usage "run: --ctrl not a number" "('x') is not a finite number" \
  run "$ACT" --steps 1 --ctrl hinge_motor=x
expect_usage "run: --ctrl without actuators" "is not one of the model's 0 actuators" \
  run default --steps 1 --ctrl a=1

# ------------------------------------------------------------- bad flags --
expect_usage "no command" "usage: khz-sim info|fd|run"
expect_usage "unknown command" "unknown command 'jump'" jump default
expect_usage "unknown flag" "unknown flag '--frobnicate'" info default --frobnicate
expect_usage "missing model" "MODEL missing" fd --q 1
expect_usage "two models" "unexpected argument" info default "$ARM"
expect_usage "fd: too few q" "--q: expected 7" fd "$ARM" --q 1,2,3,4,5,6
expect_usage "fd: too many tau" "--tau: expected 7" fd "$ARM" --tau 1,2,3,4,5,6,7,8
expect_usage "fd: not a number" "--qd: entry 3 'x'" fd "$ARM" --qd 0,0,x,0,0,0,0
expect_usage "fd: no value" "--q needs a value" fd "$ARM" --q
expect_usage "fd: flag twice" "--q given twice" fd "$ARM" --q 0,0,0,0,0,0,0 --q 0,0,0,0,0,0,0
expect_usage "fd: nan" "--tau: entry 1 'nan'" fd "$ARM" --tau nan,0,0,0,0,0,0
expect_usage "run: no steps" "--steps N is required" run default
expect_usage "run: zero steps" "--steps: expected an integer" run default --steps 0
expect_usage "run: steps word" "--steps: expected an integer" run default --steps ten
expect_usage "run: bad dt" "--dt: expected" run default --steps 1 --dt -0.001
expect_usage "run: bad integrator" "--integrator: expected rk4 or euler" \
  run default --steps 1 --integrator verlet
expect_usage "info: value on a switch" "--json takes no value" info default --json=yes

# ---------------------------------------------------------- model errors --
for cmd in info fd "run --steps 1"; do
  # shellcheck disable=SC2086
  expect 1 "$cmd: missing file" -- "$SIM" $cmd "$TMP/no_such_robot.urdf" || continue
  checks=$((checks + 1))
  grep -q "no_such_robot.urdf" "$TMP/err" || fail "$cmd: missing file not named: $(cat "$TMP/err")"
done
expect 1 "missing scene" -- "$SIM" info "$TMP/no_such_scene.yaml"
expect 1 "bad scene" -- "$SIM" run tests/loader/data/scene_negative_mass.yaml --steps 1
checks=$((checks + 1))
grep -q "scene_negative_mass.yaml:7:.*objects\[0\].mass" "$TMP/err" ||
  fail "bad scene: message lacks file:line and key: $(cat "$TMP/err")"
expect 1 "unknown model type" -- "$SIM" info README.txt
expect 1 "unwritable --out" -- "$SIM" run default --steps 1 --out "$TMP/no/such/dir/t.csv"

# the LCP method does not solve equality constraints: refused, not ignored
if expect 2 "--method lcp on a model with equality constraints" -- \
    "$SIM" run tests/loader/data/mjcf_fourbar.xml --steps 10 --method lcp; then
  checks=$((checks + 1))
  grep -qF "does not solve the model's equality constraints" "$TMP/err" ||
    fail "--method lcp with constraints: $(tail -1 "$TMP/err")"
fi

# --method peg (issue 22): three boxes come to rest under PEG with no
# fallback; a scene with other shapes is refused with the reason
if expect 0 "--method peg on three boxes" -- \
    "$SIM" run tests/server/data/peg_boxes.yaml --steps 400 --method peg; then
  checks=$((checks + 1))
  grep -q '"contact_method": "peg"' "$TMP/out" && grep -q '"lcp": 0' "$TMP/out" &&
    grep -q '"badstate": 0' "$TMP/out" ||
    fail "--method peg: $(grep -E 'contact_method|warnings' "$TMP/out")"
fi
if expect 2 "--method peg on the default scene (a ball, a can, a capsule)" -- \
    "$SIM" run default --steps 10 --method peg; then
  checks=$((checks + 1))
  grep -qF "the PEG method takes boxes, convex meshes and planes only" "$TMP/err" ||
    fail "--method peg on other shapes: $(tail -1 "$TMP/err")"
fi

echo "$checks checks, $failures failed"
[ "$failures" = 0 ]
