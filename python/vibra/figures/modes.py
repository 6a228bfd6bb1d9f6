# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the collective modes (docs/collective-modes.md): C_T(k,ω) and C_L(k,ω) maps with the
peak positions ω(k) and the k-gap fits, the dispersion with error bars and both fits, the reduced
transverse/longitudinal VDOS with the Debye levels, the per-particle band map and the covariance VDOS.
Each function takes a :class:`vibra.Results` and returns a Figure, or None when the analysis is
absent."""
import numpy as np

from .style import colorbar, figure, finite, label, pretty_unit, styled


def fit_curve(sub, k):
    """ω(k) of a k-gap fit: ω² = c²k² − 1/(4τ²), NaN below the gap (no propagating mode)."""
    c, tau = float(sub.attrs.get("c", np.nan)), float(sub.attrs.get("tau", np.nan))
    if not np.isfinite(c):
        return None
    w2 = c * c * k * k - (0.0 if not np.isfinite(tau) else 1.0 / (4 * tau * tau))
    return np.where(w2 > 0, np.sqrt(np.clip(w2, 0, None)), np.nan)


def _speed_unit(g):
    """L/T from a group's units description "L=sigma, T=tau"."""
    d = dict(p.split("=", 1) for p in str(g.attrs.get("units", "")).replace(" ", "").split(",") if "=" in p)
    return f"{d.get('L', '?')}/{d.get('T', '?')}"


def _gap_text(sub):
    kg, ke = float(sub.attrs.get("k_gap", np.nan)), float(sub.attrs.get("k_gap_err", np.nan))
    if not np.isfinite(kg):
        return "no gap found"
    return f"k_gap = {kg:.3g}" + (f" ± {ke:.2g}" if np.isfinite(ke) else "")


def _draw_fits(ax, kg, kmax, colour):
    kk = np.linspace(0, kmax, 300)
    for name, style in (("pole", "-"), ("peak", "--")):
        if kg is None or name not in kg.groups:
            continue
        s = kg[name]
        y = fit_curve(s, kk)
        if y is None:
            continue
        ax.plot(kk, y, style, color=colour, lw=1.3,
                label=f"{name} fit: {_gap_text(s)} {pretty_unit(kg.unit('k'))}")
        k_gap, err = float(s.attrs.get("k_gap", np.nan)), float(s.attrs.get("k_gap_err", np.nan))
        if np.isfinite(k_gap) and name == "pole":
            ax.axvline(k_gap, color=colour, lw=0.8, ls=":")
            if np.isfinite(err):
                ax.axvspan(k_gap - err, k_gap + err, color=colour, alpha=0.15, lw=0)


def _ct_map(res, which):
    cur = res.get("currents")
    if cur is None or f"c_{which}_kw" not in cur:
        return None
    kg = res.get("kgap") if which == "t" else None
    k, w = cur["k"], cur["omega"]
    c = cur[f"c_{which}_kw"]
    fig, ax = figure(6.6, 4.6)
    z = c / np.maximum(np.nanmax(c, axis=1, keepdims=True), 1e-300)  # each k scaled to its maximum
    dk = np.diff(k).mean() if len(k) > 1 else 1.0
    dw = np.diff(w).mean() if len(w) > 1 else 1.0
    im = ax.imshow(z.T, origin="lower", aspect="auto", cmap="magma", vmin=0, vmax=1,
                   extent=[k[0] - dk / 2, k[-1] + dk / 2, w[0] - dw / 2, w[-1] + dw / 2])
    colorbar(fig, im, ax, f"C_{which.upper()}(k,ω) / max_ω C_{which.upper()}", "1")
    pk = cur[f"omega_{which}_peak"]
    ax.plot(k, pk, "o", color="c", ms=4, mfc="none", label="maximum over ω")
    _draw_fits(ax, kg, k[-1], "w")
    ax.set_xlabel(label("wave number k", cur.unit("k")))
    ax.set_ylabel(label("angular frequency ω", cur.unit("omega")))
    pos = pk[finite(pk) & (pk > 0)]
    top = 4 * np.median(pos) if len(pos) else w[-1]  # the median: one spurious maximum must not set the scale
    ax.set_xlim(k[0] - dk / 2, k[-1] + dk / 2)
    ax.set_ylim(w[0], min(w[-1], top))
    kind = "Transverse" if which == "t" else "Longitudinal"
    ax.set_title(f"{kind} current spectrum (each k scaled to its maximum)")
    ax.legend(loc="upper left", fontsize=7, frameon=True, framealpha=0.85)
    return fig


@styled
def c_t_kw(res):
    return _ct_map(res, "t")


@styled
def c_l_kw(res):
    return _ct_map(res, "l")


