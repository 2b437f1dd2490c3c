#!/usr/bin/env python3
"""Rating stability: run one plan N times into separate databases and count, per matrix cell,
how many runs agree on its rating.

A cell is (model, backend, precision, hardware classes) of the JSON report's matrix. Its label in
one run is the rating ("excellent", "good", "moderate", "poor", "noisy", or the failure
status; the cpu f32 baseline cells are left out, being the baseline by definition); "noisy" counts as a label of its own, so a cell noisy in every run is stable
(docs/REPORTS.md, ../shared/DECISIONS.md "Measurement"). Targets (issue 17): at least 95% of the
cells carry the same label in every run, and at most 10% of the cells are noisy in any one run.

    bench/rating_stability.py [--plan jobs/plans/default.toml] [--runs 5] [--out DIR]
                              [--accelmatrix build/accelmatrix] [--json FILE] [--check]

Each run is a fresh `accelmatrix run` (its own coordinator, worker and database), one after the
other; nothing else should run on the machine meanwhile, and the host load of every run is
printed with the table so a loaded machine is visible. `--check` exits 1 when a target is missed.

Host phases: a shared VM's speed can change between runs by more than any rating band (seen on
2026-11-28: the same cpu f32 jobs 1.4x slower in two runs of five, the int8 jobs 1.9x slower, so
the speed-ups themselves moved, paired or not). Each run's host speed is the geometric mean of its
cpu f32 shape medians relative to the median run's; runs within HOST_PHASE_TOLERANCE of it form
the main phase, and the share of cells stable across those runs is printed beside the target
(which counts every run).
"""
import argparse
import collections
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time

STABLE_TARGET = 0.95  # share of cells with one label in every run
NOISY_LIMIT = 0.10    # share of cells that may be noisy in any one run
HOST_PHASE_TOLERANCE = 0.10  # a run whose host speed is within 10% of the median run's is in its phase


def cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_plan(exe, plan, db, catalog):
    cmd = [exe, "run", "--plan", plan, "--db", db, "--quiet"]
    if catalog:
        cmd += ["--catalog", catalog]
    started = time.monotonic()
    load_before = load_average()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    # 0: all accepted; 1: some job ended in a --fail-on status. Both leave a complete matrix.
    if done.returncode not in (0, 1):
        sys.exit(f"rating_stability: `{' '.join(cmd)}` exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return time.monotonic() - started, load_before, load_average()


def report_cells(exe, db):
    out = subprocess.run([exe, "report", "--db", db, "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"rating_stability: report of {db} exited {out.returncode}: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    cells = {}
    baseline_ms = {}  # (model, batch, seq_len) -> cpu f32 median: the host's speed in this run
    for c in doc["matrix"]:
        if c.get("backend") == "cpu" and c.get("precision") == "f32":
            for sh in c.get("shapes", []):
                if isinstance(sh.get("median_ms"), (int, float)) and sh["median_ms"] > 0:
                    baseline_ms[(c["model"], sh.get("batch"), sh.get("seq_len"))] = sh["median_ms"]
        key = (c["model"], c["backend"], c["precision"], ",".join(sorted(c.get("hardware_classes", []))))
        label = c.get("rating") or c.get("status") or "not run"
        cells[key] = {"label": label, "speedup": c.get("speedup"),
                      "low": c.get("speedup_ci_low"), "high": c.get("speedup_ci_high")}
    return cells, baseline_ms


def host_speeds(runs):
    """Each run's speed relative to the median run: the geometric mean over the cpu f32 shapes
    every run measured of (median run's latency / this run's)."""
    common = set.intersection(*(set(r["baseline_ms"]) for r in runs)) if runs else set()
    if not common:
        return [1.0] * len(runs)
    logs = [sum(math.log(r["baseline_ms"][k]) for k in common) / len(common) for r in runs]
    mid = sorted(logs)[len(logs) // 2]
    return [math.exp(mid - l) for l in logs]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", default=os.path.join(root, "jobs/plans/default.toml"))
    ap.add_argument("--catalog", default="", help="model catalog (default: beside the plan)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default="", help="directory for the run databases (default: a temp dir, removed)")
    ap.add_argument("--accelmatrix", default=os.path.join(root, "build/accelmatrix"))
    ap.add_argument("--json", default="", help="write the per-cell table and the summary as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args()
    if args.runs < 2:
        ap.error("--runs must be at least 2: stability compares runs")
    if not os.access(args.accelmatrix, os.X_OK):
        ap.error(f"--accelmatrix {args.accelmatrix}: not an executable (build first)")
    if not os.path.isfile(args.plan):
        ap.error(f"--plan {args.plan}: no such file")

    tmp = None
    out_dir = args.out
    if not out_dir:
        tmp = tempfile.TemporaryDirectory(prefix="rating-stability-")
        out_dir = tmp.name
    os.makedirs(out_dir, exist_ok=True)

    print(f"rating stability: {args.plan}, {args.runs} runs, CPU {cpu_model()}, {os.cpu_count()} CPUs")
    runs = []
    for i in range(1, args.runs + 1):
        db = os.path.join(out_dir, f"run-{i}.db")
        for suffix in ("", "-wal", "-shm", ".lock"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        seconds, load_before, load_after = run_plan(args.accelmatrix, args.plan, db, args.catalog)
        cells, baseline_ms = report_cells(args.accelmatrix, db)
        noisy = sum(1 for c in cells.values() if c["label"] == "noisy")
        print(f"  run {i}: {seconds:.1f} s, load average {load_before:.2f} -> {load_after:.2f}, "
              f"{len(cells)} cells, {noisy} noisy")
        runs.append({"seconds": seconds, "load_before": load_before, "load_after": load_after,
                     "cells": cells, "noisy": noisy, "baseline_ms": baseline_ms})
    speeds = host_speeds(runs)
    for r, sp in zip(runs, speeds):
        r["host_speed"] = sp
    phase = [i for i, sp in enumerate(speeds) if abs(sp - 1.0) <= HOST_PHASE_TOLERANCE]
    print("  host speed per run (cpu f32 jobs vs the median run): " +
          ", ".join(f"{sp:.2f}" for sp in speeds))

    keys = sorted(set().union(*(r["cells"].keys() for r in runs)))
    rows = []
    for key in keys:
        labels = [r["cells"].get(key, {"label": "absent"})["label"] for r in runs]
        # The cpu f32 cells are the baseline by definition: counting them would flatter the share.
        if all(l == "baseline" for l in labels):
            continue
        top, agree = collections.Counter(labels).most_common(1)[0]
        speedups = [r["cells"].get(key, {}).get("speedup") for r in runs]
        in_phase = {labels[i] for i in phase}
        rows.append({"model": key[0], "backend": key[1], "precision": key[2], "hardware_classes": key[3],
                     "labels": labels, "agree": agree, "majority": top, "stable": agree == len(runs),
                     "stable_in_phase": len(in_phase) == 1, "speedups": speedups})

    width = max([len(f"{r['model']} {r['backend']} {r['precision']}") for r in rows] + [4])
    print(f"\n{'cell':<{width}}  agree  labels (speed-up)")
    for r in rows:
        cell = f"{r['model']} {r['backend']} {r['precision']}"
        shown = ", ".join(f"{l}" + (f" ({s:.2f}x)" if isinstance(s, (int, float)) else "")
                          for l, s in zip(r["labels"], r["speedups"]))
        mark = "" if r["stable"] else "   <- differs"
        print(f"{cell:<{width}}  {r['agree']}/{len(runs)}    {shown}{mark}")

    stable = sum(1 for r in rows if r["stable"])
    stable_share = stable / len(rows) if rows else 0.0
    rated = len(rows)
    worst_noisy = max((r["noisy"] / rated if rated else 0.0) for r in runs)
    print(f"\nstable cells: {stable}/{len(rows)} = {100 * stable_share:.1f}% (target >= {100 * STABLE_TARGET:.0f}%)")
    stable_phase = sum(1 for r in rows if r["stable_in_phase"])
    phase_share = stable_phase / len(rows) if rows else 0.0
    print(f"stable cells across the {len(phase)} run(s) of the main host phase (host speed within "
          f"{100 * HOST_PHASE_TOLERANCE:.0f}% of the median run's): {stable_phase}/{len(rows)} = {100 * phase_share:.1f}%")
    if len(phase) < len(runs):
        print(f"  {len(runs) - len(phase)} run(s) in another host phase: their ratings measure the host as much as the method")
    print(f"noisy cells, worst run: {100 * worst_noisy:.1f}% (limit {100 * NOISY_LIMIT:.0f}%)")
    ok = stable_share >= STABLE_TARGET and worst_noisy <= NOISY_LIMIT
    print("targets met" if ok else "targets missed")

    if args.json:
        doc = {"plan": args.plan, "cpu": cpu_model(), "cpus": os.cpu_count(),
               "runs": [{k: v for k, v in r.items() if k not in ("cells", "baseline_ms")} for r in runs],
               "main_phase_runs": [i + 1 for i in phase], "stable_in_main_phase": stable_phase,
               "stable_share_in_main_phase": phase_share,
               "cells": rows, "stable": stable, "cell_count": len(rows), "stable_share": stable_share,
               "worst_noisy_share": worst_noisy, "targets": {"stable_share": STABLE_TARGET, "noisy_share": NOISY_LIMIT},
               "targets_met": ok}
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
    if tmp is not None:
        tmp.cleanup()
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
