#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""vibra.load_trajectories / iter_frames / to_trackpy / from_trackpy / load_results / campaign on
files the CLI writes: tracked (synth + track), imported (LAMMPS dump), simulated.

Usage: test_loaders.py VIBRA_CLI SOURCE_DIR SCRATCH_DIR   (run by CTest: python_loaders)
Every expected value comes from an independent read (h5py on the same file, a parse of the dump).
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

support.require("numpy", "h5py", "pandas")
VIBRA, SRC, SCRATCH = support.args()

import h5py  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import vibra  # noqa: E402

DUMP = os.path.join(SRC, "data", "lammps", "tiny_lj2d.dump")
FPS, PPM = 2000.0, 10.0


def raw(path):
    """The documented h5py one-liner: every /trajectories column, /index and /meta."""
    with h5py.File(path, "r") as f:
        df = pd.DataFrame({k: v[:] for k, v in f["trajectories"].items()})
        off = f["index/frame_offsets"][:]
        meta = dict(f["meta"].attrs)
    return df, off, meta


def s(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class Tracked(unittest.TestCase):
    """synth → track with --fps and --px-per-mm: mm, seconds, species names."""

    @classmethod
    def setUpClass(cls):
        if not (support.has_command(VIBRA, "synth") and support.has_command(VIBRA, "track")):
            raise unittest.SkipTest("vibra built without tracking (no synth/track)")
        cls.video = os.path.join(SCRATCH, "clip.avi")
        cls.path = os.path.join(SCRATCH, "clip.h5")
        support.run(VIBRA, "synth", "-o", cls.video, "--frames", 12, "--width", 256, "--height", 256,
                    "--packing-fraction", 0.5, "--look", "dark-ring", "--noise", 0.03, "--seed", 3, "-q")
        support.run(VIBRA, "track", cls.video, "-o", cls.path, "--radius-small", 6, "--radius-large", 8,
                    "--fps", FPS, "--px-per-mm", PPM, "-q")
        cls.raw, cls.off, cls.meta = raw(cls.path)

    def test_columns_units_species_time(self):
        df = vibra.load_trajectories(self.path)
        self.assertEqual(list(df.columns[:6]), ["frame", "particle", "x", "y", "species", "t"])
        self.assertEqual(len(df), len(self.raw))
        self.assertGreater(len(df), 12 * 50)
        np.testing.assert_array_equal(df["frame"], self.raw["frame"])
        np.testing.assert_array_equal(df["particle"], self.raw["particle"])
        np.testing.assert_allclose(df["x"], self.raw["x"] / PPM, rtol=1e-15)
        np.testing.assert_allclose(df["y"], self.raw["y"] / PPM, rtol=1e-15)
        np.testing.assert_allclose(df["t"], self.raw["frame"] / FPS, rtol=1e-12)
        self.assertIsInstance(df["species"].dtype, pd.CategoricalDtype)
        self.assertEqual(list(df["species"].cat.categories), ["small", "large"])
        np.testing.assert_array_equal(df["species"].cat.codes, self.raw["species"])
        self.assertEqual(set(df["species"].dropna().unique()), {"small", "large"})
        if "radius" in df:
            np.testing.assert_allclose(df["radius"], self.raw["radius"] / PPM, rtol=1e-6)
            self.assertEqual(df.attrs["units"]["radius"], "mm")
        self.assertEqual(df.attrs["units"]["x"], "mm")
        self.assertEqual(df.attrs["units"]["t"], "s")
        self.assertEqual(df.attrs["length_unit"], "mm")
        self.assertEqual(df.attrs["file_length_unit"], "px")
        self.assertEqual(df.attrs["time_unit"], "s")
        self.assertAlmostEqual(df.attrs["frame_interval"], 1 / FPS)
        self.assertEqual(df.attrs["px_per_mm"], PPM)
        self.assertEqual(df.attrs["image_width"], 256)
        self.assertEqual(df.attrs["n_frames"], 12)
        self.assertEqual(df.attrs["source_file"], s(self.meta["source_file"]))

    def test_frame_table(self):
        ft = vibra.frame_table(self.path)
        self.assertEqual(list(ft["frame"]), list(range(12)))
        np.testing.assert_array_equal(ft["n_rows"], np.diff(self.off))
        np.testing.assert_allclose(ft["t"], np.arange(12) / FPS)
        with h5py.File(self.path, "r") as f:
            for name, ds in f["diagnostics"].items():
                np.testing.assert_array_equal(ft[name], ds[:])
                self.assertEqual(ft.attrs["units"][name], s(ds.attrs["units"]))
            self.assertGreater(len(f["diagnostics"]), 0)
        self.assertEqual(len(vibra.frame_table(self.path, frames=(2, 5))), 3)

    def test_units_px_keeps_pixels(self):
        df = vibra.load_trajectories(self.path, units="px")
        np.testing.assert_array_equal(df["x"], self.raw["x"])
        self.assertEqual(df.attrs["units"]["x"], "px")
        self.assertEqual(df.attrs["length_unit"], "px")

    def test_frame_range_equals_slice_of_whole(self):
        whole = vibra.load_trajectories(self.path)
        for frames, (a, b) in (((3, 7), (3, 7)), (5, (5, 6)), (slice(8, None), (8, 12)), (range(0, 2), (0, 2)),
                               (-1, (11, 12))):
            part = vibra.load_trajectories(self.path, frames=frames)
            exp = whole.iloc[self.off[a]:self.off[b]].reset_index(drop=True)
            pd.testing.assert_frame_equal(part, exp)
            self.assertEqual(part.attrs["frames"], (a, b))
            self.assertEqual(sorted(part["frame"].unique()), list(range(a, b)))

    def test_frame_range_reads_only_its_rows(self):
        """Every read of a /trajectories dataset stays inside the rows of the frames asked for."""
        reads = []
        orig = h5py.Dataset.__getitem__

        def spy(ds, key):
            if ds.name.startswith("/trajectories/"):
                reads.append((ds.name, key))
            return orig(ds, key)

        h5py.Dataset.__getitem__ = spy
        try:
            part = vibra.load_trajectories(self.path, frames=(4, 6))
        finally:
            h5py.Dataset.__getitem__ = orig
        self.assertTrue(reads)
        for name, key in reads:
            self.assertIsInstance(key, slice, name)
            self.assertEqual((key.start, key.stop), (self.off[4], self.off[6]), name)
        self.assertEqual(len(part), self.off[6] - self.off[4])

    def test_columns_selection(self):
        df = vibra.load_trajectories(self.path, columns=["t", "x", "particle"], frames=(0, 2))
        self.assertEqual(list(df.columns), ["t", "x", "particle"])
        np.testing.assert_allclose(df["t"], self.raw["frame"][:self.off[2]] / FPS)
        with self.assertRaisesRegex(KeyError, "no column 'mass'"):
            vibra.load_trajectories(self.path, columns=["mass"])

    def test_iter_frames_streams_every_frame(self):
        whole = vibra.load_trajectories(self.path)
        seen = []
        for frame, d in vibra.iter_frames(self.path, block_rows=100):  # forces several blocks
            self.assertEqual(len(d), self.off[frame + 1] - self.off[frame])
            self.assertTrue((d["frame"] == frame).all())
            seen.append(d)
        self.assertEqual(len(seen), 12)
        pd.testing.assert_frame_equal(pd.concat(seen, ignore_index=True), whole)

    def test_csv_export_import_round_trip_keeps_the_metadata(self):
        """vibra export writes CLIP.csv + CLIP.csv.meta.json; vibra import of the CSV restores the frame
        rate, the scale, the species' names and sizes and the geometry: the loaders see the same table."""
        csv = os.path.join(SCRATCH, "clip_export.csv")
        back = os.path.join(SCRATCH, "clip_back.h5")
        support.run(VIBRA, "export", self.path, "-o", csv, "-q")
        self.assertTrue(os.path.exists(csv + ".meta.json"))
        support.run(VIBRA, "import", csv, "-o", back, "-q")
        a, b = vibra.load_trajectories(self.path), vibra.load_trajectories(back)
        for col in ("frame", "particle", "x", "y", "t"):
            np.testing.assert_array_equal(a[col].to_numpy(), b[col].to_numpy(), err_msg=col)
        self.assertEqual(list(a["species"].astype(str)), list(b["species"].astype(str)))
        for key in ("length_unit", "time_unit", "frame_interval", "px_per_mm", "species_names", "species_diameters"):
            self.assertEqual(str(a.attrs[key]), str(b.attrs[key]), key)

    def test_trackpy_round_trip(self):
        df = vibra.load_trajectories(self.path)
        tp = vibra.to_trackpy(df)
        linked = self.raw[self.raw["particle"] >= 0].reset_index(drop=True)
        self.assertEqual(len(tp), len(linked))
        np.testing.assert_allclose(tp["x"], linked["x"], rtol=1e-13)  # back in pixels
        np.testing.assert_allclose(tp["y"], linked["y"], rtol=1e-13)
        self.assertAlmostEqual(tp.attrs["mpp"], 1 / PPM)
        self.assertAlmostEqual(tp.attrs["fps"], FPS)
        self.assertEqual(tp.attrs["units"]["x"], "px")
        back = vibra.from_trackpy(tp, tp.attrs)
        exp = df[df["particle"] >= 0].reset_index(drop=True)
        pd.testing.assert_frame_equal(back, exp, rtol=1e-6)  # float32 columns (radius, …) scaled twice
        np.testing.assert_allclose(back[["x", "y"]], exp[["x", "y"]], rtol=1e-14)
        self.assertEqual(back.attrs["units"], exp.attrs["units"])
        self.assertEqual(back.attrs["length_unit"], "mm")
        keep = vibra.to_trackpy(df, unlinked="keep")
        self.assertEqual(len(keep), len(df))


class Imported(unittest.TestCase):
    """A LAMMPS dump: sigma and tau (no mm), velocities, diameters, periodic box."""

    @classmethod
    def setUpClass(cls):
        cls.path = os.path.join(SCRATCH, "lj.h5")
        support.run(VIBRA, "import", DUMP, "-o", cls.path, "--diameter", "small=1.0,large=1.4", "--dt", 0.1)
        cls.expect = {}
        with open(DUMP) as fh:
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
                    cls.expect[(frame, int(vals["id"]))] = vals
                i += n
            i += 1

    def test_matches_the_dump(self):
        df = vibra.load_trajectories(self.path)
        self.assertEqual(len(df), len(self.expect))
        self.assertEqual(len(df), 40)
        for row in df.itertuples():
            e = self.expect[(row.frame, row.particle)]
            self.assertEqual(row.x, float(e["xu"]))
            self.assertEqual(row.y, float(e["yu"]))
            self.assertEqual(row.vx, float(e["vx"]))
            self.assertEqual(row.species, "small" if e["type"] == "1" else "large")
            self.assertAlmostEqual(row.t, row.frame * 0.1, places=12)
        self.assertEqual(df.attrs["units"]["x"], "sigma")
        self.assertEqual(df.attrs["units"]["vx"], "sigma/tau")
        self.assertEqual(df.attrs["units"]["t"], "tau")
        self.assertEqual(df.attrs["geometry"], "periodic_box")
        self.assertEqual(df.attrs["species_diameters"], [1.0, 1.4])
        self.assertNotIn("file_length_unit", df.attrs)

    def test_unit_requests_that_cannot_hold(self):
        with self.assertRaisesRegex(ValueError, "lj.h5: units='mm' asked, but the file has no px_per_mm"):
            vibra.load_trajectories(self.path, units="mm")
        with self.assertRaisesRegex(ValueError, "lengths are in 'sigma'"):
            vibra.load_trajectories(self.path, units="px")

    def test_bad_inputs_name_the_file(self):
        with self.assertRaisesRegex(FileNotFoundError, "nothing.h5: no such file"):
            vibra.load_trajectories(os.path.join(SCRATCH, "nothing.h5"))
        with self.assertRaisesRegex(ValueError, "tiny_lj2d.dump: not an HDF5 file"):
            vibra.load_trajectories(DUMP)
        with self.assertRaisesRegex(IndexError, "frame 9 is outside 0..4"):
            vibra.load_trajectories(self.path, frames=9)

    def test_unit_scaling_follows_the_power_of_length(self):
        from vibra.trajectories import _unit_factor
        for unit, want in (("px", 0.1), ("px^2/s", 0.01), ("(px/s)^2", 0.01), ("1/px", 10.0), ("s", 1.0),
                           ("sigma", 1.0), ("1", 1.0)):
            self.assertAlmostEqual(_unit_factor(unit, "px", 0.1), want, places=15, msg=unit)
        with self.assertRaisesRegex(ValueError, "not in the unit grammar"):
            _unit_factor("px;import os", "px", 0.1)

    def test_from_plain_trackpy_frame(self):
        """A DataFrame as trackpy makes it (y, x first, unsorted, species names) with metadata."""
        tp = pd.DataFrame({"y": [5.0, 1.0, 2.0], "x": [50.0, 10.0, 20.0], "frame": [1, 0, 0],
                           "particle": [0, 1, 0], "mass": [3.0, 1.0, 2.0],
                           "species": ["large", "large", "small"]})
        df = vibra.from_trackpy(tp, {"px_per_mm": 10.0, "time_unit": "s", "frame_interval": 0.5})
        self.assertEqual(list(df.columns), ["frame", "particle", "x", "y", "species", "t", "mass"])
        np.testing.assert_array_equal(df["frame"], [0, 0, 1])
        np.testing.assert_array_equal(df["particle"], [0, 1, 0])
        np.testing.assert_allclose(df["x"], [2.0, 1.0, 5.0])   # mm
        np.testing.assert_allclose(df["t"], [0.0, 0.0, 0.5])
        self.assertEqual(list(df["species"]), ["small", "large", "large"])
        np.testing.assert_array_equal(df["mass"], [2.0, 1.0, 3.0])
        self.assertEqual(df.attrs["units"]["x"], "mm")
        with self.assertRaisesRegex(ValueError, "species \\['medium'\\] not in species_names"):
            vibra.from_trackpy(tp.assign(species="medium"))


class Simulated(unittest.TestCase):
    """vibra simulate → load; vibra analyze → load_results."""

    @classmethod
    def setUpClass(cls):
        cls.path = os.path.join(SCRATCH, "sim.h5")
        cls.res = os.path.join(SCRATCH, "res.h5")
        support.run(VIBRA, "simulate", "-o", cls.path, "--n-small", 60, "--n-large", 60, "--packing-fraction", 0.5,
                    "--frames", 600, "--equilibrate", 20, "--seed", 5, "-q")
        support.run(VIBRA, "analyze", cls.path, "-o", cls.res, "--only", "gr,msd,velocity_distribution,currents,kgap",
                    "-q")
        cls.raw, cls.off, cls.meta = raw(cls.path)

    def test_trajectories(self):
        df = vibra.load_trajectories(self.path)
        self.assertEqual(len(df), 120 * 600)
        self.assertEqual(df.attrs["length_unit"], s(self.meta["length_unit"]))
        self.assertEqual((df["species"] == "small").sum(), 60 * 600)
        self.assertEqual((df["species"] == "large").sum(), 60 * 600)
        np.testing.assert_allclose(df["t"], self.raw["frame"] * self.meta["frame_interval"], rtol=1e-14)
        self.assertEqual(df.attrs["units"]["t"], s(self.meta["time_unit"]))
        self.assertEqual(df.attrs["geometry"], s(self.meta["geometry"]))
        n = sum(len(d) for _, d in vibra.iter_frames(self.path, frames=(10, 20)))
        self.assertEqual(n, 120 * 10)

    def test_results_match_h5py(self):
        res = vibra.load_results(self.res)
        for name in ("gr", "msd", "velocity_distribution", "currents", "kgap"):
            self.assertIn(name, res)
        with h5py.File(self.res, "r") as f:
            for name in res:
                g = f["analysis"][name]
                a = res[name]
                for k, ds in g.items():
                    if isinstance(ds, h5py.Dataset):
                        np.testing.assert_array_equal(a[k], ds[()], err_msg=f"{name}/{k}")
                        self.assertEqual(a.units[k], s(ds.attrs["units"]), f"{name}/{k}")
            vd = f["analysis/velocity_distribution"].attrs
            beta = res.velocity_distribution.value("beta")
            self.assertEqual(beta.value, vd["beta"])
            self.assertEqual(beta.ci, (vd["beta_ci_low"], vd["beta_ci_high"]))
            self.assertTrue(beta.ci[0] <= beta.value <= beta.ci[1])
            bs = res["velocity_distribution"].value("beta_small")
            self.assertEqual(bs.ci, (vd["beta_ci_low_small"], vd["beta_ci_high_small"]))
            pole = f["analysis/kgap/pole"].attrs
            kg = res["kgap"]["pole"].value("k_gap")
            self.assertTrue(np.array_equal([kg.value, kg.err], [pole["k_gap"], pole["k_gap_err"]], equal_nan=True))
            np.testing.assert_array_equal(res["kgap/pole"].attrs["c"], pole["c"])  # NaN when no fit
            np.testing.assert_array_equal(res["msd/lag"], f["analysis/msd/lag"][:])
            self.assertEqual(res.meta["length_unit"], s(f["input_meta/meta"].attrs["length_unit"]))
            self.assertEqual(res.attrs["input_checksum"], s(f.attrs["input_checksum"]))
        loc = res.msd.value("sigma_loc")
        self.assertEqual((loc.value, loc.units), (res.msd.attrs["sigma_loc"], res.msd.attrs["sigma_loc_units"]))
        m = res.msd.frame("lag", "msd")
        self.assertEqual(m.attrs["units"]["msd"], res.msd.units["msd"])
        with self.assertRaisesRegex(KeyError, "no analysis 'sk'"):
            res["sk"]
        with self.assertRaisesRegex(ValueError, "not a vibra-results file"):
            vibra.load_results(self.path)


class Campaign(unittest.TestCase):
    """campaign(): the HDF5 table (/campaign, one 1-D dataset per column with units) and the CSV."""

    def test_table_of_a_real_batch(self):
        if not support.has_command(VIBRA, "batch"):
            raise unittest.SkipTest("vibra built without tracking (no batch)")
        videos = os.path.join(SCRATCH, "batch_videos")
        os.makedirs(videos)
        for phi in ("0.40", "0.60"):
            support.run(VIBRA, "synth", "-o", os.path.join(videos, f"phi{phi}.avi"), "--frames", 30, "--width", 192,
                        "--height", 192, "--margin", 0, "--packing-fraction", phi, "--look", "dark-ring", "--noise", 0.03,
                        "--seed", 3, "-q")
        out = os.path.join(SCRATCH, "batch_out")
        support.run(VIBRA, "batch", videos, "-o", out, "--radius-small", 6, "--radius-large", 8, "--fps", FPS,
                    "--px-per-mm", PPM, "--no-figures", "--only", "gr,voronoi", "-q")
        tab = vibra.campaign(out)
        with h5py.File(os.path.join(out, "campaign.h5"), "r") as f:
            g = f["campaign"]
            self.assertEqual(list(tab.columns), [s(c) for c in g.attrs["columns"]])
            np.testing.assert_array_equal(tab["phi"].to_numpy(), g["phi"][:])
            self.assertEqual(tab.attrs["units"]["r_peak"], s(g["r_peak"].attrs["units"]))
        self.assertEqual(list(tab["name"]), ["phi0.40", "phi0.60"])
        self.assertEqual(list(tab["status"]), ["ok", "ok"])
        self.assertTrue((tab["phi"] > 0.3).all() and (tab["phi"] < 0.7).all())
        np.testing.assert_array_equal(tab["fps"], [FPS, FPS])
        self.assertEqual(len(vibra.campaign(os.path.join(out, "campaign.csv"))), 2)

    def test_hdf5_and_csv(self):
        d = os.path.join(SCRATCH, "batch")
        os.makedirs(d)
        with h5py.File(os.path.join(d, "campaign.h5"), "w") as f:
            f.attrs["schema"] = "vibra-campaign"
            g = f.create_group("campaign")
            g.attrs["columns"] = ["video", "k_gap", "beta", "frames"]  # display order, as vibra batch writes it
            for name, data, unit in (("video", np.array([b"a.cine", b"b.cine"]), "1"),
                                     ("frames", np.array([100, 250]), "frame"),
                                     ("beta", np.array([1.5, 1.7]), "1"),
                                     ("k_gap", np.array([0.3, np.nan]), "1/mm")):
                g.create_dataset(name, data=data).attrs["units"] = unit
            g["beta"].attrs["description"] = "velocity tail exponent"
        tab = vibra.campaign(d)
        self.assertEqual(list(tab.columns), ["video", "k_gap", "beta", "frames"])
        self.assertEqual(tab.attrs["descriptions"], {"beta": "velocity tail exponent"})
        self.assertEqual(tab.attrs["schema"], "vibra-campaign")
        self.assertEqual(len(tab), 2)
        self.assertEqual(list(tab["video"]), ["a.cine", "b.cine"])
        np.testing.assert_array_equal(tab["frames"], [100, 250])
        self.assertEqual(tab.attrs["units"]["k_gap"], "1/mm")
        self.assertTrue(np.isnan(tab["k_gap"][1]))
        pd.DataFrame({"video": ["a.cine"], "beta": [1.5]}).to_csv(os.path.join(d, "campaign.csv"), index=False)
        csv = vibra.campaign(os.path.join(d, "campaign.csv"))
        self.assertEqual(list(csv.columns), ["video", "beta"])
        with self.assertRaisesRegex(FileNotFoundError, "no campaign.h5 or campaign.csv"):
            vibra.campaign(SCRATCH)
        other = os.path.join(d, "other.h5")
        with h5py.File(other, "w") as f:
            f.attrs["schema"] = "vibra-results"
        with self.assertRaisesRegex(ValueError, "other.h5: not a vibra-campaign file"):
            vibra.campaign(other)


if __name__ == "__main__":
    unittest.main(verbosity=2)
