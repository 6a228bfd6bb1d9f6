#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Observables of a batch campaign against a control parameter (headless; Debian's /usr/bin/python3).

    /usr/bin/python3 -m vibra.figures.campaign OUTDIR/campaign.h5 FIGDIR CONTROL [CONTROL ...]   (PYTHONPATH=python)

For every control parameter X (a column of the campaign table, e.g. phi_nominal, gamma, or the
measured phi) and every observable of the table (phi, temperature_ratio, beta_small, beta_large,
kurtosis_*, D_*, g_peak, r_peak, psi6_mean, k_gap, defect_density) that has a value in at least
one row with status ok, writes FIGDIR/<observable>_vs_<X>.png: the points with their error bars
(`<name>_err`, or the confidence interval `<name>_ci_low`/`<name>_ci_high`), axes labelled with
quantity and unit. Prints the written files; exits 2 when X is not a column, 1 when nothing could
be drawn.
"""
import os
import sys

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

OBSERVABLES = {
    "phi": "packing fraction φ",
    "temperature_ratio": "temperature ratio T_large / T_small",
    "beta_small": "velocity-tail exponent β (small disks)",
    "beta_large": "velocity-tail exponent β (large disks)",
    "kurtosis_small": "kurtosis of the velocity (small disks)",
    "kurtosis_large": "kurtosis of the velocity (large disks)",
    "D_small": "diffusion coefficient D (small disks)",
    "D_large": "diffusion coefficient D (large disks)",
    "g_peak": "first peak height of g(r)",
    "r_peak": "first peak position of g(r)",
    "psi6_mean": "mean bond order ⟨|ψ6|⟩",
    "psi6_global": "global bond order |⟨ψ6⟩|",
    "k_gap": "transverse k-gap",
    "defect_density": "defect density",
}


def read_table(path):
    with h5py.File(path, "r") as f:
        if f.attrs.get("schema") != "vibra-campaign":
            raise SystemExit(f"{path}: not a vibra campaign table (schema {f.attrs.get('schema')!r})")
        g = f["campaign"]
        cols, units = {}, {}
        for name in g.attrs["columns"]:
            name = name.decode() if isinstance(name, bytes) else str(name)
            d = g[name]
            cols[name] = d.asstr()[:] if h5py.check_string_dtype(d.dtype) else d[:]
            u = d.attrs.get("units", "")
            units[name] = u.decode() if isinstance(u, bytes) else str(u)
        return cols, units


def label(text, unit):
    return f"{text} [{unit}]" if unit and unit != "1" else f"{text} [dimensionless]"


def main(argv):
    if len(argv) < 4:
        print(__doc__)
        return 2
    table, outdir, controls = argv[1], argv[2], argv[3:]
    cols, units = read_table(table)
    ok = np.array([s == "ok" for s in cols["status"]])
    os.makedirs(outdir, exist_ok=True)
    written = []
    for x_name in controls:
        if x_name not in cols or cols[x_name].dtype.kind not in "fi":
            print(f"vibra.figures.campaign: --plot {x_name}: not a numeric column of {table}", file=sys.stderr)
            return 2
        x = cols[x_name].astype(float)
        for y_name, text in OBSERVABLES.items():
            if y_name not in cols or y_name == x_name:
                continue
            y = cols[y_name].astype(float)
            use = ok & np.isfinite(x) & np.isfinite(y)
            if not use.any():
                continue
            err = None
            if y_name + "_err" in cols:
                err = np.nan_to_num(cols[y_name + "_err"].astype(float)[use])
            elif y_name + "_ci_low" in cols:
                lo = cols[y_name + "_ci_low"].astype(float)[use]
                hi = cols[y_name + "_ci_high"].astype(float)[use]
                err = np.nan_to_num(np.vstack([y[use] - lo, hi - y[use]]).clip(min=0))
            order = np.argsort(x[use])
            fig, ax = plt.subplots(figsize=(5, 3.6))
            e = err if err is None or err.ndim == 1 else err
            if e is not None:
                e = e[order] if e.ndim == 1 else e[:, order]
            ax.errorbar(x[use][order], y[use][order], yerr=e, marker="o", capsize=3, lw=1)
            if y_name.startswith("beta"):
                ax.axhspan(1.47, 1.53, color="0.85", zorder=0, label="experiments: β = 1.50 ± 0.03")
                ax.legend(fontsize=8)
            ax.set_xlabel(label(x_name.replace("_", " "), units.get(x_name, "")))
            ax.set_ylabel(label(text, units.get(y_name, "")))
            ax.set_title(f"{text} against {x_name.replace('_', ' ')}", fontsize=9)
            path = os.path.join(outdir, f"{y_name}_vs_{x_name}.png")
            fig.tight_layout()
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    for p in written:
        print(p)
    return 0 if written else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
