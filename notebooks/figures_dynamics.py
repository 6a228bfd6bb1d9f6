#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the single-particle dynamics of a vibra results file (`vibra analyze`).

    /usr/bin/python3 notebooks/figures_dynamics.py RESULTS.h5 OUTDIR

or, from Python, ``plot(h5file, outdir) -> list of written PNG paths``. Draws the MSD (log-log,
with slope-1 and slope-2 guides), alpha2, the self van Hove function, the VACF, the VDOS and the
reduced VDOS, P(c) on a log scale with the fitted tail exp(-(|c|/c0)^beta), and the granular
temperatures per species. Reads /analysis/<name>/... (docs/analysis-dynamics.md); groups that are
absent are skipped. Headless (matplotlib Agg).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from figure_helpers import units as _units, attr as _attr, save as _save  # noqa: E402

SPECIES = [("", "total", "k"), ("_small", "small", "tab:blue"), ("_large", "large", "tab:red")]


def _msd(g, outdir, written):
    lag = g["lag"][:]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for suf, label, col in SPECIES:
        if "msd" + suf not in g:
            continue
        m = g["msd" + suf][:]
        ok = (lag > 0) & np.isfinite(m) & (m > 0)
        ax.loglog(lag[ok], m[ok], color=col, label=label)
    m = g["msd"][:]
    ok = (lag > 0) & np.isfinite(m) & (m > 0)
    if ok.sum() > 2:
        t0, m0 = lag[ok][0], m[ok][0]
        t1, m1 = lag[ok][-1], m[ok][-1]
        tt = np.array([t0, t1])
        ax.loglog(tt, m0 * (tt / t0) ** 2, "k:", lw=1, label="slope 2")
        ax.loglog(tt, m1 * (tt / t1), "k--", lw=1, label="slope 1")
        ax.set_ylim(m[ok].min() / 3, m[ok].max() * 3)
    ax.set_xlabel(f"lag [{_units(g['lag'])}]")
    ax.set_ylabel(f"MSD [{_units(g['msd'])}]")
    ax.set_title(f"MSD (drift: {_attr(g, 'drift', '?')}, sigma_loc = {_attr(g, 'sigma_loc'):.3g})")
    ax.legend(fontsize=8)
    _save(fig, outdir, "msd.png", written)

    fig, ax = plt.subplots(figsize=(6, 4))
    for suf, label, col in SPECIES:
        if "alpha2" + suf in g:
            a = g["alpha2" + suf][:]
            ok = (lag > 0) & np.isfinite(a)
            ax.semilogx(lag[ok], a[ok], color=col, label=label)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel(f"lag [{_units(g['lag'])}]")
    ax.set_ylabel(r"$\alpha_2$")
    ax.set_title("non-Gaussian parameter")
    ax.legend(fontsize=8)
    _save(fig, outdir, "alpha2.png", written)


def _van_hove(g, outdir, written):
    dx, gs, lag = g["dx"][:], g["gs"][:], g["lag"][:]
    fig, ax = plt.subplots(figsize=(6, 4))
    for j in range(gs.shape[0]):
        ok = gs[j] > 0
        ax.semilogy(dx[j][ok], gs[j][ok], label=f"lag {lag[j]:.3g} {_units(g['lag'])}")
    ax.set_xlabel(f"dx [{_units(g['dx'])}]")
    ax.set_ylabel(f"G_s [{_units(g['gs'])}]")
    ax.set_title("self van Hove (one component)")
    ax.legend(fontsize=8)
    _save(fig, outdir, "van_hove.png", written)


def _vacf(g, outdir, written):
    lag = g["lag"][:]
    fig, ax = plt.subplots(figsize=(6, 4))
    for suf, label, col in SPECIES:
        if "vacf_norm" + suf in g:
            ax.plot(lag, g["vacf_norm" + suf][:], color=col, label=label)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xscale("symlog", linthresh=max(lag[1] if len(lag) > 1 else 1, 1e-12) * 5)
    ax.set_xlabel(f"lag [{_units(g['lag'])}]")
    ax.set_ylabel("VACF / VACF(0)")
    ax.set_title(f"VACF (velocities: {_attr(g, 'velocity_scheme', '?')})")
    ax.legend(fontsize=8)
    _save(fig, outdir, "vacf.png", written)


