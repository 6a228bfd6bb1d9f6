# SPDX-License-Identifier: GPL-3.0-or-later
"""Results files (`vibra analyze`) and batch campaign tables (`vibra batch`).

``load_results(path)`` reads every ``/analysis/<name>`` group into an :class:`Analysis`: its
datasets as numpy arrays (``a["msd"]`` or ``a.msd``), their units (``a.units["msd"]``), the group's
attributes (parameters and scalar results: ``a.attrs["beta"]``), sub-groups as nested Analysis
objects (``res["kgap"]["pole"]``). Scalar results with an uncertainty — an attribute ``X`` next to
``X_err``, ``X_ci_low``/``X_ci_high`` or ``X_ci`` — are returned together by ``a.value("X")``.
Layout: docs/hdf5-layout.md ("Results file").
"""
import os
from dataclasses import dataclass

import h5py
import numpy as np
import pandas as pd

from ._h5 import attrs as _attrs, open_file, plain, units as _units

SCHEMA = "vibra-results"
# Species and pair suffixes of the naming rule (docs/hdf5-layout.md), longest first.
_SUFFIXES = ("_small_small", "_small_large", "_large_large", "_small_mass", "_large_mass", "_small", "_large",
             "_mass")


@dataclass(frozen=True)
class Value:
    """A scalar result with its uncertainty: ``err`` (one standard error) and/or the confidence
    interval ``ci = (low, high)``; NaN/None when the file has none."""
    value: float
    err: float = float("nan")
    ci: tuple = None
    units: str = ""

    def __float__(self):
        return float(self.value)

    def __str__(self):
        s = f"{self.value:.4g}"
        if np.isfinite(self.err):
            s += f" ± {self.err:.2g}"
        if self.ci is not None:
            s += f" (CI {self.ci[0]:.4g}–{self.ci[1]:.4g})"
        return s + (f" {self.units}" if self.units and self.units != "1" else "")


class Analysis:
    """One results group: arrays, their units, attributes, sub-groups."""

    def __init__(self, name, arrays, units, attrs, groups):
        self.name = name
        self.arrays = arrays      # dataset name → numpy array
        self.units = units        # dataset name → unit string
        self.attrs = attrs        # attribute name → plain value
        self.groups = groups      # sub-group name → Analysis

    @classmethod
    def from_group(cls, g, name):
        arrays, units, groups = {}, {}, {}
        for k, v in g.items():
            if isinstance(v, h5py.Dataset):
                arrays[k] = v[()]
                if arrays[k].dtype.kind == "S" or arrays[k].dtype.kind == "O":
                    arrays[k] = np.array([plain(x) for x in np.atleast_1d(arrays[k])])
                units[k] = _units(v)
            elif isinstance(v, h5py.Group):
                groups[k] = cls.from_group(v, f"{name}/{k}")
        return cls(name, arrays, units, _attrs(g), groups)

    def __getitem__(self, key):
        if "/" in key:
            head, rest = key.split("/", 1)
            return self.groups[head][rest]
        if key in self.arrays:
            return self.arrays[key]
        if key in self.groups:
            return self.groups[key]
        raise KeyError(f"{self.name}: no dataset or group {key!r} (datasets: {', '.join(self.arrays)}; "
                       f"groups: {', '.join(self.groups) or 'none'})")

    def __getattr__(self, key):
        if key.startswith("_") or key in ("arrays", "groups", "units", "attrs", "name"):
            raise AttributeError(key)
        try:
            return self[key]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __contains__(self, key):
        if "/" in key:
            head, rest = key.split("/", 1)
            return head in self.groups and rest in self.groups[head]
        return key in self.arrays or key in self.groups

    def keys(self):
        return list(self.arrays) + list(self.groups)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def unit(self, key):
        """Units of a dataset ('' when it has none); 'sub/name' reaches into sub-groups."""
        if "/" in key:
            head, rest = key.split("/", 1)
            return self.groups[head].unit(rest)
        return self.units.get(key, "")

    def attr(self, key, default=float("nan")):
        return self.attrs.get(key, default)

    def value(self, key):
        """The scalar attribute `key` with its uncertainty (see :class:`Value`): `X_err` (or
        `X_sigma`, `X_stderr`) and `X_ci_low`/`X_ci_high`, the species suffix last
        (`beta_ci_low_small` for `value("beta_small")`)."""
        if key not in self.attrs:
            raise KeyError(f"{self.name}: no attribute {key!r}")
        a = self.attrs
        base, suf = key, ""
        for s in _SUFFIXES:
            if key.endswith(s) and key != s:
                base, suf = key[:-len(s)], s
                break
        err = float("nan")
        for e in ("_err", "_sigma", "_stderr"):
            if base + e + suf in a:
                err = float(a[base + e + suf])
                break
        ci = None
        if base + "_ci_low" + suf in a and base + "_ci_high" + suf in a:
            ci = (float(a[base + "_ci_low" + suf]), float(a[base + "_ci_high" + suf]))
        return Value(float(a[key]), err, ci, "")

    def frame(self, *keys):
        """Equal-length 1-D datasets as a DataFrame (all of them when no key is given), with
        ``attrs['units']``."""
        if not keys:
            n = {}
            for k, v in self.arrays.items():
                if v.ndim == 1:
                    n.setdefault(len(v), []).append(k)
            keys = max(n.values(), key=len) if n else []
        df = pd.DataFrame({k: self.arrays[k] for k in keys})
        df.attrs["units"] = {k: self.units.get(k, "") for k in keys}
        return df

    def __repr__(self):
        parts = [f"{k}{list(v.shape)} [{self.units.get(k, '')}]" for k, v in self.arrays.items()]
        return f"<Analysis {self.name}: {', '.join(parts)}; groups: {list(self.groups)}>"


