#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dynamics figures of a vibra results file: a wrapper kept for existing scripts; the code is
vibra.figures.dynamics (python/vibra/figures/dynamics.py, docs/python.md).

    /usr/bin/python3 notebooks/figures_dynamics.py RESULTS.h5 OUTDIR

or, from Python, ``plot(h5file, outdir) -> list of written PNG paths``.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vibra_figures  # noqa: E402


def plot(h5file, outdir):
    return vibra_figures.plot(h5file, outdir, families=["dynamics"])


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for p in plot(sys.argv[1], sys.argv[2]):
        print(p)
