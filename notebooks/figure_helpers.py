# SPDX-License-Identifier: GPL-3.0-or-later
"""Small helpers shared by the figures_*.py modules (units and attributes as text, saving a PNG)."""
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def units(ds):
    """The `units` attribute of a dataset as str ('' when absent)."""
    u = ds.attrs.get("units", "")
    return u.decode() if isinstance(u, bytes) else str(u)


def attr(g, name, default=float("nan")):
    """An attribute of a group or dataset, bytes decoded to str."""
    v = g.attrs.get(name, default)
    return v.decode() if isinstance(v, bytes) else v


def save(fig, outdir, name, written):
    """Saves `fig` as outdir/name (tight layout, 110 dpi), closes it, appends the path to `written`."""
    path = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    written.append(path)
