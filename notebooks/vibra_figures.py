#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures from a vibra results file (headless; Debian's /usr/bin/python3 + h5py + matplotlib).

    /usr/bin/python3 notebooks/vibra_figures.py RESULTS.h5 OUTDIR

Kept for existing scripts: the figures live in the vibra package (python/vibra/figures/, docs/python.md),
whose own entry point is `PYTHONPATH=python /usr/bin/python3 -m vibra.figures RESULTS.h5 -o OUTDIR`.
Prints the written files; exits 1 if a figure failed or the file has analyses but no figure could be made.
"""
import os
import sys


def package():
    """vibra.figures, from PYTHONPATH or else from this checkout's python/ directory."""
    try:
        import vibra.figures
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
        import vibra.figures
    return vibra.figures


def plot(h5file, outdir, families=None):
    """Writes the figures (of `families`, e.g. ["modes"]; all when None) and returns the PNG paths."""
    return package().save_all(h5file, outdir, families=families)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(package().main([sys.argv[1], "-o", sys.argv[2]]))
