# SPDX-License-Identifier: GPL-3.0-or-later
"""Trajectory files (`vibra track`, `vibra import`, `vibra simulate`, `vibra synth` truth) as pandas
DataFrames with trackpy's column names, and the way back and forth to trackpy.

Layout read: docs/hdf5-layout.md ("Trajectory file"). Rows of frame f are
``/trajectories/*[offsets[f]:offsets[f+1]]`` with ``offsets = /index/frame_offsets``, so a frame
range is read by slicing (HDF5 hyperslabs), never the whole file.

DataFrame conventions (the same for every function here):

- columns ``frame, particle, x, y, species, t`` then the file's optional columns (``vx, vy, radius,
  brightness, quality, species_confidence``);
- ``species`` is a pandas Categorical whose categories are ``/meta.species_names`` (code −1, species
  unknown, is NaN);
- ``t`` is the time of the frame in the file's time unit: the camera time stamp when the file has
  them and its time unit is ``s``, else ``frame × frame_interval`` (seconds when the frame rate is
  known, frames otherwise) — the same rule as the C++ analyses;
- lengths are in mm when the file is in pixels and ``px_per_mm`` is known (``units="px"`` keeps
  pixels), velocities and radii follow;
- ``df.attrs`` holds the ``/meta`` attributes (``length_unit`` and the lengths in it —
  ``geometry_bounds``, ``geometry_circle``, ``species_diameters`` — as converted), ``units``
  (column → unit string), ``path``, ``n_frames`` and ``user`` (``/meta/user``).
"""
import os
import re

import numpy as np
import pandas as pd

from ._h5 import attrs as _attrs, open_file, plain, units as _units

SCHEMA = "vibra-trajectories"
FIRST_COLUMNS = ["frame", "particle", "x", "y", "species", "t"]
_LENGTH_ATTRS = ("geometry_bounds", "geometry_circle", "species_diameters")


# ---------------------------------------------------------------- metadata and units

def _length_scale(meta, units, path):
    """(factor, new length unit): multiply lengths stored in the file by factor."""
    lu = meta.get("length_unit", "px")
    ppm = meta.get("px_per_mm")
    known = ppm is not None and np.isfinite(ppm) and ppm > 0
    if units is None:
        return (1.0 / ppm, "mm") if lu == "px" and known else (1.0, lu)
    if units == "px":
        if lu != "px":
            raise ValueError(f"{path}: units='px' asked, but the file's lengths are in {lu!r}")
        return 1.0, "px"
    if units == "mm":
        if lu == "mm":
            return 1.0, "mm"
        if lu == "px" and known:
            return 1.0 / ppm, "mm"
        raise ValueError(f"{path}: units='mm' asked, but the file has no px_per_mm calibration "
                         f"(lengths in {lu!r}; use units=None or track with --px-per-mm)")
    raise ValueError(f"units must be None, 'px' or 'mm', got {units!r}")


def _convert_unit(u, old, new):
    """A unit string with the length unit `old` replaced by `new` ('px^2/s' → 'mm^2/s')."""
    return u if old == new else re.sub(rf"\b{re.escape(old)}\b", new, u)


def read_meta(path):
    """The `/meta` attributes of a trajectory file as a dict (plus `user`, `schema_version`,
    `vibra_version`, `n_frames`, `n_rows`), with lengths in the file's own unit."""
    with open_file(path, SCHEMA) as f:
        return _meta(f, path)


def _meta(f, path):
    if "meta" not in f:
        raise ValueError(f"{path}: /meta is missing")
    m = _attrs(f["meta"])
    m["user"] = _attrs(f["meta/user"]) if "meta/user" in f else {}
    for k in ("schema_version", "vibra_version", "created"):
        if k in f.attrs:
            m[k] = plain(f.attrs[k])
    for k in _LENGTH_ATTRS:
        if k in m:
            m[k] = [float(x) for x in np.atleast_1d(m[k])]
    m["species_names"] = list(np.atleast_1d(m.get("species_names", ["small", "large"])))
    for req in ("trajectories", "index/frame_offsets"):
        if req not in f:
            raise ValueError(f"{path}: /{req} is missing")
    m["n_frames"] = int(f["index/frame_offsets"].shape[0]) - 1
    m["n_rows"] = int(f["trajectories/frame"].shape[0])
    return m


