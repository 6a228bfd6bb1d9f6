#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the collective-mode analyses of a vibra results file (`vibra analyze`).

    /usr/bin/python3 notebooks/figures_modes.py RESULTS.h5 OUTDIR

or, from Python, ``plot(h5file, outdir) -> list of written PNG paths``. Draws the C_T(k,w) heat
map with w_peak(k) and both k-gap fits (pole and peak), the dispersion of both branches, the
reduced VDOS D_T(w)/w and D_L(w)/w with their Debye levels, and the per-particle band
contribution map (one segment). Reads /analysis/{currents,kgap,tvdos,covariance_vdos}
(docs/collective-modes.md). Absent groups are skipped. Headless (matplotlib Agg).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from figure_helpers import units as _u, attr as _a, save as _save  # noqa: E402


def _fit_curve(sub, k):
    c, tau = float(_a(sub, "c")), float(_a(sub, "tau"))
    if not np.isfinite(c):
        return None
    w2 = c * c * k * k - (0.0 if not np.isfinite(tau) else 1.0 / (4 * tau * tau))
    return np.where(w2 > 0, np.sqrt(np.clip(w2, 0, None)), np.nan)


def _ct_map(cur, kg, outdir, written, which="t"):
    k, w = cur["k"][:], cur["omega"][:]
    c = cur[f"c_{which}_kw"][:]
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    z = c / np.maximum(c.max(axis=1, keepdims=True), 1e-300)  # each k normalised to its maximum
    dk = np.diff(k).mean() if len(k) > 1 else 1.0
    ax.imshow(z.T, origin="lower", aspect="auto", cmap="magma",
              extent=[k[0] - dk / 2, k[-1] + dk / 2, w[0], w[-1]])
    ax.plot(k, cur[f"omega_{which}_peak"][:], "c.", ms=5, label=r"$\omega_{peak}(k)$ (Welch)")
    if kg is not None and which == "t":
        kk = np.linspace(0, k[-1], 200)
        for name, style in (("pole", "w-"), ("peak", "w--")):
            if name in kg:
                s = kg[name]
                y = _fit_curve(s, kk)
                if y is not None:
                    ax.plot(kk, y, style, lw=1.2,
                            label=f"{name} fit: k_gap = {float(_a(s, 'k_gap')):.3g} ± {float(_a(s, 'k_gap_err')):.2g}")
    ax.set_xlabel(f"k [{_u(cur['k'])}]")
    ax.set_ylabel(f"ω [{_u(cur['omega'])}]")
    pk = cur[f"omega_{which}_peak"][:]
    top = 3 * np.nanmax(pk) if np.any(pk > 0) else w[-1]
    ax.set_ylim(w[0], min(w[-1], top))
    ax.set_title(f"C_{which.upper()}(k,ω) / max_ω", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    _save(fig, outdir, f"c_{which}_kw.png", written)


def _dispersion(cur, kg, outdir, written):
    fig, ax = plt.subplots(figsize=(6, 4.4))
    if kg is not None:
        k = kg["k"][:]
        ax.errorbar(k, kg["omega_pole"][:], yerr=kg["omega_pole_err"][:], fmt="o", ms=4, label="T pole (oscillator fit)")
        ax.errorbar(k, kg["omega_peak"][:], yerr=kg["omega_peak_err"][:], fmt="s", ms=4, mfc="none", label="T peak")
        ax.errorbar(k, kg["omega_l_peak"][:], yerr=kg["omega_l_peak_err"][:], fmt="^", ms=4, label="L peak")
        kk = np.linspace(0, k[-1], 200)
        for name, style in (("pole", "-"), ("peak", "--")):
            if name in kg:
                y = _fit_curve(kg[name], kk)
                if y is not None:
                    ax.plot(kk, y, "k" + style, lw=1,
                            label=f"{name}: c = {float(_a(kg[name], 'c')):.3g}, τ = {float(_a(kg[name], 'tau')):.3g}")
        cl = float(_a(kg, "c_l"))
        if np.isfinite(cl):
            ax.plot(kk, cl * kk, "C2:", lw=1, label=f"c_L = {cl:.3g}")
        ax.set_xlabel(f"k [{_u(kg['k'])}]")
    elif cur is not None:
        k = cur["k"][:]
        ax.plot(k, cur["omega_t_peak"][:], "o", label="T peak")
        ax.plot(k, cur["omega_l_peak"][:], "^", label="L peak")
        ax.set_xlabel(f"k [{_u(cur['k'])}]")
    ax.set_ylabel("ω")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7)
    ax.set_title("dispersion", fontsize=9)
    _save(fig, outdir, "dispersion.png", written)


