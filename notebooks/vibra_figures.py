#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures from a vibra results file (headless; Debian's /usr/bin/python3 + h5py + matplotlib).

    /usr/bin/python3 notebooks/vibra_figures.py RESULTS.h5 OUTDIR

Each analysis family has its own module (figures_structure.py, figures_dynamics.py, figures_modes.py,
figures_collective.py) with a plot(h5file, outdir) -> [png paths] function that skips the groups the file
does not have. Prints the written files; exits 1 if the file has analyses but no figure could be made.
"""
import importlib
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402

FAMILIES = ["figures_structure", "figures_dynamics", "figures_modes", "figures_collective"]


def main(argv):
    if len(argv) != 3:
        print(__doc__)
        return 2
    results, outdir = argv[1], argv[2]
    os.makedirs(outdir, exist_ok=True)
    with h5py.File(results, "r") as f:
        if f.attrs.get("schema") != "vibra-results":
            print(f"{results}: not a vibra results file", file=sys.stderr)
            return 1
        groups = list(f["analysis"].keys()) if "analysis" in f else []
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    written = []
    for name in FAMILIES:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError:
            continue
        written += mod.plot(results, outdir)
    for p in written:
        print(p)
    if groups and not written:
        print(f"{results}: analyses {groups} but no figure was made", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
