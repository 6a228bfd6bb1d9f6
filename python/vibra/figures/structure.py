# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the structure analyses (docs/analysis-structure.md): partial g(r), S(k), ψ6 (global
order, |ψ6| histogram, g6(r)), local packing fraction, clusters, number fluctuations. Each
function takes a :class:`vibra.Results` and returns a Figure, or None when the analysis is absent."""
import numpy as np

from .style import PAIRS, SPECIES, figure, finite, label, styled


@styled
def gr(res):
    g = res.get("gr")
    if g is None or "g" not in g:
        return None
    r = g["r"]
    fig, ax = figure(6, 4)
    ax.plot(r, g["g"], "k-", lw=1.6, label="all pairs")
    if "g_err" in g:
        e = g["g_err"]
        ok = finite(e, g["g"])
        ax.fill_between(r[ok], (g["g"] - e)[ok], (g["g"] + e)[ok], color="k", alpha=0.2, lw=0, label="± error")
    for suf, lab, col in PAIRS:
        if "g" + suf in g:
            ax.plot(r, g["g" + suf], lw=1, color=col, label=lab)
    ax.axhline(1, color="0.6", lw=0.6)
    ax.set_xlabel(label("distance r", g.unit("r")))
    ax.set_ylabel(label("pair correlation g(r)", g.unit("g")))
    ax.set_title("Pair correlation function")
    ax.legend()
    return fig


@styled
def sk(res):
    g = res.get("sk")
    if g is None or "sk" not in g:
        return None
    k = g["k"]
    fig, ax = figure(6, 4)
    ax.plot(k, g["sk"], "k.-", lw=1.2, label="all")
    for suf, lab, col in PAIRS:
        if "sk" + suf in g:
            ax.plot(k, g["sk" + suf], lw=1, color=col, label=lab)
    ax.axhline(1, color="0.6", lw=0.6)
    ax.set_xlabel(label("wave number k", g.unit("k")))
    ax.set_ylabel(label("structure factor S(k)", g.unit("sk")))
    ax.set_title("Static structure factor")
    ax.legend()
    return fig


@styled
def psi6(res):
    g = res.get("psi6")
    if g is None or "psi6_global" not in g:
        return None
    fig, axs = figure(13, 3.9, 1, 3)
    t = g["t"]
    for suf, lab, col in SPECIES:
        if "psi6_global" + suf in g:
            axs[0].plot(t, g["psi6_global" + suf], color=col, lw=1 if suf == "" else 0.8, label=lab)
    axs[0].set_xlabel(label("time t", g.unit("t")))
    axs[0].set_ylabel(label("global order |⟨ψ₆⟩|", g.unit("psi6_global")))
    axs[0].set_title("Global bond order")
    axs[0].legend()
    e = g["abs_psi6_edges"]
    c = 0.5 * (e[1:] + e[:-1])
    for suf, lab, col in SPECIES:
        if "abs_psi6_hist" + suf in g:
            axs[1].plot(c, g["abs_psi6_hist" + suf], color=col, lw=1 if suf == "" else 0.8, label=lab)
    axs[1].set_xlabel(label("local order |ψ₆(i)|", g.unit("abs_psi6_edges")))
    axs[1].set_ylabel(label("probability density", g.unit("abs_psi6_hist")))
    axs[1].set_title("Local bond order")
    axs[1].legend()
    if "g6" in g:
        r, g6 = g["r"], g["g6"]
        ok = finite(g6)
        axs[2].plot(r[ok], g6[ok], "k.-", lw=1, ms=3)  # linear: g6 of a liquid changes sign
        axs[2].axhline(0, color="0.6", lw=0.6)
        axs[2].set_xlabel(label("distance r", g.unit("r")))
        axs[2].set_ylabel(label("bond-order correlation g₆(r)", g.unit("g6")))
        axs[2].set_title("Bond-order correlation")
    else:
        axs[2].remove()
    return fig


@styled
def voronoi(res):
    g = res.get("voronoi")
    if g is None or "phi_local_hist" not in g:
        return None
    fig, axs = figure(10, 3.9, 1, 2)
    e = g["phi_local_edges"]
    c = 0.5 * (e[1:] + e[:-1])
    for suf, lab, col in SPECIES:
        if "phi_local_hist" + suf in g:
            axs[0].plot(c, g["phi_local_hist" + suf], color=col, lw=1 if suf == "" else 0.8, label=lab)
    axs[0].set_xlabel(label("local packing fraction φ_i", g.unit("phi_local_edges")))
    axs[0].set_ylabel(label("probability density", g.unit("phi_local_hist")))
    axs[0].set_title("Voronoi local packing fraction")
    axs[0].legend()
    axs[1].plot(g["t"], g["phi"], "k-", lw=1, label="disc areas / window")
    if "phi_voronoi" in g:
        axs[1].plot(g["t"], g["phi_voronoi"], lw=1, label="interior Voronoi cells")
    axs[1].set_xlabel(label("time t", g.unit("t")))
    axs[1].set_ylabel(label("packing fraction φ", g.unit("phi")))
    axs[1].ticklabel_format(axis="y", useOffset=False)  # a constant φ (periodic box) reads as its value
    axs[1].set_title("Packing fraction")
    axs[1].legend()
    return fig


@styled
def clusters(res):
    g = res.get("clusters")
    if g is None or "size" not in g:
        return None
    fig, axs = figure(10, 3.9, 1, 2)
    s, p = g["size"], g["probability"]
    ok = p > 0
    axs[0].loglog(s[ok], p[ok], "k.", label="all clusters")
    if "count_interior" in g and g["count_interior"].sum() > 0:
        ci = g["count_interior"]
        pi = ci / ci.sum()
        axs[0].loglog(s[pi > 0], pi[pi > 0], ".", ms=3, label="not touching the edge")
    axs[0].set_xlabel(label("cluster size s", g.unit("size")))
    axs[0].set_ylabel(label("probability P(s)", g.unit("probability")))
    axs[0].set_title("Cluster-size distribution")
    axs[0].legend()
    axs[1].plot(g["t"], g["largest_fraction"], "k-", lw=1)
    axs[1].set_xlabel(label("time t", g.unit("t")))
    axs[1].set_ylabel(label("largest cluster / N", g.unit("largest_fraction")))
    axs[1].set_title("Largest cluster")
    return fig


@styled
def number_fluctuations(res):
    g = res.get("number_fluctuations")
    if g is None or "mean_n" not in g:
        return None
    fig, ax = figure(5.6, 4.2)
    m, v = g["mean_n"], g["var_n"]
    ok = (m > 0) & (v > 0)
    ex = g.attrs.get("exponent", np.nan)
    ax.loglog(m[ok], v[ok], "ko", ms=4, label="all" + (f", var ∝ ⟨N⟩^{ex:.3f}" if np.isfinite(ex) else ""))
    for suf, lab, col in SPECIES[1:]:
        if "mean_n" + suf in g:
            ms_, vs = g["mean_n" + suf], g["var_n" + suf]
            k = (ms_ > 0) & (vs > 0)
            ax.loglog(ms_[k], vs[k], ".", color=col, label=lab)
    if ok.any():
        xx = np.array([m[ok].min(), m[ok].max()])
        ax.loglog(xx, xx, color="0.6", lw=0.8, label="Poisson: var = mean")
    ax.set_xlabel(label("mean number in a box ⟨N⟩", g.unit("mean_n")))
    ax.set_ylabel(label("variance var N", g.unit("var_n")))
    ax.set_title("Number fluctuations")
    ax.legend()
    return fig


FIGURES = [("gr", gr), ("sk", sk), ("psi6", psi6), ("voronoi", voronoi), ("clusters", clusters),
           ("number_fluctuations", number_fluctuations)]
