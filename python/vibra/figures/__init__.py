# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of a vibra results file, one per analysis view, in one style (vibra.figures.style).

    /usr/bin/python3 -m vibra.figures RESULTS.h5 -o DIR      # every figure that applies, as PNG
    import vibra.figures as vf
    figs = vf.make_all("results.h5")          # {name: matplotlib Figure}
    vf.save_all("results.h5", "figures/")     # [paths]
    vf.dynamics.msd(vibra.load_results("results.h5"))   # one figure

Every axis is labelled "quantity [unit]" (units from the file), every map has a colour bar, results
with uncertainties are drawn with them (β and its 95 % CI, k_gap ± error, dispersion error bars, the
fitted slopes of E(k)), maps of image data keep the image orientation (y down). Analyses that are
absent (or were skipped by `vibra analyze`) give no figure.
"""
import sys

from ..results import Results, load_results
from . import collective, dynamics, modes, structure, style

FAMILIES = {"structure": structure, "dynamics": dynamics, "modes": modes, "collective": collective}
FIGURES = [item for fam in FAMILIES.values() for item in fam.FIGURES]


def _results(results):
    return results if isinstance(results, Results) else load_results(results)


def make_all(results, errors=None, families=None):
    """{name: Figure} for every figure whose analysis is in `results` (a path or a Results), of
    the `families` named (structure, dynamics, modes, collective; all when None). A figure that
    fails is left out and its error appended to `errors` (a list) when given, else raised."""
    res = _results(results)
    out = {}
    fams = FAMILIES if families is None else {f: FAMILIES[f] for f in families}
    for name, fn in (item for fam in fams.values() for item in fam.FIGURES):
        try:
            fig = fn(res)
        except Exception as e:  # one broken figure must not cost the others
            if errors is None:
                raise
            errors.append(f"{name}: {type(e).__name__}: {e}")
            continue
        if fig is not None:
            out[name] = fig
    return out


def save_all(results, outdir, errors=None, families=None):
    """Writes outdir/<name>.png for every figure of make_all; returns the paths."""
    import os
    os.makedirs(outdir, exist_ok=True)
    figs = make_all(results, errors, families)
    return [style.save(fig, os.path.join(outdir, name + ".png")) for name, fig in figs.items()]


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python3 -m vibra.figures",
                                 description="Figures (PNG) of a vibra results file (vibra analyze).")
    ap.add_argument("results", help="results HDF5 file written by `vibra analyze`")
    ap.add_argument("-o", "--outdir", required=True, help="directory for the PNG files")
    a = ap.parse_args(argv)
    try:
        res = load_results(a.results)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    errors = []
    written = save_all(res, a.outdir, errors)
    for p in written:
        print(p)
    for e in errors:
        print(f"{a.results}: figure {e}", file=sys.stderr)
    for name, why in res.skipped.items():
        print(f"{a.results}: no figure for {name} (skipped by vibra analyze: {why})", file=sys.stderr)
    if errors or (res.keys() and not written):
        return 1
    return 0