def _converted_meta(meta, factor, new_unit, path):
    out = dict(meta)
    out["path"] = os.fspath(path)
    if new_unit != meta.get("length_unit"):
        out["file_length_unit"] = meta.get("length_unit")
        out["length_unit"] = new_unit
        for k in _LENGTH_ATTRS:
            if k in out:
                out[k] = [x * factor for x in out[k]]
    return out


# ---------------------------------------------------------------- frame ranges

def _frame_range(frames, n_frames, path):
    """[start, stop) from None, an int, a (start, stop) pair, a range or a slice with step 1."""
    if frames is None:
        return 0, n_frames
    if isinstance(frames, (int, np.integer)):
        f = int(frames) + (n_frames if frames < 0 else 0)
        if not 0 <= f < n_frames:
            raise IndexError(f"{path}: frame {frames} is outside 0..{n_frames - 1}")
        return f, f + 1
    if isinstance(frames, range):
        if frames.step != 1:
            raise ValueError(f"frames: a range with step {frames.step}; read the range and select "
                             "df[df.frame % step == 0] instead")
        frames = slice(frames.start, frames.stop)
    if isinstance(frames, tuple) and len(frames) == 2:
        frames = slice(*frames)
    if isinstance(frames, slice):
        if frames.step not in (None, 1):
            raise ValueError(f"frames: a slice with step {frames.step}; read the range and select "
                             "df[df.frame % step == 0] instead")
        for v in (frames.start, frames.stop):
            if v is not None and v > n_frames:
                raise IndexError(f"{path}: frames {frames.start}:{frames.stop} go past the last frame "
                                 f"{n_frames - 1}")
        a, b, _ = frames.indices(n_frames)
        return a, max(a, b)
    raise TypeError(f"frames must be None, an int, (start, stop), a range or a slice; got {frames!r}")


# ---------------------------------------------------------------- reading

class _Reader:
    """What one read needs: the open file, the columns, the unit conversion and the attrs."""

    def __init__(self, f, path, columns, units):
        self.f, self.path = f, os.fspath(path)
        self.meta = _meta(f, path)
        self.factor, self.length_unit = _length_scale(self.meta, units, self.path)
        tr = f["trajectories"]
        stored = list(tr.keys())
        if columns is None:
            want = [c for c in FIRST_COLUMNS if c in stored or c == "t"] + \
                   [c for c in stored if c not in FIRST_COLUMNS]
        else:
            want = list(columns)
            for c in want:
                if c != "t" and c not in stored:
                    raise KeyError(f"{path}: no column {c!r} (the file has: {', '.join(stored)}, and t)")
        self.columns = want
        self.file_units = {c: _units(tr[c]) for c in stored}
        lu = self.meta.get("length_unit", "px")
        self.units = {}
        for c in want:
            if c == "t":
                self.units[c] = self.meta.get("time_unit", "frame")
            else:
                self.units[c] = _convert_unit(self.file_units[c], lu, self.length_unit)
        self.scaled = {c for c in want if c != "t" and self.factor != 1.0 and
                       self.units[c] != self.file_units[c]}
        self.attrs = _converted_meta(self.meta, self.factor, self.length_unit, path)
        self.attrs["units"] = dict(self.units)
        ft = f.get("index/frame_time")
        self.frame_time = ft if (ft is not None and self.meta.get("time_unit") == "s") else None

    def rows(self, a, b):
        """Rows of frames [a, b) as one DataFrame."""
        off = self.f["index/frame_offsets"]
        r0, r1 = int(off[a]), int(off[b])
        return self.table(a, b, r0, r1)

    def table(self, a, b, r0, r1):
        tr = self.f["trajectories"]
        data = {}
        frame = None
        if "frame" in self.columns or "t" in self.columns:
            frame = tr["frame"][r0:r1]
        for c in self.columns:
            if c == "frame":
                data[c] = frame
            elif c == "t":
                if self.frame_time is not None and b > a:
                    stamps = self.frame_time[a:b]
                    data[c] = stamps[frame - a]
                else:
                    data[c] = frame * float(self.meta.get("frame_interval", 1.0))
            elif c == "species":
                codes = tr[c][r0:r1].astype(np.int64)
                names = self.meta["species_names"]
                bad = (codes < -1) | (codes >= len(names))
                if bad.any():
                    raise ValueError(f"{self.path}: species code {codes[bad][0]} has no name in "
                                     f"/meta.species_names {names}")
                data[c] = pd.Categorical.from_codes(codes, categories=names)
            else:
                v = tr[c][r0:r1]
                data[c] = v * self.factor if c in self.scaled else v
        df = pd.DataFrame(data, columns=self.columns)
        df.attrs = dict(self.attrs)
        df.attrs["units"] = dict(self.units)
        df.attrs["frames"] = (a, b)
        return df