def _reduced_vdos(tv, outdir, written):
    w = tv["omega"][:]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    ax.plot(w[1:], tv["d_t_reduced"][1:], label="D_T(ω)/ω")
    ax.plot(w[1:], tv["d_l_reduced"][1:], label="D_L(ω)/ω")
    for name, col in (("debye_level_t", "C0"), ("debye_level_l", "C1")):
        lv = float(_a(tv, name))
        if np.isfinite(lv):
            ax.axhline(lv, color=col, ls="--", lw=0.8, label=f"Debye {name[-1].upper()}")
    lo, hi = float(_a(tv, "band_min")), float(_a(tv, "band_max"))
    ax.axvspan(lo, min(hi, w[-1]), color="0.9", zorder=0, label="per-particle band")
    ax.set_xlabel(f"ω [{_u(tv['omega'])}]")
    ax.set_ylabel(f"D/ω [{_u(tv['d_t_reduced'])}]")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    _save(fig, outdir, "reduced_vdos.png", written)


def _particle_map(tv, outdir, written, segment=0):
    if "particles" not in tv:
        return
    pt = tv["particles"]
    off = pt["segment_offsets"][:]
    if len(off) < 2 or off[-1] == 0:
        return
    a, b = off[segment], off[segment + 1]
    x, y, p = pt["x_mean"][a:b], pt["y_mean"][a:b], pt["p_band"][a:b]
    fig, ax = plt.subplots(figsize=(6, 5.2))
    lim = np.percentile(np.abs(p), 99) if len(p) else 1
    sc = ax.scatter(x, y, c=p, s=12, cmap="RdBu_r", vmin=-lim, vmax=lim)
    fig.colorbar(sc, ax=ax, label="p_i (band)")
    ax.set_aspect("equal")
    ax.set_xlabel(f"x [{_u(pt['x_mean'])}]")
    ax.set_ylabel(f"y [{_u(pt['y_mean'])}]")
    ax.set_title(f"per-particle contribution to D_T in [{float(_a(tv, 'band_min')):.3g}, {float(_a(tv, 'band_max')):.3g}], segment {segment}",
                 fontsize=9)
    _save(fig, outdir, "tvdos_particle_map.png", written)


def _covariance(cv, outdir, written):
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.8))
    wb = cv["omega_bins"][:]
    ax[0].step(wb, cv["vdos"][:], where="mid")
    ax[0].set_xlabel(f"ω [{_u(cv['omega_bins'])}]")
    ax[0].set_ylabel("D(ω)")
    ax[1].plot(cv["omega"][:], cv["participation"][:], ".", ms=3)
    ax[1].set_xlabel("ω")
    ax[1].set_ylabel("participation ratio")
    _save(fig, outdir, "covariance_vdos.png", written)


def plot(h5file, outdir):
    """Writes the figures of the groups present; returns the PNG paths."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    with h5py.File(h5file, "r") as f:
        an = f.get("analysis")
        if an is None:
            return written
        cur, kg, tv, cv = (an.get(n) for n in ("currents", "kgap", "tvdos", "covariance_vdos"))
        if cur is not None:
            _ct_map(cur, kg, outdir, written, "t")
            _ct_map(cur, None, outdir, written, "l")
        if cur is not None or kg is not None:
            _dispersion(cur, kg, outdir, written)
        if tv is not None:
            _reduced_vdos(tv, outdir, written)
            _particle_map(tv, outdir, written)
        if cv is not None:
            _covariance(cv, outdir, written)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    for p in plot(sys.argv[1], sys.argv[2]):
        print(p)
