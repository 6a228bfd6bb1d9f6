#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the collective-motion analyses of a vibra results file (`vibra analyze`).

    /usr/bin/python3 notebooks/figures_collective.py RESULTS.h5 OUTDIR

or, from Python, ``plot(h5file, outdir) -> list of written PNG paths``. Draws the coarse-grained
displacement field with its defects marked by charge, the defect density and correlation length
xi versus time with the located change points, E(k) curves coloured by time and by lag with the
fitted slopes, and the flux Pi(k) (spectral and filter-space). Reads
/analysis/{field,defects,correlations,spectra,evolution} (docs/collective-motion.md). Absent
groups are skipped. Headless (matplotlib Agg).
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from figure_helpers import units as _u, attr as _a, save as _save  # noqa: E402


def _field_with_defects(fld, dfc, outdir, written):
    """Quiver of the first snapshot of the first lag, defects of that frame and lag on top."""
    subs = sorted((k for k in fld.keys() if k.startswith("lag_") and isinstance(fld[k], h5py.Group)),
                  key=lambda s: int(s[4:]))
    if not subs:
        return
    sub = fld[subs[0]]
    if sub["ux"].shape[0] == 0:
        return
    lag = int(subs[0][4:])
    gx, gy = fld["grid_x"][:], fld["grid_y"][:]
    ux, uy = sub["ux"][0], sub["uy"][0]
    frame = int(sub["snapshot_frames"][0])
    fig, ax = plt.subplots(figsize=(6.4, 6.0))
    X, Y = np.meshgrid(gx, gy)
    mag = np.hypot(ux, uy)
    ax.quiver(X, Y, ux, uy, mag, cmap="viridis", angles="xy", pivot="mid")
    if dfc is not None and "frame" in dfc and "lag" in dfc:
        sel = (dfc["frame"][:] == frame) & (dfc["lag"][:] == lag)
        x, y, q = dfc["x"][:][sel], dfc["y"][:][sel], dfc["charge"][:][sel]
        ax.scatter(x[q > 0], y[q > 0], s=80, facecolors="none", edgecolors="red", linewidths=2, label="+1 (vortex-like)")
        ax.scatter(x[q < 0], y[q < 0], s=80, marker="s", facecolors="none", edgecolors="blue", linewidths=2,
                   label="-1 (saddle-like)")
        ax.legend(loc="upper right", fontsize=8)
    L = _u(fld["grid_x"])
    ax.set_xlabel(f"x ({L})")
    ax.set_ylabel(f"y ({L})")
    ax.set_aspect("equal")
    ax.set_title(f"displacement field, frame {frame}, lag {lag} frames")
    _save(fig, outdir, "collective_field_defects.png", written)


def _series_panel(ax, t, v, change, label, units, log_y):
    ok = np.isfinite(v) & np.isfinite(t)
    ax.plot(t[ok], v[ok], ".-", ms=3, label=label)
    for c in change:
        ax.axvline(c, color="k", ls="--", lw=0.8)
    ax.set_ylabel(f"{label} ({units})")
    if log_y and np.all(v[ok] > 0):
        ax.set_yscale("log")
    if np.all(t[ok] > 0):
        ax.set_xscale("log")


def _evolution(f, outdir, written):
    ev = f["analysis/evolution"] if "analysis/evolution" in f else None
    dfc = f["analysis/defects"] if "analysis/defects" in f else None
    cor = f["analysis/correlations"] if "analysis/correlations" in f else None
    panels = []
    if ev is not None:
        for name, log_y in (("defect_density", True), ("xi", True), ("kinetic_energy", True), ("spectral_slope", False)):
            if name in ev:
                panels.append((ev[f"{name}_time"][:], ev[name][:], ev[f"{name}_change_times"][:], name,
                               _u(ev[name]), log_y))
    else:  # no evolution group: plot the first lag of the raw series, without change points
        if dfc is not None:
            panels.append((dfc["time"][:], dfc["density"][0], [], "defect_density", _u(dfc["density"]), True))
        if cor is not None:
            panels.append((cor["time"][:], cor["xi"][0], [], "xi", _u(cor["xi"]), True))
    if not panels:
        return
    fig, axes = plt.subplots(len(panels), 1, figsize=(6.4, 2.3 * len(panels)), sharex=True)
    axes = np.atleast_1d(axes)
    for ax, p in zip(axes, panels):
        _series_panel(ax, *p)
    T = _u(ev[panels[0][3] + "_time"]) if ev is not None else ""
    axes[-1].set_xlabel(f"time ({T})" if T else "time")
    axes[0].set_title("evolution (dashed: change points)")
    _save(fig, outdir, "collective_evolution.png", written)


