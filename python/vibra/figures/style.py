# SPDX-License-Identifier: GPL-3.0-or-later
"""The one style of vibra's figures: sizes, colours, axis labels "quantity [unit]", unit strings
of the file (docs/hdf5-layout.md grammar) written as a physicist would, and saving.

Figures are made with matplotlib.figure.Figure directly, not pyplot: no backend is selected, nothing
is kept in pyplot's figure list, and the same code runs headless, in scripts and in notebooks
(a Figure displays itself in Jupyter once pyplot or matplotlib-inline is loaded).
"""
import functools
import os
import re
import tempfile

import matplotlib
import numpy as np
from matplotlib.figure import Figure

RC = {
    "font.size": 10,
    "axes.titlesize": 10.5,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "xtick.direction": "in",
    "ytick.direction": "in",
    "xtick.top": True,
    "ytick.right": True,
    "lines.linewidth": 1.3,
    "savefig.dpi": 130,
    "image.cmap": "viridis",
}

# (suffix of the dataset/attribute, label, colour): the naming rule's species suffixes.
SPECIES = [("", "all", "k"), ("_small", "small", "tab:blue"), ("_large", "large", "tab:red")]
PAIRS = [("_small_small", "small–small", "tab:blue"), ("_small_large", "small–large", "tab:purple"),
         ("_large_large", "large–large", "tab:red")]
MASS = ("_mass", "mass-weighted", "tab:green")

_GREEK = {"sigma": "σ", "tau": "τ", "omega": "ω"}
_SUP = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def pretty_unit(u):
    """A unit string of the file, readable: 'sigma^2/tau' → 'σ²/τ', '1/mm' → 'mm⁻¹',
    'rad^2/s^2' → 'rad²/s²', '' or '1' → '1'."""
    u = (u or "").strip()
    if u in ("", "1"):
        return "1"
    m = re.fullmatch(r"1/([A-Za-z]+)(?:\^(\d+))?", u)
    if m:
        u = f"{m.group(1)}^-{m.group(2) or 1}"
    for k, v in _GREEK.items():
        u = re.sub(rf"\b{k}\b", v, u)
    u = re.sub(r"\^(-?\d+)", lambda mm: mm.group(1).translate(_SUP), u)
    return u.replace("*", "·")


def label(quantity, unit):
    """An axis label: 'quantity [unit]' (dimensionless: '[1]')."""
    return f"{quantity} [{pretty_unit(unit)}]"


def words(s):
    """An attribute like 'hann: cos^2(pi t/(2 t_max))' as words for a title: 'Hann'."""
    s = str(s).split(":")[0].strip().replace("_", " ")
    return s[:1].upper() + s[1:]


def styled(fn):
    """Decorator: runs a figure function under vibra's rcParams (labels, ticks and fonts are
    resolved while the figure is built)."""
    @functools.wraps(fn)
    def wrapper(*args, **kw):
        with matplotlib.rc_context(RC):
            return fn(*args, **kw)
    return wrapper


def figure(width=6.0, height=4.2, nrows=1, ncols=1, **kw):
    """A new Figure (constrained layout) with its axes; call inside a @styled function."""
    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=True, **kw)
    return fig, axes


def colorbar(fig, mappable, ax, quantity, unit):
    """A colour bar for `mappable` labelled 'quantity [unit]'."""
    cb = fig.colorbar(mappable, ax=ax)
    cb.set_label(label(quantity, unit))
    return cb


def finite(*arrays):
    """Mask where every array is finite."""
    m = np.ones(np.shape(arrays[0]), dtype=bool)
    for a in arrays:
        m &= np.isfinite(a)
    return m


def save(fig, path):
    """Writes `fig` to `path` (PNG; via a temporary file renamed into place)."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".partial.png")
    os.close(fd)
    try:
        with matplotlib.rc_context(RC):
            fig.savefig(tmp, format="png")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
