#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bit-for-bit comparison of two builds' outputs (a refactoring must not change a single bit).

Runs two `vibra` programs (OLD and NEW) on the same inputs and compares everything they write:
  1. the bench video (bench_tracking's moderate case: 1024 x 1024, dark-ring disks of radius 6 and
     8 px, phi 0.6, noise 5 %, 10 % gradient, seed 42) written by `vibra synth`, and its truth;
  2. `vibra track` of that video;
  3. `vibra track` of the real discs frames ../shared/data/real/particletracker_discs/discs_luma_*.png
     (skipped with a message when the folder is absent);
  4. a `vibra simulate` trajectory (periodic box, 400 disks);
  5. `vibra analyze` with EVERY analysis (--only with the whole list of `vibra analyze --help`) on
     the two tracked files and on the simulated trajectory (covariance_vdos forced on the small
     systems, left out on the bench video's ~4000 disks).
Each HDF5 file is compared dataset by dataset (the raw bytes of the values, so NaN == NaN with the
same payload and -0.0 != 0.0) and attribute by attribute; videos byte by byte. An attribute that
differs and records when, where or how fast a run was (timestamps, paths, timings, versions: the
names in VOLATILE) is counted as volatile, not as a difference; the names are listed. In text
values each side's program path and output folder are replaced by one token first (the recorded
command lines). Prints one table row per output file and exits 1 if anything else differs.

Usage: compare_outputs.py OLD_VIBRA NEW_VIBRA [--work DIR] [--frames N] [--sim-frames N] [--threads N]
       [--shared DIR]
