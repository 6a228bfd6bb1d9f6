#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Figures of the LAMMPS real-physics check (README.md): per density the C_T(k,w) map with the
k-gap fits, the dispersion and the reduced VDOS (notebooks/figures_modes.py), renamed with the
density, plus k_gap against density. Usage: make_figures.py OUTDIR res_0.62.h5 res_0.55.h5 ..."""
import os
import re
import shutil
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import h5py  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "notebooks"))
import figures_modes  # noqa: E402


def main(outdir, files):
    os.makedirs(outdir, exist_ok=True)
    rows = []
    for path in files:
        rho = re.search(r"res_([0-9.]+)\.h5", os.path.basename(path)).group(1)
        tmp = tempfile.mkdtemp()
        for p in figures_modes.plot(path, tmp):
            name = os.path.basename(p)
            if name in ("c_t_kw.png", "dispersion.png", "reduced_vdos.png"):
                dst = os.path.join(outdir, f"modes_lj_rho{rho}_{name}")
                shutil.copy(p, dst)
                print(dst)
        shutil.rmtree(tmp)
        with h5py.File(path, "r") as f:
            kg = f["analysis/kgap"]
            rows.append((float(rho), {m: (float(kg[m].attrs["k_gap"]), float(kg[m].attrs["k_gap_err"]), int(kg[m].attrs["n_points"]))
                                      for m in ("pole", "peak")}))
    rows.sort()
    fig, ax = plt.subplots(figsize=(5, 3.8))
    for m, fmt in (("pole", "o-"), ("peak", "s--")):
        pts = [(r, d[m][0], d[m][1]) for r, d in rows if d[m][2] >= 5 and d[m][0] > 0]
        if pts:
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], fmt=fmt, label=m)
    ax.set_xlabel("number density ρ [σ⁻²]")
    ax.set_ylabel("k_gap [rad/σ]")
    ax.set_title("2-D LJ mixture, T = 1: k-gap vs density", fontsize=9)
    ax.legend()
    fig.tight_layout()
    dst = os.path.join(outdir, "modes_lj_kgap_vs_density.png")
    fig.savefig(dst, dpi=110)
    print(dst)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
