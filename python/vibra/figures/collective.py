# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the collective motion (docs/collective-motion.md): the coarse-grained displacement
field with its defects (image orientation, y down, like the overlay of `vibra render`, optionally
over a video frame), defect density and correlation length ξ over time with the change points,
E(k) by time and by lag with the fitted slopes, and the energy flux Π(k). Each function takes a
:class:`vibra.Results` and returns a Figure, or None when the analysis is absent."""
import numpy as np

from .style import colorbar, figure, finite, label, styled


def _frames(n):
    return f"{n} frame" + ("" if n == 1 else "s")


def _image_orientation(res, ax):
    """y grows downwards on image data (x = column, y = row), as in the video and the overlay."""
    if str(res.meta.get("coordinate_convention", "image")) == "image":
        ax.invert_yaxis()


@styled
def field_defects(res, background=None):
    """Displacement field of the first snapshot of the first lag, with that frame's defects.

    background -- optional 2-D image (the video frame, in pixels) drawn under the field; its
    extent follows the file's length unit (px, or mm through px_per_mm)."""
    fld = res.get("field")
    if fld is None:
        return None
    subs = sorted((k for k in fld.groups if k.startswith("lag_")), key=lambda s: int(s[4:]))
    if not subs or fld[subs[0]]["ux"].shape[0] == 0:
        return None
    sub = fld[subs[0]]
    lag = int(subs[0][4:])
    gx, gy = fld["grid_x"], fld["grid_y"]
    ux, uy = sub["ux"][0], sub["uy"][0]
    frame = int(sub["snapshot_frames"][0])
    L = fld.unit("grid_x")
    fig, ax = figure(6.8, 6.0)
    if background is not None:
        img = np.asarray(background)
        s = 1.0
        if L == "mm" and res.meta.get("px_per_mm"):
            s = 1.0 / float(res.meta["px_per_mm"])
        h, w = img.shape[:2]
        ax.imshow(img, cmap="gray", extent=[-0.5 * s, (w - 0.5) * s, (h - 0.5) * s, -0.5 * s], zorder=0)
    X, Y = np.meshgrid(gx, gy)
    mag = np.hypot(ux, uy)
    q = ax.quiver(X, Y, ux, uy, mag, cmap="viridis", angles="xy", pivot="mid")
    colorbar(fig, q, ax, f"displacement over {_frames(lag)}", sub.unit("ux") or L)
    dfc = res.get("defects")
    if dfc is not None and "frame" in dfc and "lag" in dfc:
        sel = (dfc["frame"] == frame) & (dfc["lag"] == lag)
        x, y, ch = dfc["x"][sel], dfc["y"][sel], dfc["charge"][sel]
        ax.scatter(x[ch > 0], y[ch > 0], s=90, facecolors="none", edgecolors="red", linewidths=2,
                   label="+1 defect (vortex-like)")
        ax.scatter(x[ch < 0], y[ch < 0], s=90, marker="s", facecolors="none", edgecolors="blue", linewidths=2,
                   label="−1 defect (saddle-like)")
        ax.legend(loc="upper right", fontsize=8, frameon=True, framealpha=0.85)
    ax.set_xlabel(label("x", L))
    ax.set_ylabel(label("y", L))
    ax.set_aspect("equal")
    if background is None:
        _image_orientation(res, ax)
    ax.set_title(f"Displacement field and defects, frame {frame}, over {_frames(lag)}")
    return fig


_SERIES = [("defect_density", "defect density", True), ("xi", "correlation length ξ", True),
           ("kinetic_energy", "kinetic energy", True), ("spectral_slope", "spectral slope of E(k)", False)]


@styled
def evolution(res):
    ev, dfc, cor = res.get("evolution"), res.get("defects"), res.get("correlations")
    panels = []
    if ev is not None:
        for name, quantity, log_y in _SERIES:
            if name in ev:
                panels.append((ev[f"{name}_time"], ev[name], ev.get(f"{name}_change_times", []), quantity,
                               ev.unit(name), log_y, ev.unit(f"{name}_time")))
    else:  # no evolution group: the first lag of the raw series, without change points
        if dfc is not None and "density" in dfc:
            panels.append((dfc["time"], dfc["density"][0], [], "defect density", dfc.unit("density"), True,
                           dfc.unit("time")))
        if cor is not None and "xi" in cor:
            panels.append((cor["time"], cor["xi"][0], [], "correlation length ξ", cor.unit("xi"), True,
                           cor.unit("time")))
    panels = [p for p in panels if finite(p[0], p[1]).any()]  # e.g. no spectral slope fitted
    if not panels:
        return None
    fig, axes = figure(6.4, 2.3 * len(panels) + 0.4, len(panels), 1, sharex=True)
    axes = np.atleast_1d(axes)
    for ax, (t, v, change, quantity, unit, log_y, tu) in zip(axes, panels):
        ok = finite(v, t)
        ax.plot(t[ok], v[ok], ".-", ms=3, color="k")
        for c in np.atleast_1d(change):
            ax.axvline(c, color="tab:red", ls="--", lw=0.8)
        ax.set_ylabel(label(quantity, unit))
        if log_y and ok.any() and np.all(v[ok] > 0):
            ax.set_yscale("log")
        ax.set_xlabel(label("time t", tu))
    for ax in axes[:-1]:
        ax.xaxis.label.set_visible(False)
    axes[0].set_title("Evolution of the collective motion (dashed: change points)")
    return fig


