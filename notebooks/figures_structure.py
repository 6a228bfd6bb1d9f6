#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the structure analyses of a vibra results file (`vibra analyze`).

    /usr/bin/python3 notebooks/figures_structure.py RESULTS.h5 OUTDIR

or, from Python, ``plot(h5file, outdir) -> list of written PNG paths``. Draws g(r) and its partials,
S(k), psi6 (global per frame, |psi6| histogram, g6(r)), the local packing-fraction histogram and
phi(t), cluster sizes, and number fluctuations, reading /analysis/<name>/... (docs/hdf5-layout.md).
Groups that are absent are skipped. Headless (matplotlib Agg).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from figure_helpers import units as _units, save as _save  # noqa: E402

PAIRS = [("small_small", "small–small"), ("small_large", "small–large"), ("large_large", "large–large")]


def _gr(g, outdir, written):
    r = g["r"][:]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(r, g["g"][:], "k-", lw=1.6, label="total")
    for suf, lab in PAIRS:
        if "g_" + suf in g:
            ax.plot(r, g["g_" + suf][:], lw=1, label=lab)
    ax.axhline(1, color="0.6", lw=0.6)
    ax.set_xlabel(f"r [{_units(g['r'])}]")
    ax.set_ylabel("g(r)")
    a = g.attrs
    ax.set_title(f"g(r), edge correction: {a.get('edge_correction', '?')}", fontsize=9)
    ax.legend(fontsize=8)
    _save(fig, outdir, "gr.png", written)


def _sk(g, outdir, written):
    k = g["k"][:]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(k, g["sk"][:], "k.-", lw=1.2, label="total")
    for suf, lab in PAIRS:
        if "sk_" + suf in g:
            ax.plot(k, g["sk_" + suf][:], lw=1, label=lab)
    ax.axhline(1, color="0.6", lw=0.6)
    ax.set_xlabel(f"k [{_units(g['k'])}]")
    ax.set_ylabel("S(k)")
    ax.set_title(f"S(k), k set: {g.attrs.get('k_set', '?')}", fontsize=9)
    ax.legend(fontsize=8)
    _save(fig, outdir, "sk.png", written)


def _psi6(g, outdir, written):
    fig, axs = plt.subplots(1, 3, figsize=(13, 3.8))
    axs[0].plot(g["t"][:], g["psi6_global"][:], "k-", lw=1, label="all")
    for s in ("small", "large"):
        if "psi6_global_" + s in g:
            axs[0].plot(g["t"][:], g["psi6_global_" + s][:], lw=0.8, label=s)
    axs[0].set_xlabel(f"t [{_units(g['t'])}]")
    axs[0].set_ylabel("|<psi6>|")
    axs[0].legend(fontsize=8)
    e = g["abs_psi6_edges"][:]
    c = 0.5 * (e[1:] + e[:-1])
    axs[1].plot(c, g["abs_psi6_hist"][:], "k-", label="all")
    for s in ("small", "large"):
        if "abs_psi6_hist_" + s in g:
            axs[1].plot(c, g["abs_psi6_hist_" + s][:], lw=0.8, label=s)
    axs[1].set_xlabel("|psi6(i)|")
    axs[1].set_ylabel("P(|psi6|)")
    axs[1].legend(fontsize=8)
    g6 = g["g6"][:]
    r = g["r"][:]
    ok = np.isfinite(g6)
    axs[2].plot(r[ok], g6[ok], "k.-", lw=1, ms=3)  # linear: g6 of a liquid changes sign
    axs[2].axhline(0, color="0.6", lw=0.6)
    axs[2].set_xlabel(f"r [{_units(g['r'])}]")
    axs[2].set_ylabel("g6(r)")
    fig.suptitle(f"psi6, neighbours: {g.attrs.get('neighbours', '?')}", fontsize=9)
    _save(fig, outdir, "psi6.png", written)


def _voronoi(g, outdir, written):
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.8))
    e = g["phi_local_edges"][:]
    c = 0.5 * (e[1:] + e[:-1])
    axs[0].plot(c, g["phi_local_hist"][:], "k-", label="all")
    for s in ("small", "large"):
        if "phi_local_hist_" + s in g:
            axs[0].plot(c, g["phi_local_hist_" + s][:], lw=0.8, label=s)
    axs[0].set_xlabel("local packing fraction phi_i")
    axs[0].set_ylabel("P(phi_i)")
    axs[0].legend(fontsize=8)
    axs[1].plot(g["t"][:], g["phi"][:], "k-", lw=1, label="phi (diameters / window)")
    axs[1].plot(g["t"][:], g["phi_voronoi"][:], lw=1, label="phi (interior cells)")
    axs[1].set_xlabel(f"t [{_units(g['t'])}]")
    axs[1].set_ylabel("phi(t)")
    axs[1].legend(fontsize=8)
    fig.suptitle(f"Voronoi: {g.attrs.get('tessellation', '?')}, boundary cells {g.attrs.get('boundary_cells', '?')}",
                 fontsize=9)
    _save(fig, outdir, "voronoi.png", written)


def _clusters(g, outdir, written):
    fig, axs = plt.subplots(1, 2, figsize=(10, 3.8))
    s = g["size"][:]
    p = g["probability"][:]
    ok = p > 0
    axs[0].loglog(s[ok], p[ok], "k.", label="all")
    ci = g["count_interior"][:]
    if ci.sum() > 0:
        pi = ci / ci.sum()
        axs[0].loglog(s[pi > 0], pi[pi > 0], ".", ms=3, label="interior")
    axs[0].set_xlabel("cluster size s")
    axs[0].set_ylabel("P(s)")
    axs[0].legend(fontsize=8)
    axs[1].plot(g["t"][:], g["largest_fraction"][:], "k-", lw=1)
    axs[1].set_xlabel(f"t [{_units(g['t'])}]")
    axs[1].set_ylabel("largest cluster / N")
    fig.suptitle(f"clusters: {g.attrs.get('criterion', '?')}", fontsize=9)
    _save(fig, outdir, "clusters.png", written)


def _number_fluctuations(g, outdir, written):
    fig, ax = plt.subplots(figsize=(5.5, 4))
    m = g["mean_n"][:]
    v = g["var_n"][:]
    ok = (m > 0) & (v > 0)
    ax.loglog(m[ok], v[ok], "ko", label=f"all, exponent {g.attrs.get('exponent', np.nan):.3f}")
    for s in ("small", "large"):
        if "mean_n_" + s in g:
            ms, vs = g["mean_n_" + s][:], g["var_n_" + s][:]
            k = (ms > 0) & (vs > 0)
            ax.loglog(ms[k], vs[k], ".", label=s)
    if ok.any():
        xx = np.array([m[ok].min(), m[ok].max()])
        ax.loglog(xx, xx, color="0.6", lw=0.8, label="Poisson: var = mean")
    ax.set_xlabel("<N>")
    ax.set_ylabel("var N")
    ax.legend(fontsize=8)
    _save(fig, outdir, "number_fluctuations.png", written)


def plot(h5file, outdir):
    """Writes one PNG per structure analysis present in `h5file`; returns the paths written."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    drawers = [("gr", _gr), ("sk", _sk), ("psi6", _psi6), ("voronoi", _voronoi), ("clusters", _clusters),
               ("number_fluctuations", _number_fluctuations)]
    with h5py.File(h5file, "r") as f:
        if "analysis" not in f:
            return written
        for name, fn in drawers:
            if name in f["analysis"]:
                fn(f["analysis"][name], outdir, written)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: figures_structure.py RESULTS.h5 OUTDIR")
    for p in plot(sys.argv[1], sys.argv[2]):
        print(p)