def _vdos(g, outdir, written):
    w = g["omega"][:]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for suf, label, col in SPECIES:
        if "vdos" + suf in g:
            axes[0].plot(w, g["vdos" + suf][:], color=col, label=label)
            r = g["vdos_reduced" + suf][:]
            ok = (w > 0) & np.isfinite(r)
            axes[1].loglog(w[ok], np.abs(r[ok]), color=col, label=label)
    if "vdos_mass" in g:
        axes[0].plot(w, g["vdos_mass"][:], color="tab:purple", ls="--", lw=1, label="mass-weighted")
        r = g["vdos_reduced_mass"][:]
        ok = (w > 0) & np.isfinite(r)
        axes[1].loglog(w[ok], np.abs(r[ok]), color="tab:purple", ls="--", lw=1, label="mass-weighted")
    axes[0].set_xlabel(f"omega [{_units(g['omega'])}]")
    axes[0].set_ylabel(f"D(omega) [{_units(g['vdos'])}]")
    axes[0].set_title(f"VDOS (window: {_attr(g, 'window', '?')})")
    axes[1].set_xlabel(f"omega [{_units(g['omega'])}]")
    axes[1].set_ylabel(f"D(omega)/omega [{_units(g['vdos_reduced'])}]")
    axes[1].set_title(f"|reduced VDOS| (transfer correction: {_attr(g, 'transfer_correction', '?')})")
    axes[0].legend(fontsize=8)
    _save(fig, outdir, "vdos.png", written)


def _fs(g, outdir, written):
    lag, k, fs = g["lag"][:], g["k"][:], g["fs"][:]
    fig, ax = plt.subplots(figsize=(6, 4))
    for i in range(fs.shape[0]):
        ok = (lag > 0) & np.isfinite(fs[i])
        ax.semilogx(lag[ok], fs[i][ok], label=f"k = {k[i]:.3g} {_units(g['k'])}")
    ax.axhline(np.exp(-1), color="grey", lw=0.5, ls="--")
    ax.set_xlabel(f"lag [{_units(g['lag'])}]")
    ax.set_ylabel("F_s(k, t)")
    ax.set_title(f"self intermediate scattering, tau_alpha = {_attr(g, 'tau_alpha'):.3g}")
    ax.legend(fontsize=8)
    _save(fig, outdir, "fs.png", written)


def _velocity_distribution(g, outdir, written):
    c = g["c"][:]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for suf, label, col in SPECIES:
        if "p_c" + suf not in g:
            continue
        p = g["p_c" + suf][:]
        ok = p > 0
        ax.semilogy(c[ok], p[ok], ".", ms=3, color=col, label=f"{label}: beta = {_attr(g, 'beta' + suf):.3g}")
        beta, c0 = _attr(g, "beta" + suf), _attr(g, "c0" + suf)
        amp, thr = _attr(g, "tail_amplitude" + suf), _attr(g, "beta_threshold" + suf)
        var = str(_attr(g, "fitted_variable", "component"))
        if np.isfinite(beta) and np.isfinite(amp) and var.startswith("component"):
            x = np.linspace(thr, np.abs(c).max(), 100)
            fit = amp * np.exp(-((x / c0) ** beta))
            ax.semilogy(x, fit, "-", color=col, lw=1)
            ax.semilogy(-x, fit, "-", color=col, lw=1)
    cc = np.linspace(c.min(), c.max(), 400)
    ax.semilogy(cc, np.exp(-cc**2 / 2) / np.sqrt(2 * np.pi), "k:", lw=1, label="Gaussian")
    ax.set_ylim(bottom=max(1e-7, ax.get_ylim()[0]))
    ax.set_xlabel("c = v / v_rms (components pooled)")
    ax.set_ylabel("P(c)")
    ax.set_title(f"velocity distribution (threshold {_attr(g, 'beta_threshold'):.3g} rms)")
    ax.legend(fontsize=8)
    _save(fig, outdir, "velocity_distribution.png", written)


def _temperature(g, outdir, written):
    t = g["t"][:]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for suf, label, col in SPECIES:
        if "temperature" + suf in g:
            axes[0].plot(t, g["temperature" + suf][:], color=col, lw=0.8, label=label)
    axes[0].set_xlabel(f"t [{_units(g['t'])}]")
    axes[0].set_ylabel(f"T [m_small {_units(g['temperature'])}]")
    axes[0].set_title("granular temperature")
    axes[0].legend(fontsize=8)
    if "ratio" in g:
        axes[1].plot(t, g["ratio"][:], color="tab:purple", lw=0.8)
        axes[1].axhline(1, color="grey", lw=0.5)
        axes[1].set_title(f"T_large / T_small (mean {_attr(g, 'ratio_mean'):.3g})")
    else:
        axes[1].set_title("single species: no ratio")
    axes[1].set_xlabel(f"t [{_units(g['t'])}]")
    _save(fig, outdir, "temperature.png", written)


PLOTS = [("msd", _msd), ("msd/van_hove", _van_hove), ("vacf", _vacf), ("vdos", _vdos), ("fs", _fs),
         ("velocity_distribution", _velocity_distribution), ("temperature", _temperature)]


def plot(h5file, outdir):
    """Writes one PNG per present dynamics group into outdir; returns the paths."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    with h5py.File(h5file, "r") as f:
        if "analysis" not in f:
            return written
        an = f["analysis"]
        for name, fn in PLOTS:
            if name in an:
                fn(an[name], outdir, written)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: figures_dynamics.py RESULTS.h5 OUTDIR")
    for p in plot(sys.argv[1], sys.argv[2]):
        print(p)