def _spectra_common(sp):
    return sp["k"], float(sp.attrs.get("fit_k_min", np.nan)), float(sp.attrs.get("fit_k_max", np.nan))


@styled
def spectra_time(res):
    sp = res.get("spectra")
    if sp is None or "e" not in sp:
        return None
    k, kmin, kmax = _spectra_common(sp)
    e = sp["e"]  # [lag][time][k]
    lags, times = sp["lags"], sp["time"]
    pos = k > 0
    fig, ax = figure(6.6, 4.6)
    import matplotlib
    cmap = matplotlib.colormaps["viridis"]
    norm = matplotlib.colors.Normalize(times[0], times[-1] if len(times) > 1 else times[0] + 1)
    for j in range(e.shape[1]):
        if np.all(np.isfinite(e[0, j])):
            ax.loglog(k[pos], e[0, j][pos], color=cmap(norm(times[j])), lw=0.8)
    sm = matplotlib.cm.ScalarMappable(cmap=cmap, norm=norm)
    colorbar(fig, sm, ax, "time t", sp.unit("time"))
    if np.isfinite(kmin) and np.isfinite(kmax):
        ax.axvspan(kmin, kmax, color="0.92", zorder=0, label="fit range")
        ax.legend()
    ax.set_xlabel(label("wave number k", sp.unit("k")))
    ax.set_ylabel(label("energy spectrum E(k)", sp.unit("e")))
    ax.set_title(f"Energy spectrum over time (displacements over {_frames(lags[0])})")
    return fig


@styled
def spectra_lag(res):
    sp = res.get("spectra")
    if sp is None or "slope_mean" not in sp:
        return None
    k, kmin, kmax = _spectra_common(sp)
    lags = sp["lags"]
    em = sp["e_iso_mean"] if "e_iso_mean" in sp else sp["e_mean"]
    slope, pref = sp["slope_mean"], sp["prefactor_mean"]
    serr = sp["slope_mean_error"] if "slope_mean_error" in sp else None
    pos = k > 0
    band = (k >= kmin) & (k <= kmax)
    import matplotlib
    cmap = matplotlib.colormaps["plasma"]
    fig, ax = figure(6.4, 4.6)
    for i, lag in enumerate(lags):
        c = cmap(i / max(1, len(lags) - 1) * 0.85)
        if np.isfinite(slope[i]):
            txt = f"{_frames(lag)}: slope {slope[i]:.2f}" + \
                (f" ± {serr[i]:.2f}" if serr is not None and np.isfinite(serr[i]) else "")
        else:
            txt = f"{_frames(lag)}: no power-law fit"
        ax.loglog(k[pos], em[i][pos], color=c, label=txt)
        if np.isfinite(slope[i]) and band.any():
            ax.loglog(k[band], pref[i] * k[band] ** slope[i], "--", color=c, lw=1)
    if np.isfinite(kmin) and np.isfinite(kmax):
        ax.axvspan(kmin, kmax, color="0.92", zorder=0)
    ax.set_xlabel(label("wave number k", sp.unit("k")))
    ax.set_ylabel(label("time-averaged E(k)", sp.unit("e_iso_mean" if "e_iso_mean" in sp else "e_mean")))
    ax.set_title("Energy spectra by lag (dashed: power-law fits in the grey range)")
    ax.legend(fontsize=7)
    return fig


@styled
def flux(res):
    sp = res.get("spectra")
    if sp is None or "flux_mean" not in sp:
        return None
    k = sp["k"]
    lags = sp["lags"]
    fm = sp["flux_mean"]
    pos = k > 0
    import matplotlib
    cmap = matplotlib.colormaps["plasma"]
    fig, ax = figure(6.4, 4.6)
    for i, lag in enumerate(lags):
        c = cmap(i / max(1, len(lags) - 1) * 0.85)
        ax.semilogx(k[pos], fm[i][pos], color=c, label=f"Π(k), {_frames(lag)}")
        if "fst_scales" in sp and len(sp["fst_scales"]):
            ell = sp["fst_scales"]
            ax.semilogx(np.pi / ell, sp["fst_flux_mean"][i], "o--", color=c, ms=4,
                        label=f"filter-space Π(π/ℓ), {_frames(lag)}")
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel(label("wave number k", sp.unit("k")))
    ax.set_ylabel(label("energy flux Π(k)", sp.unit("flux_mean")))
    ax.set_title("Energy flux (Π < 0: inverse cascade, to large scales)")
    ax.legend(fontsize=7)
    return fig


FIGURES = [("collective_field_defects", field_defects), ("collective_evolution", evolution),
           ("collective_spectra_time", spectra_time), ("collective_spectra_lag", spectra_lag),
           ("collective_flux", flux)]