def _spectra(sp, outdir, written):
    k = sp["k"][:]
    e = sp["e"][:]  # [lag][time][k]
    lags = sp["lags"][:]
    kmin, kmax = float(_a(sp, "fit_k_min")), float(_a(sp, "fit_k_max"))
    ku, eu = _u(sp["k"]), _u(sp["e"])
    pos = k > 0
    # E(k) coloured by time (first lag) with the per-time fitted slope in the legend of a few curves.
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    nt = e.shape[1]
    cmap = plt.get_cmap("viridis")
    times = sp["time"][:]
    for j in range(nt):
        if not np.all(np.isfinite(e[0, j])):
            continue
        ax.loglog(k[pos], e[0, j][pos], color=cmap(j / max(1, nt - 1)), lw=0.8)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=plt.Normalize(times[0], times[-1] if len(times) > 1 else times[0] + 1))
    fig.colorbar(sm, ax=ax, label=f"time ({_u(sp['time'])})")
    ax.axvspan(kmin, kmax, color="0.9", zorder=0, label="fit band")
    ax.set_xlabel(f"k ({ku})")
    ax.set_ylabel(f"E(k) ({eu})")
    ax.set_title(f"E(k) by time, lag {lags[0]} frames")
    ax.legend(fontsize=8)
    _save(fig, outdir, "collective_spectra_time.png", written)

    # Time-averaged E_iso(k) per lag with the fitted power laws.
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    em = sp["e_iso_mean"][:] if "e_iso_mean" in sp else sp["e_mean"][:]
    slope, pref = sp["slope_mean"][:], sp["prefactor_mean"][:]
    cmap = plt.get_cmap("plasma")
    band = (k >= kmin) & (k <= kmax)
    for i, lag in enumerate(lags):
        c = cmap(i / max(1, len(lags) - 1) * 0.85)
        ax.loglog(k[pos], em[i][pos], color=c, label=f"lag {lag}: slope {slope[i]:.2f}")
        if np.isfinite(slope[i]) and band.any():
            ax.loglog(k[band], pref[i] * k[band] ** slope[i], "--", color=c, lw=1)
    ax.axvspan(kmin, kmax, color="0.9", zorder=0)
    ax.set_xlabel(f"k ({ku})")
    ax.set_ylabel(f"E_iso(k) ({eu})")
    ax.set_title("time-averaged spectra by lag (dashed: power-law fits)")
    ax.legend(fontsize=8)
    _save(fig, outdir, "collective_spectra_lag.png", written)

    # Flux Π(k) per lag and the filter-space Π_ℓ against k = π/ℓ.
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    fm = sp["flux_mean"][:]
    for i, lag in enumerate(lags):
        c = cmap(i / max(1, len(lags) - 1) * 0.85)
        ax.semilogx(k[pos], fm[i][pos], color=c, label=f"Π(k), lag {lag}")
        if "fst_scales" in sp and len(sp["fst_scales"][:]):
            ell = sp["fst_scales"][:]
            ax.semilogx(np.pi / ell, sp["fst_flux_mean"][i], "o--", color=c, ms=4, label=f"FST Π(π/ℓ), lag {lag}")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel(f"k ({ku})")
    ax.set_ylabel(f"Π ({_u(sp['flux_mean'])})")
    ax.set_title("energy flux (Π < 0: inverse, to large scales)")
    ax.legend(fontsize=7)
    _save(fig, outdir, "collective_flux.png", written)


def plot(h5file, outdir):
    """Write the collective-motion figures of `h5file` into `outdir`; returns the PNG paths."""
    os.makedirs(outdir, exist_ok=True)
    written = []
    with h5py.File(h5file, "r") as f:
        fld = f["analysis/field"] if "analysis/field" in f else None
        dfc = f["analysis/defects"] if "analysis/defects" in f else None
        if fld is not None:
            _field_with_defects(fld, dfc, outdir, written)
        _evolution(f, outdir, written)
        if "analysis/spectra" in f:
            _spectra(f["analysis/spectra"], outdir, written)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: figures_collective.py RESULTS.h5 OUTDIR")
    for p in plot(sys.argv[1], sys.argv[2]):
        print(p)
