#!/usr/bin/env python3
"""Merges the outputs of one benchmark run (scripts/bench.sh) into
results.md and results.csv, and describes the machine (machine.md).

    merge_results.py --raw DIR --out DIR --mode full|quick [--previous OLD.csv]
                     [--load-before "1.0 0.8 0.5"]

DIR holds what scripts/bench.sh captured: peers.jsonl (bench_peers --json),
dynamics.txt (bench_dynamics), loop.txt (bench_loop at 1 kHz), and when present
loop_haptic.txt, loop_haptic_spin.txt and loop_haptic_spin_nocpu.txt (bench_loop at the haptic rate, the
loop sleeping to each deadline, spinning its last microseconds, and spinning without the
tick's CPU-clock reads). With --previous, the
medians are compared with an earlier results.csv and the changes printed on
stdout (not written to the results). docs/benchmarks.md explains every figure.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import re
import subprocess
import sys

CSV_COLUMNS = [
    "section", "scene", "engine", "status", "bodies", "steps", "median_us", "p99_us", "p999_us",
    "max_us", "steps_per_s", "time_ratio_to_khz", "mean_penetration_m", "max_penetration_m",
    "kinetic_energy_at_rest_j", "energy_drift", "energy_drift_worst", "rest_time_s", "simulated_s",
    "escaped", "drift_m", "sink_m", "contacts_mean", "torso_height_end_m", "growth_exponent",
    "fd_us", "fd_ratio",
]


def run(cmd):
    """a command's first output line, or '' when it fails"""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
        return out.strip().splitlines()[0] if out.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def read_text(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def uncommitted():
    """source files that differ from the commit (results excluded), named when few"""
    try:
        out = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!bench/results"],
                             capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    paths = [line[3:] for line in out.splitlines() if line.strip()]
    if len(paths) > 5:
        return f"{len(paths)} files"
    return ", ".join(paths)


def machine(load_before):
    """what a reader needs to compare this run with theirs"""
    cpu = re.search(r"^model name\s*:\s*(.*)$", read_text("/proc/cpuinfo"), re.M)
    mem = re.search(r"^MemTotal:\s*(\d+)", read_text("/proc/meminfo"), re.M)
    pkgs = {}
    for pkg in ("libmujoco-dev", "libode-dev", "libbullet-dev", "rt-tests", "libzmq3-dev"):
        pkgs[pkg] = run(["dpkg-query", "-W", "-f", "${Version}", pkg]) or "not installed"
    commit = run(["git", "rev-parse", "--short", "HEAD"])
    dirty = uncommitted()
    return {
        "date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "khz commit": commit + (f" (with uncommitted changes: {dirty})" if dirty else ""),
        "CPU": cpu.group(1).strip() if cpu else platform.processor() or "unknown",
        "cores": str(os.cpu_count()),
        "memory": f"{int(mem.group(1)) / 1048576:.1f} GiB" if mem else "unknown",
        "kernel": platform.release(),
        "Debian": read_text("/etc/debian_version", "not Debian").strip(),
        "compiler": run(["cc", "--version"]),
        "MuJoCo (libmujoco-dev)": pkgs["libmujoco-dev"],
        "ODE (libode-dev)": pkgs["libode-dev"],
        "Bullet (libbullet-dev)": pkgs["libbullet-dev"],
        "cyclictest (rt-tests)": pkgs["rt-tests"],
        "ZeroMQ (libzmq3-dev)": pkgs["libzmq3-dev"],
        "load average before / after": f"{load_before or '?'} / "
                                        + " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }


def read_peers(path):
    engines, rows, fits = [], [], {}
    for line in read_text(path).splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj["section"] == "engine":
            engines.append(obj)
        elif obj["section"] == "scaling_fit":
            fits[obj["engine"]] = obj["growth_exponent"]
        else:
            rows.append(obj)
    return engines, rows, fits


LOOP_ROW = re.compile(r"^  (\S.*?)\s{2,}([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+(.*)$")


def read_loop(text):
    """bench_loop's percentile rows and its summary lines"""
    rows, notes = [], []
    for line in text.splitlines():
        m = LOOP_ROW.match(line)
        if m:
            vals = [None if v == "-" else float(v) for v in m.groups()[1:5]]
            rows.append({"name": m.group(1), "p50": vals[0], "p99": vals[1], "p999": vals[2],
                         "max": vals[3], "what": m.group(6)})
        elif line.startswith("  ") and line.strip() and "(us)" not in line:
            notes.append(line.strip())
        elif line.startswith("rt thread:") or line.startswith("controller thread:"):
            notes.insert(0, line.strip())
    return rows, notes


def read_dynamics(text):
    """bench_dynamics' title line and its markdown table"""
    title = next((l for l in text.splitlines() if l.startswith("khz vs MuJoCo")), "")
    table = [l for l in text.splitlines() if l.startswith("|")]
    return title, table


def fmt(v, digits=4):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, int):
        return str(v)
    return f"{v:.{digits}g}"


def scene_figure(r):
    if r.get("escaped") is not None:
        rest = r.get("rest_time_s")
        when = (f"at rest after {rest:.3g} s" if rest is not None
                else f"not at rest in {fmt(r.get('simulated_s'), 3)} s")
        return f"{when}; {r['escaped']} escaped"
    if r.get("drift_m") is not None:
        return f"drift {1e3 * r['drift_m']:.3g} mm, sink {1e3 * r['sink_m']:.3g} mm"
    if r.get("energy_drift") is not None:
        return (f"energy {r['energy_drift']:+.2e} (worst {r['energy_drift_worst']:.2e}) "
                f"in {fmt(r.get('simulated_s'), 3)} s")
    return "–"


def md_scene_table(rows):
    out = ["| scene | engine | bodies | steps | µs/step median | p99 | steps/s | time / khz "
           "| mean pen. (m) | max pen. (m) | KE at rest (J) | scene figure | status |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["section"] != "scene":
            continue
        sps = r.get("steps_per_s")
        out.append(f"| {r['scene']} | {r['engine']} | {r['bodies']} | {r['steps']} | {fmt(r.get('median_us'))} "
                   f"| {fmt(r.get('p99_us'))} | {fmt(round(sps) if sps else None)} "
                   f"| {fmt(r.get('time_ratio_to_khz'), 3)} | {fmt(r.get('mean_penetration_m'), 3)} "
                   f"| {fmt(r.get('max_penetration_m'), 3)} | {fmt(r.get('kinetic_energy_at_rest_j'), 3)} "
                   f"| {scene_figure(r)} | {r['status']} |")
    return out


def md_scaling_table(rows, fits):
    scaling = [r for r in rows if r["section"] == "scaling"]
    counts = sorted({r["bodies"] for r in scaling})
    engines = list(dict.fromkeys(r["engine"] for r in scaling))
    if not counts:
        return []
    out = ["| engine | " + " | ".join(f"{n} bodies µs" for n in counts) + " | growth exponent |",
           "|---|" + "---|" * (len(counts) + 1)]
    for e in engines:
        cells = []
        for n in counts:
            hit = next((r for r in scaling if r["engine"] == e and r["bodies"] == n), None)
            ok = hit and hit["status"] == "ok"
            cells.append(fmt(hit.get("median_us")) if ok else (hit["status"] if hit else "–"))
        out.append(f"| {e} | " + " | ".join(cells) + f" | {fmt(fits.get(e), 3)} |")
    return out


def md_humanoid_table(rows):
    hum = [r for r in rows if r["section"] == "humanoid"]
    if not hum:
        return []
    out = ["| engine | nv | steps | µs/step median | p99 | steps/s | time / khz | contacts (mean) "
           "| torso z at end (m) | status |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in hum:
        sps = r.get("steps_per_s")
        out.append(f"| {r['engine']} | {r['bodies']} | {r['steps']} | {fmt(r.get('median_us'))} "
                   f"| {fmt(r.get('p99_us'))} | {fmt(round(sps) if sps else None)} "
                   f"| {fmt(r.get('time_ratio_to_khz'), 3)} | {fmt(r.get('contacts_mean'), 3)} "
                   f"| {fmt(r.get('torso_height_end_m'), 3)} | {r['status']} |")
    return out


def md_loop_table(rows):
    out = ["| µs | p50 | p99 | p99.9 | max | what |", "|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['name']} | {fmt(r['p50'])} | {fmt(r['p99'])} | {fmt(r['p999'])} "
                   f"| {fmt(r['max'])} | {r['what']} |")
    return out


def loop_csv_rows(rows):
    """bench_loop rows as CSV rows: which program each percentile row measures"""
    out = []
    for r in rows:
        engine = ("cyclictest" if "cyclictest" in r["name"] else
                  "zeromq" if "zmq" in r["name"] else "khz")
        out.append({"section": "loop", "scene": r["name"], "engine": engine, "status": "ok",
                    "median_us": r["p50"], "p99_us": r["p99"], "p999_us": r["p999"],
                    "max_us": r["max"]})
    return out


def dynamics_csv_rows(table):
    """bench_dynamics' table: one row per model and engine"""
    out = []
    for line in table[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) < 8:
            continue
        model, nv = cells[0], int(cells[1])
        khz_fd, mj_fd, fd_ratio = float(cells[2]), float(cells[3]), float(cells[4].rstrip("x"))
        khz_step, mj_step, ratio = float(cells[5]), float(cells[6]), float(cells[7].rstrip("x"))
        out.append({"section": "dynamics", "scene": model, "engine": "khz", "status": "ok",
                    "bodies": nv, "median_us": khz_step, "time_ratio_to_khz": 1.0, "fd_us": khz_fd,
                    "fd_ratio": 1.0})
        out.append({"section": "dynamics", "scene": model, "engine": "mujoco", "status": "ok",
                    "bodies": nv, "median_us": mj_step, "time_ratio_to_khz": ratio, "fd_us": mj_fd,
                    "fd_ratio": fd_ratio})
    return out


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in CSV_COLUMNS})


def compare(previous, rows):
    """median µs per step against an earlier results.csv, on stdout"""
    try:
        with open(previous) as f:
            old = {(r["section"], r["scene"], r["engine"]): r for r in csv.DictReader(f)}
    except OSError:
        return
    print(f"\nchanges against {previous} (median µs per step, new / old):")
    for r in rows:
        o = old.get((r["section"], r["scene"], r.get("engine")))
        if not o or not o.get("median_us") or r.get("median_us") in (None, ""):
            continue
        ratio = float(r["median_us"]) / float(o["median_us"])
        flag = "  <- slower" if ratio > 1.1 else "  <- faster" if ratio < 0.9 else ""
        print(f"  {r['section']:9} {r['scene'][:40]:40} {r['engine']:12} "
              f"{float(o['median_us']):10.4g} -> {float(r['median_us']):10.4g}  x{ratio:.2f}{flag}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--raw", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--mode", choices=("full", "quick"), required=True)
    ap.add_argument("--previous")
    ap.add_argument("--load-before", default="")
    ap.add_argument("--command", default="scripts/bench.sh")
    a = ap.parse_args()

    engines, rows, fits = read_peers(os.path.join(a.raw, "peers.jsonl"))
    loop_rows, loop_notes = read_loop(read_text(os.path.join(a.raw, "loop.txt")))
    dyn_title, dyn_table = read_dynamics(read_text(os.path.join(a.raw, "dynamics.txt")))
    mach = machine(a.load_before)
    for r in rows:
        if r["section"] == "scaling":
            r["growth_exponent"] = fits.get(r["engine"])
    csv_rows = rows + dynamics_csv_rows(dyn_table) + loop_csv_rows(loop_rows)
    haptic = []  # (title, rows, notes) of the haptic-rate runs that exist
    for name, how in (("loop_haptic.txt", "the loop sleeps to each deadline"),
                      ("loop_haptic_spin.txt", "the loop spins the last microseconds to each deadline"),
                      ("loop_haptic_spin_nocpu.txt",
                       "the loop spins, and the tick reads no CPU clock (cpu_clock false)")):
        text = read_text(os.path.join(a.raw, name))
        if not text:
            continue
        title = next((l for l in text.splitlines() if l.startswith("khz loop benchmark")), name)
        h_rows, h_notes = read_loop(text)
        haptic.append((f"{title}; {how}", h_rows, h_notes))
        for r in loop_csv_rows(h_rows):
            r["section"] = "loop_" + name[len("loop_"):-len(".txt")]
            csv_rows.append(r)

    md = [f"# khz benchmarks ({a.mode} run)", "",
          f"`{a.command}` on {mach['date']}. What every figure is and how each engine is set up: "
          "[docs/benchmarks.md](../../docs/benchmarks.md). Ratios are a peer's time over khz's: "
          "above 1, khz is faster.", "",
          "## Machine", "", "| | |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in mach.items()]
    md += ["", "## Engines", ""]
    md += [f"- **{e['engine']}**: {e['settings']}" for e in engines]
    md += ["", "## Validation scenes and the passive chain (bench_peers)", ""]
    md += md_scene_table(rows)
    md += ["", "## Scaling: µs per step as the pile grows (bench_peers)", ""]
    md += md_scaling_table(rows, fits)
    md += ["", "## Humanoid on the floor, h = 1e-3 (bench_peers; MuJoCo's humanoid.xml)", ""]
    md += md_humanoid_table(rows)
    md += ["", "## Dynamics without contact (bench_dynamics)", "", dyn_title, ""] + dyn_table
    md += ["", "## Real-time loop (bench_loop)", ""] + md_loop_table(loop_rows) + [""]
    md += [f"- {n}" for n in loop_notes]
    if haptic:
        md += ["", "## Haptic rate (bench_loop --rate 10000)"]
    for title, h_rows, h_notes in haptic:
        md += ["", f"### {title}", ""] + md_loop_table(h_rows) + [""]
        md += [f"- {n}" for n in h_notes]
    md.append("")

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(a.out, "machine.md"), "w") as f:
        f.write("\n".join(["# The machine of this run", "", "| | |", "|---|---|"]
                          + [f"| {k} | {v} |" for k, v in mach.items()]) + "\n")
    write_csv(os.path.join(a.out, "results.csv"), csv_rows)
    if a.previous:
        compare(a.previous, csv_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
