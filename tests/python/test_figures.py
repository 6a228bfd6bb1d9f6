#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""vibra.figures on results of every analysis: checked on the matplotlib objects, not on pixels.

Usage: test_figures.py VIBRA_CLI SOURCE_DIR SCRATCH_DIR   (run by CTest: python_figures)
Every axis label ends in "[unit]", every image / colour-mapped collection has a colour bar, the
uncertainties are drawn (β CI, k-gap, dispersion error bars), guides have the slopes they claim,
image data keep y down, absent or skipped analyses give no figure and no error.
"""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

support.require("numpy", "h5py", "pandas", "matplotlib")
VIBRA, SRC, SCRATCH = support.args()

import matplotlib  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402

import vibra  # noqa: E402
import vibra.figures as vf  # noqa: E402

UNIT = re.compile(r"\[[^\[\]]+\]$")
ENV = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))


def colorbar_axes(fig):
    return {m.colorbar.ax for ax in fig.axes for m in list(ax.images) + list(ax.collections)
            if getattr(m, "colorbar", None) is not None} | \
           {ax for ax in fig.axes if hasattr(ax, "_colorbar")}


def legend_texts(ax):
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


class Figures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.sim = os.path.join(SCRATCH, "sim.h5")
        cls.res_path = os.path.join(SCRATCH, "res.h5")
        support.run(VIBRA, "simulate", "-o", cls.sim, "--n-small", 150, "--n-large", 150, "--packing-fraction", 0.75,
                    "--friction", 2, "--frames", 800, "--equilibrate", 50, "--seed", 7, "-q")
        support.run(VIBRA, "analyze", cls.sim, "-o", cls.res_path, "-q")  # the default set
        support.run(VIBRA, "analyze", cls.sim, "-o", cls.res_path, "--only",
                    "field,defects,correlations,spectra,evolution,covariance_vdos", "--covariance-vdos-force", 1, "-q")
        cls.res = vibra.load_results(cls.res_path)
        cls.figs = vf.make_all(cls.res)  # errors raise

    def test_every_analysis_has_its_figures(self):
        expected = {"gr", "sk", "psi6", "voronoi", "clusters", "number_fluctuations", "msd", "alpha2", "van_hove",
                    "vacf", "vdos", "fs", "velocity_distribution", "temperature", "c_t_kw", "c_l_kw", "dispersion",
                    "reduced_vdos", "tvdos_particle_map", "covariance_vdos", "collective_field_defects",
                    "collective_evolution", "collective_spectra_time", "collective_spectra_lag", "collective_flux"}
        self.assertEqual(set(self.figs), expected)

    def test_labels_have_units_and_maps_have_colour_bars(self):
        n_bars = 0
        for name, fig in self.figs.items():
            bars = colorbar_axes(fig)
            for ax in fig.axes:
                if ax in bars:
                    lab = ax.get_ylabel() or ax.get_xlabel()
                    self.assertRegex(lab, UNIT, f"{name}: colour bar label {lab!r}")
                    continue
                self.assertRegex(ax.get_xlabel(), UNIT, f"{name}: x label {ax.get_xlabel()!r}")
                self.assertRegex(ax.get_ylabel(), UNIT, f"{name}: y label {ax.get_ylabel()!r}")
                for m in list(ax.images) + list(ax.collections):
                    if isinstance(m, matplotlib.cm.ScalarMappable) and m.get_array() is not None:
                        self.assertIsNotNone(getattr(m, "colorbar", None), f"{name}: {type(m).__name__} without colour bar")
                        n_bars += 1
            self.assertTrue(any(ax.get_title() for ax in fig.axes), f"{name}: no title")
        self.assertGreaterEqual(n_bars, 4)  # C_T, C_L maps, particle map, displacement field

    def test_titles_are_words(self):
        for name, fig in self.figs.items():
            for ax in fig.axes:
                t = ax.get_title()
                for internal in ("cos^2", "hann:", "_correction", "t_max", ": cos"):
                    self.assertNotIn(internal, t, f"{name}: title {t!r}")
        self.assertEqual(self.figs["vdos"].axes[0].get_title(),
                         "Vibrational density of states (Welch estimator, Hann window)")

    def test_vdos_figure_draws_the_values_as_computed(self):
        """D(ω) and D(ω)/ω as written, never |D/ω|: the default (Welch) VDOS is positive (log
        axis); the unbiased VACF transform has negative bins, drawn on a symmetric-log axis."""
        g = self.res["vdos"]
        w, red = g["omega"], g["vdos_reduced"]
        self.assertTrue((g["vdos"] >= 0).all())
        ax = self.figs["vdos"].axes[1]
        self.assertEqual(ax.get_yscale(), "log")
        line = [ln for ln in ax.get_lines() if ln.get_label() == "all"][0]
        ok = (w > 0) & np.isfinite(red)
        np.testing.assert_array_equal(line.get_ydata(), red[ok])
        path = os.path.join(SCRATCH, "vdos_unbiased.h5")
        support.run(VIBRA, "analyze", self.sim, "-o", path, "--only", "vdos", "--vdos-estimator", "unbiased", "-q")
        u = vibra.load_results(path)["vdos"]
        self.assertTrue((u["vdos_reduced"][1:] < 0).any())  # the trap the default no longer has
        fig = vf.dynamics.vdos(vibra.load_results(path))
        ax = fig.axes[1]
        self.assertEqual(ax.get_yscale(), "symlog")
        y = [ln for ln in ax.get_lines() if ln.get_label() == "all"][0].get_ydata()
        self.assertLess(y.min(), 0)
        self.assertIn("negative values present", ax.get_title())

    def test_msd_guides_have_slopes_two_and_one(self):
        ax = self.figs["msd"].axes[0]
        lines = {ln.get_label(): ln for ln in ax.get_lines()}
        for lab, slope in (("ballistic ∝ t²", 2.0), ("diffusive ∝ t", 1.0)):
            x, y = lines[lab].get_data()
            self.assertGreater(len(x), 2)
            np.testing.assert_allclose(np.diff(np.log(y)) / np.diff(np.log(x)), slope, rtol=1e-9)
        m = self.res["msd"]
        np.testing.assert_allclose(lines["diffusive ∝ t"].get_ydata()[-1], m["msd"][-1])
        self.assertEqual(ax.get_xscale(), "log")

    def test_velocity_distribution_log_scale_tail_and_beta_ci(self):
        ax = self.figs["velocity_distribution"].axes[0]
        self.assertEqual(ax.get_yscale(), "log")
        a = self.res["velocity_distribution"].attrs
        texts = legend_texts(ax)
        want = f"all: β = {a['beta']:.3g} [{a['beta_ci_low']:.3g}, {a['beta_ci_high']:.3g}]"
        self.assertIn(want, texts)
        # The fitted tail of all particles: amp·exp(−(c/c0)^β) from the threshold.
        x0 = a["beta_threshold"]
        tails = [ln for ln in ax.get_lines() if ln.get_color() == "k" and ln.get_linestyle() == "-"
                 and len(ln.get_xdata()) == 100]
        self.assertTrue(tails)
        x, y = tails[0].get_data()
        self.assertAlmostEqual(abs(x[0]), x0)
        np.testing.assert_allclose(y, a["tail_amplitude"] * np.exp(-(np.abs(x) / a["c0"]) ** a["beta"]), rtol=1e-12)
        bands = [c for c in ax.collections if isinstance(c, matplotlib.collections.PolyCollection)]
        self.assertGreaterEqual(len(bands), 2)  # the CI band on both sides

    def test_dispersion_error_bars_and_kgap(self):
        ax = self.figs["dispersion"].axes[0]
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.has_yerr]
        self.assertEqual(len(bars), 3)
        self.assertRegex(ax.get_ylabel(), r"angular frequency ω \[rad/τ\]")
        kg = self.res["kgap"]
        for name in ("pole", "peak"):
            k_gap = kg[name].attrs["k_gap"]
            if np.isfinite(k_gap):
                self.assertTrue(any(t.startswith(f"{name} fit: k_gap = {k_gap:.3g}") for t in legend_texts(ax)),
                                legend_texts(ax))
        # Zero frequencies (no propagating peak) are not drawn as measurements.
        for c in bars:
            self.assertTrue(np.all(c.lines[0].get_ydata() > 0))

    def test_ct_map_has_fit_and_colour_bar(self):
        fig = self.figs["c_t_kw"]
        ax = fig.axes[0]
        meshes = [c for c in ax.collections if isinstance(c, matplotlib.collections.QuadMesh)]
        self.assertEqual(len(meshes), 1)
        self.assertIsNotNone(meshes[0].colorbar)
        cur = self.res["currents"]
        self.assertEqual(meshes[0].get_array().size, cur["c_t_kw"].size)  # every shell and frequency
        labels = [ln.get_label() for ln in ax.get_lines()]
        self.assertIn("maximum over ω", labels)
        if np.isfinite(self.res["kgap"]["pole"].attrs["c"]):
            self.assertTrue(any(lab.startswith("pole fit") for lab in labels), labels)

    def test_energy_spectra_slopes(self):
        ax = self.figs["collective_spectra_lag"].axes[0]
        sp = self.res["spectra"]
        texts = legend_texts(ax)
        for lag, s, e in zip(sp["lags"], sp["slope_mean"], sp["slope_mean_error"]):
            if np.isfinite(s):
                self.assertTrue(any(f"slope {s:.2f}" in t for t in texts), texts)

    def test_simulation_field_keeps_y_up(self):
        ax = self.figs["collective_field_defects"].axes[0]
        lo, hi = ax.get_ylim()
        self.assertLess(lo, hi)

    def test_cli_writes_every_png(self):
        out = os.path.join(SCRATCH, "cli")
        r = subprocess.run([sys.executable, "-m", "vibra.figures", self.res_path, "-o", out], env=ENV,
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        paths = r.stdout.split()
        self.assertEqual({os.path.basename(p) for p in paths}, {n + ".png" for n in self.figs})
        for p in paths:
            with open(p, "rb") as fh:
                self.assertEqual(fh.read(8), b"\x89PNG\r\n\x1a\n")

    def test_cli_errors(self):
        r = subprocess.run([sys.executable, "-m", "vibra.figures", self.sim, "-o", os.path.join(SCRATCH, "x")],
                           env=ENV, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("sim.h5: not a vibra-results file", r.stderr)
        r = subprocess.run([sys.executable, "-m", "vibra.figures", self.res_path], env=ENV, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("-o/--outdir", r.stderr)


class AbsentAndSkipped(unittest.TestCase):
    """Only what is there is drawn; an analysis skipped by `vibra analyze` is named, not an error."""

    def test_short_run(self):
        sim = os.path.join(SCRATCH, "short.h5")
        res = os.path.join(SCRATCH, "short_res.h5")
        support.run(VIBRA, "simulate", "-o", sim, "--n-small", 40, "--n-large", 40, "--frames", 60,
                    "--equilibrate", 10, "-q")
        support.run(VIBRA, "analyze", sim, "-o", res, "-q")
        loaded = vibra.load_results(res)
        self.assertIn("kgap", loaded.skipped)  # too short for the bootstrap
        figs = vf.make_all(loaded)
        for absent in ("collective_field_defects", "collective_spectra_lag", "covariance_vdos"):  # not run
            self.assertNotIn(absent, figs)
        self.assertIn("msd", figs)
        if "dispersion" in figs:  # from the currents alone: no fit drawn
            self.assertFalse(any("fit" in t for t in legend_texts(figs["dispersion"].axes[0])))
        r = subprocess.run([sys.executable, "-m", "vibra.figures", res, "-o", os.path.join(SCRATCH, "short")],
                           env=ENV, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no figure for kgap (skipped by vibra analyze", r.stderr)
        only = os.path.join(SCRATCH, "gr_only.h5")
        support.run(VIBRA, "analyze", sim, "-o", only, "--only", "gr", "-q")
        self.assertEqual(set(vf.make_all(only)), {"gr"})
        # The wrapper kept for existing scripts (.ci/demo) finds the package without PYTHONPATH.
        wrap = os.path.join(SCRATCH, "wrapper")
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        r = subprocess.run([sys.executable, os.path.join(SRC, "notebooks", "vibra_figures.py"), res, wrap],
                           env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(os.listdir(wrap)), sorted(n + ".png" for n in figs))

    def test_one_and_two_frame_inputs(self):
        """What `vibra analyze` cannot compute from 1 or 2 frames is skipped, and the figure
        script draws what is there without an error."""
        for frames in (1, 2):
            sim = os.path.join(SCRATCH, f"frames{frames}.h5")
            res = os.path.join(SCRATCH, f"frames{frames}_res.h5")
            support.run(VIBRA, "simulate", "-o", sim, "--n-small", 30, "--n-large", 30, "--frames", frames,
                        "--equilibrate", 5, "-q")
            support.run(VIBRA, "analyze", sim, "-o", res, "-q")
            loaded = vibra.load_results(res)
            self.assertIn("vdos", loaded.skipped)
            self.assertNotIn("vdos", loaded.analyses)
            errors = []
            figs = vf.make_all(loaded, errors)
            self.assertEqual(errors, [])
            self.assertIn("gr", figs)
            self.assertNotIn("vdos", figs)
            out = os.path.join(SCRATCH, f"frames{frames}_figs")
            r = subprocess.run([sys.executable, "-m", "vibra.figures", res, "-o", out], env=ENV,
                               capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("no figure for vdos (skipped by vibra analyze", r.stderr)

    def test_tracked_field_is_in_image_orientation(self):
        if not (support.has_command(VIBRA, "synth") and support.has_command(VIBRA, "track")):
            self.skipTest("vibra built without tracking (no synth/track)")
        video, tr, res = (os.path.join(SCRATCH, n) for n in ("s.avi", "s.h5", "s_res.h5"))
        support.run(VIBRA, "synth", "-o", video, "--frames", 40, "--width", 256, "--height", 256,
                    "--packing-fraction", 0.5, "--look", "dark-ring", "--seed", 3, "-q")
        support.run(VIBRA, "track", video, "-o", tr, "--radius-small", 6, "--radius-large", 8, "-q")
        support.run(VIBRA, "analyze", tr, "-o", res, "--only", "field,defects", "-q")
        loaded = vibra.load_results(res)
        self.assertEqual(loaded.meta["coordinate_convention"], "image")
        fig = vf.collective.field_defects(loaded)
        lo, hi = fig.axes[0].get_ylim()
        self.assertGreater(lo, hi)  # y grows downwards, as in the video and the overlay
        self.assertRegex(fig.axes[0].get_ylabel(), r"^y \[px\]$")
        frame = np.zeros((256, 256))
        fig = vf.collective.field_defects(loaded, background=frame)
        lo, hi = fig.axes[0].get_ylim()
        self.assertGreater(lo, hi)
        self.assertEqual(len(fig.axes[0].images), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
