# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the single-particle dynamics (docs/analysis-dynamics.md): MSD with ballistic and
diffusive guides, α2, self van Hove, VACF, VDOS and reduced VDOS, F_s(k,t), P(c) on a log scale
with the fitted tail and β (95 % CI), granular temperatures. Each function takes a
:class:`vibra.Results` and returns a Figure, or None when the analysis is absent."""
import numpy as np

from .style import MASS, SPECIES, figure, finite, label, pretty_unit, styled, words


def _present(g, base, extra=()):
    return [(s, lab, c) for s, lab, c in list(SPECIES) + list(extra) if base + s in g]


def _band(ax, x, y, g, name, colour):
    """An error band from `name`_err or `name`_ci_low/_ci_high when the group has them."""
    if name + "_err" in g:
        e = g[name + "_err"]
        ok = finite(x, y, e)
        ax.fill_between(x[ok], (y - e)[ok], (y + e)[ok], color=colour, alpha=0.2, lw=0)
    elif name + "_ci_low" in g and name + "_ci_high" in g:
        lo, hi = g[name + "_ci_low"], g[name + "_ci_high"]
        ok = finite(x, lo, hi)
        ax.fill_between(x[ok], lo[ok], hi[ok], color=colour, alpha=0.2, lw=0)


@styled
def msd(res):
    g = res.get("msd")
    if g is None or "msd" not in g:
        return None
    lag = g["lag"]
    fig, ax = figure(6, 4.4)
    for suf, lab, col in _present(g, "msd"):
        m = g["msd" + suf]
        ok = (lag > 0) & finite(m) & (m > 0)
        ax.loglog(lag[ok], m[ok], color=col, label=lab)
        _band(ax, lag, m, g, "msd" + suf, col)
    m = g["msd"]
    ok = (lag > 0) & finite(m) & (m > 0)
    if ok.sum() > 2:
        t, mm = lag[ok], m[ok]
        # Guides: ballistic ∝ t² from the first point over the short lags, diffusive ∝ t to the
        # last point over the long lags (each over about half the decades).
        mid = np.sqrt(t[0] * t[-1])
        early, late = t[t <= mid * 1.5], t[t >= mid / 1.5]
        ax.loglog(early, mm[0] * (early / t[0]) ** 2, ":", color="0.3", lw=1.2, label="ballistic ∝ t²")
        ax.loglog(late, mm[-1] * (late / t[-1]), "--", color="0.3", lw=1.2, label="diffusive ∝ t")
        ax.set_ylim(mm.min() / 3, mm.max() * 3)
    ax.set_xlabel(label("lag time t", g.unit("lag")))
    ax.set_ylabel(label("mean-square displacement", g.unit("msd")))
    ax.set_title("Mean-square displacement")
    ax.legend()
    return fig


@styled
def alpha2(res):
    g = res.get("msd")
    if g is None or "alpha2" not in g:
        return None
    lag = g["lag"]
    fig, ax = figure(6, 4)
    for suf, lab, col in _present(g, "alpha2"):
        a = g["alpha2" + suf]
        ok = (lag > 0) & finite(a)
        ax.semilogx(lag[ok], a[ok], color=col, label=lab)
    ax.axhline(0, color="0.6", lw=0.6)
    ax.set_xlabel(label("lag time t", g.unit("lag")))
    ax.set_ylabel(label("non-Gaussian parameter α₂", g.unit("alpha2")))
    ax.set_title("Non-Gaussian parameter")
    ax.legend()
    return fig


@styled
def van_hove(res):
    g = res.get("msd")
    if g is None or "van_hove" not in g.groups:
        return None
    v = g["van_hove"]
    dx, gs, lag = v["dx"], v["gs"], v["lag"]
    fig, ax = figure(6, 4)
    for j in range(gs.shape[0]):
        ok = gs[j] > 0
        ax.semilogy(dx[j][ok], gs[j][ok], label=f"t = {lag[j]:.3g} {pretty_unit(v.unit('lag'))}")
    ax.set_xlabel(label("displacement Δx", v.unit("dx")))
    ax.set_ylabel(label("self van Hove G_s(Δx, t)", v.unit("gs")))
    ax.set_title("Self part of the van Hove function (one component)")
    ax.legend()
    return fig


@styled
def vacf(res):
    g = res.get("vacf")
    if g is None or "vacf_norm" not in g:
        return None
    lag = g["lag"]
    fig, ax = figure(6, 4)
    for suf, lab, col in _present(g, "vacf_norm"):
        ax.plot(lag, g["vacf_norm" + suf], color=col, label=lab)
    ax.axhline(0, color="0.6", lw=0.6)
    if len(lag) > 1:
        ax.set_xscale("symlog", linthresh=max(lag[1], 1e-12) * 5)  # linear near 0, log beyond
        ax.set_xlim(left=0)
    ax.set_xlabel(label("lag time t", g.unit("lag")))
    ax.set_ylabel(label("VACF Z(t)/Z(0)", g.unit("vacf_norm")))
    ax.set_title("Velocity autocorrelation")
    ax.legend()
    return fig


@styled
def vdos(res):
    """D(ω) and D(ω)/ω as computed: negative values (possible with the VACF-transform estimators)
    are drawn, on a symmetric-log axis, never hidden by taking |D/ω| or dropping them."""
    g = res.get("vdos")
    if g is None or "vdos" not in g or "omega" not in g:
        return None
    w = g["omega"]
    fig, axes = figure(10, 4, 1, 2)
    negative = False
    smallest = np.inf
    for suf, lab, col in _present(g, "vdos", [MASS]):
        ls = "--" if suf == "_mass" else "-"
        d = g["vdos" + suf]
        ok = finite(w, d)
        axes[0].plot(w[ok], d[ok], color=col, ls=ls, label=lab)
        if "vdos_reduced" + suf in g:
            r = g["vdos_reduced" + suf]
            ok = (w > 0) & finite(w, r)
            axes[1].plot(w[ok], r[ok], color=col, ls=ls, label=lab)
            negative |= bool((r[ok] < 0).any())
            pos = np.abs(r[ok][r[ok] != 0])
            if pos.size:
                smallest = min(smallest, pos.min())
    axes[0].axhline(0, color="0.6", lw=0.6)
    axes[1].set_xscale("log")
    if negative:  # keep the negative bins visible: symmetric log, zero line
        axes[1].set_yscale("symlog", linthresh=max(smallest, 1e-300))
        axes[1].axhline(0, color="0.6", lw=0.6)
    else:
        axes[1].set_yscale("log")
    axes[0].set_xlabel(label("angular frequency ω", g.unit("omega")))
    axes[0].set_ylabel(label("VDOS D(ω)", g.unit("vdos")))
    est = str(g.attrs.get("estimator", "")).split(":")[0]
    win = g.attrs.get("window")
    detail = ", ".join(x for x in (est and f"{words(est)} estimator", win and f"{words(str(win).split(':')[0])} window") if x)
    axes[0].set_title("Vibrational density of states" + (f" ({detail})" if detail else ""))
    axes[1].set_xlabel(label("angular frequency ω", g.unit("omega")))
    axes[1].set_ylabel(label("reduced VDOS D(ω)/ω", g.unit("vdos_reduced")))
    axes[1].set_title("Reduced VDOS" + (" (negative values present)" if negative else ""))
    axes[0].legend()
    return fig


@styled
def fs(res):
    g = res.get("fs")
    if g is None or "fs" not in g:
        return None
    lag, k, f = g["lag"], g["k"], g["fs"]
    fig, ax = figure(6, 4)
    for i in range(f.shape[0]):
        ok = (lag > 0) & finite(f[i])
        ax.semilogx(lag[ok], f[i][ok], label=f"k = {k[i]:.3g} {pretty_unit(g.unit('k'))}")
    ax.axhline(np.exp(-1), color="0.6", lw=0.6, ls="--", label="1/e")
    ax.set_xlabel(label("lag time t", g.unit("lag")))
    ax.set_ylabel(label("F_s(k, t)", g.unit("fs")))
    tau = np.atleast_1d(g.get("tau_alpha", g.attrs.get("tau_alpha", np.nan)))
    ok = finite(tau)
    ax.set_title("Self intermediate scattering function" +
                 (f", τ_α = {tau[ok][0]:.3g} {pretty_unit(g.unit('lag'))}" if ok.any() else ""))
    ax.legend()
    return fig


@styled
def velocity_distribution(res):
    g = res.get("velocity_distribution")
    if g is None or "p_c" not in g:
        return None
    c = g["c"]
    fig, ax = figure(6.2, 4.6)
    component = str(g.attrs.get("fitted_variable", "component")).startswith("component")
    for suf, lab, col in _present(g, "p_c"):
        p = g["p_c" + suf]
        ok = p > 0
        beta = g.attrs.get("beta" + suf, float("nan"))
        lo, hi = g.attrs.get("beta_ci_low" + suf, np.nan), g.attrs.get("beta_ci_high" + suf, np.nan)
        txt = f"{lab}: β = {beta:.3g}" + (f" [{lo:.3g}, {hi:.3g}]" if np.isfinite(lo) and np.isfinite(hi) else "")
        ax.semilogy(c[ok], p[ok], ".", ms=3, color=col, label=txt)
        c0 = g.attrs.get("c0" + suf, np.nan)
        amp, thr = g.attrs.get("tail_amplitude" + suf, np.nan), g.attrs.get("beta_threshold" + suf, np.nan)
        if component and np.all(np.isfinite([beta, c0, amp, thr])) and np.abs(c).max() > thr:
            x = np.linspace(thr, np.abs(c).max(), 100)
            fit = amp * np.exp(-((x / c0) ** beta))
            ax.semilogy(x, fit, "-", color=col, lw=1.2)
            ax.semilogy(-x, fit, "-", color=col, lw=1.2)
            # The 95 % CI of β: tails with β at the CI ends, equal to the fit at the threshold.
            if np.isfinite(lo) and np.isfinite(hi):
                at_thr = amp * np.exp(-((thr / c0) ** beta))
                band = [at_thr * np.exp(-((x / c0) ** b - (thr / c0) ** b)) for b in (lo, hi)]
                for sgn in (1, -1):
                    ax.fill_between(sgn * x, band[0], band[1], color=col, alpha=0.15, lw=0)
    cc = np.linspace(c.min(), c.max(), 400)
    ax.semilogy(cc, np.exp(-cc ** 2 / 2) / np.sqrt(2 * np.pi), ":", color="0.3", lw=1, label="Gaussian")
    ax.set_ylim(bottom=max(1e-7, ax.get_ylim()[0]))
    ax.set_xlabel(label("scaled velocity c = v / v_rms", g.unit("c")))
    ax.set_ylabel(label("probability density P(c)", g.unit("p_c")))
    thr = g.attrs.get("beta_threshold", np.nan)
    ax.set_title("Velocity distribution, tail fit P ∝ exp(−(|c|/c₀)^β)" +
                 (f" for |c| > {thr:.2g}" if np.isfinite(thr) else ""))
    ax.legend()
    return fig


@styled
def temperature(res):
    g = res.get("temperature")
    if g is None or "temperature" not in g:
        return None
    t = g["t"]
    ratio = "ratio" in g
    fig, axes = figure(10 if ratio else 6, 4, 1, 2 if ratio else 1)
    ax0 = axes[0] if ratio else axes
    for suf, lab, col in _present(g, "temperature"):
        ax0.plot(t, g["temperature" + suf], color=col, lw=0.8, label=lab)
    ax0.set_xlabel(label("time t", g.unit("t")))
    ax0.set_ylabel(label("granular temperature T / m_small", g.unit("temperature")))
    ax0.set_title("Granular temperature")
    ax0.legend()
    if ratio:
        axes[1].plot(t, g["ratio"], color="tab:purple", lw=0.8)
        axes[1].axhline(1, color="0.6", lw=0.6)
        axes[1].set_xlabel(label("time t", g.unit("t")))
        axes[1].set_ylabel(label("T_large / T_small", g.unit("ratio")))
        rm = g.attrs.get("ratio_mean", np.nan)
        axes[1].set_title("Temperature ratio" + (f" (mean {rm:.3g})" if np.isfinite(rm) else ""))
    return fig


FIGURES = [("msd", msd), ("alpha2", alpha2), ("van_hove", van_hove), ("vacf", vacf), ("vdos", vdos),
           ("fs", fs), ("velocity_distribution", velocity_distribution), ("temperature", temperature)]
