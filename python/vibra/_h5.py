# SPDX-License-Identifier: GPL-3.0-or-later
"""Small h5py helpers shared by the loaders: attributes as plain Python values, file opening with
errors that name the file as the user typed it."""
import os

import h5py
import numpy as np


def plain(v):
    """An HDF5 attribute value as a plain Python value: bytes → str, numpy scalars → int/float/str,
    string arrays → list of str, numeric arrays → numpy arrays."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "SO" or v.dtype.kind == "U":
            return [plain(x) for x in v.tolist()]
        return v
    if isinstance(v, np.generic):
        return v.item()
    return v


def attrs(obj):
    """All attributes of an h5py group or dataset as a dict of plain values."""
    return {k: plain(v) for k, v in obj.attrs.items()}


def units(ds):
    """The `units` attribute of a dataset as str ('' when absent)."""
    return str(plain(ds.attrs.get("units", "")))


def open_file(path, schema):
    """Opens `path` read-only and checks its `schema` root attribute; errors name `path`."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ValueError(f"{path}: not an HDF5 file ({e})") from None
    got = plain(f.attrs.get("schema", ""))
    if got != schema:
        f.close()
        raise ValueError(f"{path}: not a {schema} file (schema attribute: {got!r})")
    major = str(plain(f.attrs.get("schema_version", "1.0"))).split(".")[0]
    if not major.isdigit() or int(major) > 1:
        f.close()
        raise ValueError(f"{path}: schema_version {plain(f.attrs.get('schema_version'))!r} is newer than "
                         "this reader (1.x)")
    return f