class Results:
    """A results file: ``res["msd"]`` (or ``res.msd``) is an :class:`Analysis`; ``res.attrs`` the
    root attributes (input, parameters, version); ``res.meta`` the input's ``/meta`` (units,
    geometry, species); ``res.skipped`` analysis name → reason."""

    def __init__(self, path, analyses, attrs, meta):
        self.path = path
        self.analyses = analyses
        self.attrs = attrs
        self.meta = meta
        self.skipped = _parse_skipped(attrs.get("skipped_analyses", ""))

    def __getitem__(self, name):
        if "/" in name:  # "kgap/pole": a sub-group, "msd/lag": a dataset
            head, rest = name.split("/", 1)
            return self[head][rest]
        if name not in self.analyses:
            why = f" (skipped: {self.skipped[name]})" if name in self.skipped else ""
            raise KeyError(f"{self.path}: no analysis {name!r}{why}; present: {', '.join(self.analyses)}")
        return self.analyses[name]

    def __getattr__(self, name):
        if name.startswith("_") or name in ("analyses", "attrs", "meta", "path", "skipped"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(str(e)) from None

    def __contains__(self, name):
        return name in self.analyses

    def __iter__(self):
        return iter(self.analyses)

    def keys(self):
        return list(self.analyses)

    def get(self, name, default=None):
        return self.analyses.get(name, default)

    def __repr__(self):
        return f"<Results {self.path}: {', '.join(self.analyses)}>"


def _parse_skipped(s):
    """'name: reason' entries (one per line or ';'-separated, or a string array) → dict."""
    items = s if isinstance(s, list) else str(s).replace(";", "\n").splitlines()
    out = {}
    for line in items:
        if ":" in line:
            k, v = line.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def load_results(path):
    """Every analysis of a `vibra analyze` results file (see :class:`Results`)."""
    with open_file(path, SCHEMA) as f:
        analyses = {}
        if "analysis" in f:
            for name, g in f["analysis"].items():
                if isinstance(g, h5py.Group):
                    analyses[name] = Analysis.from_group(g, name)
        meta = _attrs(f["input_meta/meta"]) if "input_meta/meta" in f else {}
        if "input_meta/meta/user" in f:
            meta["user"] = _attrs(f["input_meta/meta/user"])
        return Results(os.fspath(path), analyses, _attrs(f), meta)


def campaign(path):
    """A `vibra batch` campaign table (one row per video) as a DataFrame.

    path -- the batch output directory (campaign.h5 preferred, else campaign.csv), or either file.
    HDF5: every 1-D dataset of the group /campaign is a column (``units`` attribute → attrs['units'];
    a ``columns`` attribute of the group, when present, gives the order; the root and group
    attributes and the columns' ``description`` attributes go to attrs). CSV: read as is with pandas (lines starting with # are comments)."""
    p = os.fspath(path)
    if os.path.isdir(p):
        for name in ("campaign.h5", "campaign.csv"):
            if os.path.exists(os.path.join(p, name)):
                return campaign(os.path.join(p, name))
        raise FileNotFoundError(f"{p}: no campaign.h5 or campaign.csv (is it a `vibra batch` output directory?)")
    if not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such file")
    if p.endswith(".csv"):
        df = pd.read_csv(p, comment="#")
        df.attrs["units"] = {}
        df.attrs["path"] = p
        return df
    try:
        f = h5py.File(p, "r")
    except OSError as e:
        raise ValueError(f"{p}: not an HDF5 file ({e})") from None
    with f:
        schema = plain(f.attrs.get("schema", "vibra-campaign"))
        if schema != "vibra-campaign":
            raise ValueError(f"{p}: not a vibra-campaign file (schema attribute: {schema!r})")
        if "campaign" not in f or not isinstance(f["campaign"], h5py.Group):
            raise ValueError(f"{p}: no /campaign group (not a `vibra batch` campaign file)")
        g = f["campaign"]
        names = [k for k, v in g.items() if isinstance(v, h5py.Dataset) and v.ndim == 1]
        order = g.attrs.get("columns")
        if order is not None:
            order = [plain(x) for x in np.atleast_1d(order)]
            names = [c for c in order if c in names] + [c for c in names if c not in order]
        cols, units, descriptions = {}, {}, {}
        lengths = {g[c].shape[0] for c in names}
        if len(lengths) > 1:
            raise ValueError(f"{p}: /campaign columns have different lengths {sorted(lengths)}")
        for c in names:
            v = g[c][()]
            if v.dtype.kind in "SO":
                v = np.array([plain(x) for x in v], dtype=object)
            cols[c] = v
            units[c] = _units(g[c])
            if "description" in g[c].attrs:
                descriptions[c] = plain(g[c].attrs["description"])
        df = pd.DataFrame(cols, columns=names)
        df.attrs.update(_attrs(f))
        df.attrs.update({k: v for k, v in _attrs(g).items() if k != "columns"})
        df.attrs["units"] = units
        df.attrs["descriptions"] = descriptions
        df.attrs["path"] = p
        return df