def load_trajectories(path, frames=None, columns=None, units=None):
    """A trajectory file (or the frame range `frames`) as a DataFrame.

    path     -- a vibra trajectory HDF5 file
    frames   -- None (all), a frame number, (start, stop), range(start, stop) or slice(start, stop):
                only those rows are read from the file
    columns  -- None (all) or a list of column names (file columns and ``t``), in the order wanted
    units    -- None: mm when the file is in px with a known px_per_mm, else the file's unit;
                'px': keep pixels; 'mm': mm or an error when the calibration is unknown
    """
    with open_file(path, SCHEMA) as f:
        r = _Reader(f, path, columns, units)
        a, b = _frame_range(frames, r.meta["n_frames"], path)
        return r.rows(a, b)


def iter_frames(path, frames=None, columns=None, units=None, block_rows=1 << 20):
    """Yields ``(frame, DataFrame)`` for each frame (frames without detections give an empty
    DataFrame), reading about `block_rows` rows at a time: memory stays bounded for any file size.
    Arguments as load_trajectories."""
    with open_file(path, SCHEMA) as f:
        r = _Reader(f, path, columns, units)
        a, b = _frame_range(frames, r.meta["n_frames"], path)
        offsets = f["index/frame_offsets"]
        step = 1024
        while a < b:
            e = min(b, a + step)
            off = offsets[a:e + 1]
            while e > a + 1 and off[e - a] - off[0] > block_rows:  # shrink to the row budget
                e = a + max(1, (e - a) // 2)
                off = off[:e - a + 1]
            block = r.table(a, e, int(off[0]), int(off[-1]))
            for i in range(e - a):
                s0, s1 = int(off[i] - off[0]), int(off[i + 1] - off[0])
                df = block.iloc[s0:s1].reset_index(drop=True)
                df.attrs = dict(block.attrs)
                df.attrs["frames"] = (a + i, a + i + 1)
                yield a + i, df
            a = e


def frame_table(path, frames=None):
    """The per-frame columns of a trajectory file as a DataFrame, one row per frame: ``frame``,
    ``n_rows`` (detections), ``t`` (as in load_trajectories) and whatever the file has of
    ``/index/frame_time``, ``timestep``, ``image_number`` and the tracking counters
    ``/diagnostics/<name>``; ``attrs['units']`` gives their units."""
    with open_file(path, SCHEMA) as f:
        meta = _meta(f, path)
        a, b = _frame_range(frames, meta["n_frames"], path)
        off = f["index/frame_offsets"][a:b + 1]
        frame = np.arange(a, b, dtype=np.int64)
        cols = {"frame": frame, "n_rows": np.diff(off)}
        units = {"frame": "frame", "n_rows": "rows"}
        ft = f.get("index/frame_time")
        if meta.get("time_unit") == "s" and ft is not None:
            cols["t"] = ft[a:b]
        else:
            cols["t"] = frame * float(meta.get("frame_interval", 1.0))
        units["t"] = meta.get("time_unit", "frame")
        for group in ("index", "diagnostics"):
            if group not in f:
                continue
            for name, ds in f[group].items():
                if name == "frame_offsets" or ds.ndim != 1 or ds.shape[0] != meta["n_frames"]:
                    continue
                cols[name] = ds[a:b]
                units[name] = _units(ds)
        df = pd.DataFrame(cols)
        df.attrs = {"units": units, "path": os.fspath(path), "frames": (a, b)}
        return df


# ---------------------------------------------------------------- trackpy

def to_trackpy(df, unlinked="drop"):
    """A DataFrame as trackpy uses it: positions (and radii, velocities) in pixels when the
    calibration is known, ``frame`` and ``particle`` as int64, unlinked rows (particle −1) dropped
    (``unlinked="keep"`` keeps them: trackpy would take −1 for one particle). ``attrs`` keeps the
    metadata with ``mpp`` (mm per pixel) and ``fps`` (frames per second) when known, the two
    numbers trackpy's ``msd``/``emsd`` ask for."""
    if unlinked not in ("drop", "keep"):
        raise ValueError(f"unlinked must be 'drop' or 'keep', got {unlinked!r}")
    for c in ("frame", "particle", "x", "y"):
        if c not in df.columns:
            raise KeyError(f"to_trackpy: the DataFrame has no {c!r} column")
    meta = dict(df.attrs)
    out = df if unlinked == "keep" else df[df["particle"] >= 0]
    out = out.copy()
    lu = meta.get("length_unit", "px")
    ppm = meta.get("px_per_mm")
    units = dict(meta.get("units", {}))
    if lu == "mm" and ppm:
        for c in out.columns:
            u = units.get(c, "")
            if re.search(r"\bmm\b", u):
                out[c] = out[c] * ppm if "mm^2" not in u else out[c] * ppm * ppm
                units[c] = _convert_unit(u, "mm", "px")
        meta = _converted_meta(meta, ppm, "px", meta.get("path", ""))
        meta.pop("file_length_unit", None)
    if ppm:
        meta["mpp"] = 1.0 / ppm
    if meta.get("time_unit") == "s" and meta.get("frame_interval"):
        meta["fps"] = 1.0 / meta["frame_interval"]
    meta["units"] = units
    out.attrs = meta
    return out.reset_index(drop=True)


def from_trackpy(df, meta=None, units=None):
    """A trackpy DataFrame (``frame, particle, x, y`` in pixels or in ``meta['length_unit']``, any
    extra columns) as a vibra DataFrame: rows sorted by frame then particle, ``species`` categorical
    (from names, codes or a categorical; all species 0 when absent), ``t`` kept when present, else
    ``frame × frame_interval``, lengths in
    mm when ``meta`` has ``px_per_mm`` (``units="px"`` keeps pixels), ``attrs`` = meta + units.

    meta -- a dict like ``df.attrs`` of load_trajectories/to_trackpy (length_unit, time_unit,
            frame_interval, px_per_mm, species_names, …); None: pixels and frames.
    """
    for c in ("frame", "particle", "x", "y"):
        if c not in df.columns:
            raise KeyError(f"from_trackpy: the DataFrame has no {c!r} column")
    meta = dict(meta if meta is not None else df.attrs)
    meta.pop("mpp", None)
    meta.pop("fps", None)
    meta.setdefault("length_unit", "px")
    meta.setdefault("time_unit", "frame")
    meta.setdefault("frame_interval", 1.0)
    names = list(meta.get("species_names", ["small", "large"]))
    meta["species_names"] = names
    out = df.copy()
    if isinstance(out.index, pd.MultiIndex) or out.index.name in out.columns:
        out = out.reset_index(drop=True)
    out["frame"] = out["frame"].astype(np.int64)
    out["particle"] = out["particle"].astype(np.int64)
    if "species" in out.columns:
        s = out["species"]
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = s.astype(object)
        if s.dtype == object:
            unknown = set(s.dropna().unique()) - set(names)
            if unknown:
                raise ValueError(f"from_trackpy: species {sorted(unknown)} not in species_names {names}")
            species = pd.Categorical(s, categories=names)
        else:
            species = pd.Categorical.from_codes(s.fillna(-1).astype(np.int64), categories=names)
    else:
        species = pd.Categorical.from_codes(np.zeros(len(out), dtype=np.int64), categories=names)
    out["species"] = species
    out = out.sort_values(["frame", "particle"], kind="stable").reset_index(drop=True)
    if "t" not in out.columns:
        out["t"] = out["frame"] * float(meta["frame_interval"])
    lu = meta["length_unit"]
    tu = meta["time_unit"]
    defaults = {"frame": "frame", "particle": "1", "x": lu, "y": lu, "species": "1", "t": tu,
                "vx": f"{lu}/{tu}", "vy": f"{lu}/{tu}", "radius": lu, "brightness": "counts",
                "quality": "1", "species_confidence": "1"}
    given = dict(meta.get("units", {}))
    col_units = {c: given.get(c, defaults.get(c, "")) for c in out.columns}
    factor, new_unit = _length_scale(meta, units, "from_trackpy")
    if factor != 1.0:
        for c in out.columns:
            u = col_units[c]
            if re.search(rf"\b{re.escape(lu)}\b", u):
                out[c] = out[c] * (factor * factor if f"{lu}^2" in u else factor)
                col_units[c] = _convert_unit(u, lu, new_unit)
    meta = _converted_meta(meta, factor, new_unit, meta.get("path", ""))
    first = [c for c in FIRST_COLUMNS if c in out.columns]
    out = out[first + [c for c in out.columns if c not in first]]
    meta["units"] = {c: col_units[c] for c in out.columns}
    out.attrs = meta
    return out