@styled
def dispersion(res):
    cur, kg = res.get("currents"), res.get("kgap")
    if kg is None and cur is None:
        return None
    fig, ax = figure(6.2, 4.5)
    ymax = 0.0
    if kg is not None and "omega_pole" in kg:
        k = kg["k"]
        wu = kg.unit("omega_pole")
        for name, err, fmt, mfc, lab in (("omega_pole", "omega_pole_err", "o", None, "transverse, oscillator-fit pole"),
                                         ("omega_peak", "omega_peak_err", "s", "none", "transverse, maximum of C_T"),
                                         ("omega_l_peak", "omega_l_peak_err", "^", None, "longitudinal, maximum of C_L")):
            if name not in kg:
                continue
            y = kg[name]
            e = kg[err] if err in kg else np.full_like(y, np.nan)
            # A zero frequency is "no propagating peak" (overdamped), not a measurement: left out.
            ok = finite(y) & (y > 0)
            ax.errorbar(k[ok], y[ok], yerr=np.where(np.isfinite(e[ok]), e[ok], 0), fmt=fmt, ms=4, mfc=mfc,
                        capsize=2, label=lab)
            ymax = max(ymax, np.max(y[ok], initial=0))
        _draw_fits(ax, kg, k[-1], "k")
        cl, cle = float(kg.attrs.get("c_l", np.nan)), float(kg.attrs.get("c_l_err", np.nan))
        if np.isfinite(cl):
            kk = np.linspace(0, k[-1], 50)
            ax.plot(kk, cl * kk, ":", color="tab:green", lw=1,
                    label=f"sound speed c_L = {cl:.3g}" + (f" ± {cle:.2g}" if np.isfinite(cle) else "") +
                    f" {pretty_unit(_speed_unit(kg))}")
        ax.set_xlabel(label("wave number k", kg.unit("k")))
    else:
        k = cur["k"]
        wu = cur.unit("omega")
        for name, fmt, lab in (("omega_t_peak", "o", "transverse, maximum of C_T"),
                               ("omega_l_peak", "^", "longitudinal, maximum of C_L")):
            y = cur[name]
            ok = finite(y) & (y > 0)
            ax.plot(k[ok], y[ok], fmt, label=lab)
            ymax = max(ymax, np.max(y[ok], initial=0))
        ax.set_xlabel(label("wave number k", cur.unit("k")))
    ax.set_ylabel(label("angular frequency ω", wu))
    ax.set_xlim(left=0)
    # The points set the scale; an error bar of a badly determined point may leave the frame.
    ax.set_ylim(0, 1.3 * ymax if ymax > 0 else None)
    ax.set_title("Dispersion of the collective modes (shaded: k-gap ± error)")
    ax.legend(fontsize=7)
    return fig


@styled
def reduced_vdos(res):
    tv = res.get("tvdos")
    if tv is None or "d_t_reduced" not in tv:
        return None
    w = tv["omega"]
    fig, ax = figure(6, 4.2)
    for name, lab, col in (("d_t_reduced", "transverse D_T(ω)/ω", "C0"), ("d_l_reduced", "longitudinal D_L(ω)/ω", "C1")):
        if name in tv:
            y = tv[name]
            ok = (w > 0) & finite(y) & (y > 0)
            ax.plot(w[ok], y[ok], color=col, label=lab)
    for name, col, lab in (("debye_level_t", "C0", "Debye level, transverse"), ("debye_level_l", "C1", "Debye level, longitudinal")):
        lv = float(tv.attrs.get(name, np.nan))
        if np.isfinite(lv) and lv > 0:
            ax.axhline(lv, color=col, ls="--", lw=0.8, label=lab)
    lo, hi = float(tv.attrs.get("band_min", np.nan)), float(tv.attrs.get("band_max", np.nan))
    if np.isfinite(lo) and np.isfinite(hi):
        ax.axvspan(lo, min(hi, w[-1]), color="0.9", zorder=0, label="band of the particle map")
    ax.set_xlabel(label("angular frequency ω", tv.unit("omega")))
    ax.set_ylabel(label("reduced VDOS D(ω)/ω", tv.unit("d_t_reduced")))
    ax.set_yscale("log")
    ax.set_title("Reduced transverse and longitudinal VDOS")
    ax.legend(fontsize=7)
    return fig


@styled
def tvdos_particle_map(res, segment=0):
    tv = res.get("tvdos")
    if tv is None or "particles" not in tv.groups:
        return None
    pt = tv["particles"]
    off = pt["segment_offsets"]
    if len(off) < 2 or off[-1] == 0:
        return None
    a, b = off[segment], off[segment + 1]
    x, y, p = pt["x_mean"][a:b], pt["y_mean"][a:b], pt["p_band"][a:b]
    fig, ax = figure(6, 5.2)
    lim = np.percentile(np.abs(p), 99) if len(p) else 1
    sc = ax.scatter(x, y, c=p, s=12, cmap="RdBu_r", vmin=-lim, vmax=lim)
    colorbar(fig, sc, ax, "contribution p_i to D_T in the band", pt.unit("p_band"))
    ax.set_aspect("equal")
    if str(res.meta.get("coordinate_convention", "")) == "image":
        ax.invert_yaxis()
    ax.set_xlabel(label("x", pt.unit("x_mean")))
    ax.set_ylabel(label("y", pt.unit("y_mean")))
    lo, hi = float(tv.attrs.get("band_min", np.nan)), float(tv.attrs.get("band_max", np.nan))
    ax.set_title(f"Where the transverse modes between ω = {lo:.3g} and {hi:.3g} {pretty_unit(tv.unit('omega'))} live")
    return fig


@styled
def covariance_vdos(res):
    cv = res.get("covariance_vdos")
    if cv is None or "vdos" not in cv:
        return None
    fig, ax = figure(10, 3.9, 1, 2)
    wb = cv["omega_bins"]
    ax[0].step(wb, cv["vdos"], where="mid", color="k")
    ax[0].set_xlabel(label("angular frequency ω", cv.unit("omega_bins")))
    ax[0].set_ylabel(label("VDOS D(ω) from the covariance", cv.unit("vdos")))
    ax[0].set_title("Covariance (harmonic) VDOS")
    ax[1].plot(cv["omega"], cv["participation"], ".", ms=3, color="k")
    ax[1].set_xlabel(label("mode frequency ω", cv.unit("omega")))
    ax[1].set_ylabel(label("participation ratio", cv.unit("participation")))
    ax[1].set_title("Localisation of the modes")
    return fig


FIGURES = [("c_t_kw", c_t_kw), ("c_l_kw", c_l_kw), ("dispersion", dispersion), ("reduced_vdos", reduced_vdos),
           ("tvdos_particle_map", tvdos_particle_map), ("covariance_vdos", covariance_vdos)]