Heavy (minutes): run it under `flock /tmp/vibra-heavy.lock` on a shared machine.
"""
import argparse
import filecmp
import glob
import os
import re
import subprocess
import sys

import h5py
import numpy as np

# Attribute names (regular expressions, matched against the whole name) that differ between two
# runs of the same program: when, where, with what, how long.
VOLATILE = [r".*time.*", r".*date.*", r"created.*", r".*path.*", r".*host.*", r".*version.*",
            r".*seconds.*", r".*wall.*", r".*cpu.*", r".*memory.*", r".*rss.*", r"command.*",
            r"threads", r".*git.*", r".*checksum.*", r".*sha256.*", r".*_s$", r"elapsed.*"]


def volatile(name):
    return any(re.fullmatch(p, name) for p in VOLATILE)


# Text values name the program and the output folder of their run ("parameters": the command
# line, "source_file"): each side's own paths are replaced by one token before comparing.
PATHS = {"old": [], "new": []}


def bits(v, side=None):
    a = np.asarray(v)
    if a.dtype.kind in "OSU":
        text = repr(a.tolist())
        for path, token in PATHS.get(side, []):
            text = text.replace(path, token)
        return text.encode()
    return a.dtype.str.encode() + repr(a.shape).encode() + a.tobytes()


def compare_h5(a_path, b_path):
    """(datasets compared, attributes compared, list of differences, volatile attribute names)."""
    diffs = []
    volatile_names = set()
    n_sets = n_attrs = 0
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        items_a, items_b = {}, {}
        a.visititems(lambda n, o: items_a.__setitem__(n, o))
        b.visititems(lambda n, o: items_b.__setitem__(n, o))
        items_a[""] = a
        items_b[""] = b
        for name in sorted(set(items_a) | set(items_b)):
            if name not in items_a or name not in items_b:
                diffs.append(f"/{name}: only in {'new' if name in items_b else 'old'}")
                continue
            oa, ob = items_a[name], items_b[name]
            if isinstance(oa, h5py.Dataset) != isinstance(ob, h5py.Dataset):
                diffs.append(f"/{name}: dataset in one, group in the other")
                continue
            if isinstance(oa, h5py.Dataset):
                n_sets += 1
                if oa.dtype != ob.dtype or oa.shape != ob.shape:
                    diffs.append(f"/{name}: {oa.dtype}{oa.shape} vs {ob.dtype}{ob.shape}")
                elif bits(oa[()], "old") != bits(ob[()], "new"):
                    diffs.append(f"/{name}: values differ")
            keys = sorted(set(oa.attrs) | set(ob.attrs))
            for k in keys:
                n_attrs += 1
                if k not in oa.attrs or k not in ob.attrs:
                    diffs.append(f"/{name}@{k}: only in {'new' if k in ob.attrs else 'old'}")
                elif bits(oa.attrs[k], "old") != bits(ob.attrs[k], "new"):
                    if volatile(k):
                        volatile_names.add(k)
                    else:
                        diffs.append(f"/{name}@{k}: {oa.attrs[k]!r} vs {ob.attrs[k]!r}")
    return n_sets, n_attrs, diffs, volatile_names


def run_logged(cmd, log):
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        sys.exit(f"failed (exit {r.returncode}): {' '.join(cmd)}; see {log}")


def all_analyses(vibra):
    h = subprocess.run([vibra, "analyze", "--help"], capture_output=True, text=True).stdout
    m = re.search(r"Available:\s*([a-z0-9_,]+)", h)
    if not m:
        sys.exit(f"{vibra} analyze --help lists no analyses")
    return m.group(1)


def produce(vibra, out, args, shared):
    """Every output of one build into folder `out`; returns {label: path}. With --compare-only,
    the paths of an earlier run's outputs without running anything."""
    os.makedirs(out, exist_ok=True)
    log = os.path.join(out, "log.txt")
    if args.compare_only:
        def run(cmd, log_):  # noqa: F811 (the outputs are there already)
            pass
    else:
        open(log, "w").close()
        run = run_logged
    th = ["--threads", str(args.threads)]
    files = {}
    video = os.path.join(out, "bench.avi")
    run([vibra, "-q", "synth", "-o", video, "--width", "1024", "--height", "1024", "--frames", str(args.frames),
         "--seed", "42", "--look", "dark-ring", "--noise", "0.05", "--gradient", "0.1",
         "--packing-fraction", "0.6"], log)
    files["synth video (bench)"] = video
    files["synth truth (bench)"] = os.path.join(out, "bench.truth.h5")
    tracked = os.path.join(out, "bench_tracked.h5")
    run([vibra, "-q", "track", video, "-o", tracked, "--radius-small", "6", "--radius-large", "8"] + th, log)
    files["track (bench video)"] = tracked
    inputs = [("bench", tracked)]
    discs = os.path.join(shared, "data/real/particletracker_discs")
    if os.path.isdir(discs):
        d = os.path.join(out, "discs_tracked.h5")
        run([vibra, "-q", "track", os.path.join(discs, "discs_luma_*.png"), "-o", d, "--radius-small", "46",
             "--radius-large", "55", "--roi", "142,30,1082,846", "--edge-threshold", "0.06",
             "--min-edge", "0.1"] + th, log)
        files["track (real discs)"] = d
        inputs.append(("discs", d))
    sim = os.path.join(out, "sim.h5")
    run([vibra, "-q", "simulate", "-o", sim, "--frames", str(args.sim_frames), "--seed", "7"], log)
    files["simulate"] = sim
    inputs.append(("sim", sim))
    # covariance_vdos refuses runs shorter than 10 x 2N frames (all of these): forced, on the
    # small systems only (the bench video's ~4000 disks would need an 8000 x 8000 eigenproblem).
    only = all_analyses(vibra)
    for label, path in inputs:
        res = os.path.join(out, f"{label}_results.h5")
        names = only.split(",")
        extra = ["--covariance-vdos-force", "1"]
        if label == "bench":
            names = [n for n in names if n != "covariance_vdos"]
            extra = []
        if label == "sim":  # segments of 64 frames: several time blocks, so kgap runs too
            extra += ["--currents-segment", "64"]
        run([vibra, "-q", "analyze", path, "-o", res, "--only", ",".join(names)] + extra + th, log)
        files[f"analyze ({label})"] = res
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--work", default="/tmp/vibra_compare_outputs")
    ap.add_argument("--frames", type=int, default=20, help="frames of the bench video (default 20)")
    ap.add_argument("--sim-frames", type=int, default=300, help="frames of the simulated run (default 300)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--compare-only", action="store_true",
                    help="compare the outputs of an earlier run in --work without running the programs")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"),
                    help="the shared data folder (default: ../shared beside the checkout)")
    args = ap.parse_args()
    args.work = os.path.abspath(args.work)
    if not os.path.isdir(os.path.join(args.shared, "data/real/particletracker_discs")):
        print(f"{args.shared}/data/real/particletracker_discs not found: skipping the real discs")
    for side, prog in (("old", args.old), ("new", args.new)):
        PATHS[side] = [(os.path.abspath(prog), "<VIBRA>"), (os.path.join(args.work, side), "<OUT>")]
    a = produce(os.path.abspath(args.old), os.path.join(args.work, "old"), args, args.shared)
    b = produce(os.path.abspath(args.new), os.path.join(args.work, "new"), args, args.shared)
    print(f"{'output':28} {'datasets':>9} {'attributes':>10}  result")
    bad = 0
    for label in a:
        pa, pb = a[label], b.get(label)
        if pb is None or not os.path.exists(pb) or not os.path.exists(pa):
            print(f"{label:28} {'':>9} {'':>10}  MISSING")
            bad += 1
            continue
        if not pa.endswith(".h5"):
            same = filecmp.cmp(pa, pb, shallow=False)
            print(f"{label:28} {'(bytes)':>9} {'':>10}  {'identical' if same else 'DIFFERENT'}")
            bad += not same
            continue
        n_sets, n_attrs, diffs, vol = compare_h5(pa, pb)
        note = f" (volatile attributes: {', '.join(sorted(vol))})" if vol else ""
        print(f"{label:28} {n_sets:9d} {n_attrs:10d}  {'bit-identical' if not diffs else 'DIFFERENT'}{note}")
        for d in diffs[:20]:
            print("    " + d)
        bad += bool(diffs)
    skipped = []
    for label, path in a.items():
        if "analyze" in label:
            with h5py.File(path, "r") as f:
                s = f["/"].attrs.get("skipped_analyses")
                if s is not None and len(np.atleast_1d(s)):
                    skipped.append(f"{label}: skipped {s}")
    for s in skipped:
        print("  (" + s + ")")
    print("all outputs bit-identical" if bad == 0 else f"{bad} output(s) differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
