#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""A Python user reads a vibra trajectory file with h5py + pandas (the documented one-liner).

Usage: test_python_h5py.py VIBRA_CLI DUMP SCRATCH_DIR
Exits 77 (CTest: skipped) when h5py/pandas are missing, except under CI=true, where that fails.
"""
import os
import subprocess
import sys
import tempfile

try:
    import h5py
    import numpy as np
    import pandas as pd
except ImportError as e:  # pragma: no cover
    if os.environ.get("CI") == "true":
        print(f"FAIL: {e} (python3-h5py/python3-pandas must be installed in CI)")
        sys.exit(1)
    print(f"SKIP: {e}")
    sys.exit(77)

vibra, dump, scratch = sys.argv[1:4]
os.makedirs(scratch, exist_ok=True)
out = os.path.join(tempfile.mkdtemp(dir=scratch), "lj.h5")
subprocess.run([vibra, "import", dump, "-o", out, "--diameter", "small=1.0,large=1.4"], check=True)

# Independent parse of the dump: (timestep frame index, id) -> (type, xu, yu, vx, vy)
expect = {}
with open(dump) as fh:
    lines = fh.read().split("\n")
i, frame = 0, -1
while i < len(lines):
    if lines[i].startswith("ITEM: TIMESTEP"):
        frame += 1
    if lines[i].startswith("ITEM: NUMBER OF ATOMS"):
        n = int(lines[i + 1])
    if lines[i].startswith("ITEM: ATOMS"):
        cols = lines[i].split()[2:]
        for k in range(n):
            vals = dict(zip(cols, lines[i + 1 + k].split()))
            expect[(frame, int(vals["id"]))] = vals
        i += n
    i += 1

with h5py.File(out, "r") as f:
    assert f.attrs["schema"] == "vibra-trajectories", f.attrs["schema"]
    assert f.attrs["schema_version"] == "1.0"
    df = pd.DataFrame({k: v[:] for k, v in f["trajectories"].items()})  # the documented one-liner
    for name, ds in f["trajectories"].items():
        assert "units" in ds.attrs, f"/trajectories/{name} has no units"
    assert f["trajectories/x"].attrs["units"] == "sigma"
    assert f["trajectories/vx"].attrs["units"] == "sigma/tau"
    offsets = f["index/frame_offsets"][:]
    assert f["index/frame_offsets"].attrs["units"] == "rows"
    meta = f["meta"].attrs
    assert meta["geometry"] == "periodic_box"
    assert list(meta["species_names"]) == ["small", "large"]
    assert np.allclose(meta["species_diameters"], [1.0, 1.4])

assert sorted(df.columns) == sorted(["frame", "particle", "x", "y", "species", "vx", "vy"]), df.columns
assert len(df) == len(expect) == 40, len(df)
assert list(offsets) == [0, 8, 16, 24, 32, 40]
assert df["frame"].is_monotonic_increasing
for row in df.itertuples():
    e = expect[(row.frame, row.particle)]
    assert row.x == float(e["xu"]) and row.y == float(e["yu"]), (row, e)
    assert row.vx == float(e["vx"]) and row.vy == float(e["vy"])
    assert row.species == (0 if e["type"] == "1" else 1)
print("python h5py/pandas read: OK,", len(df), "rows")
