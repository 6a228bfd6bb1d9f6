#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The notebooks (notebooks/*.ipynb) are committed without outputs and run headless, top to bottom,
with Debian's jupyter-nbconvert (--execute, python3 kernel): every code cell runs, none raises (their
assert cells check the numbers they show).

Usage: test_notebooks.py VIBRA_CLI SOURCE_DIR SCRATCH_DIR   (run by CTest: python_notebooks)
"""
import glob
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import support  # noqa: E402

support.require("numpy", "h5py", "pandas", "matplotlib", "nbformat", "nbconvert", "ipykernel")
NBCONVERT = "/usr/bin/jupyter-nbconvert"
if not os.path.exists(NBCONVERT):
    if os.environ.get("CI") == "true":
        sys.exit(f"FAIL: {NBCONVERT} missing (Debian package jupyter-nbconvert must be installed in CI)")
    print(f"SKIP: {NBCONVERT} missing (Debian package jupyter-nbconvert)")
    sys.exit(support.SKIP)
VIBRA, SRC, SCRATCH = support.args()

import nbformat  # noqa: E402

NOTEBOOKS = sorted(glob.glob(os.path.join(SRC, "notebooks", "*.ipynb")))
NEEDS_TRACKING = {"tracking_tour.ipynb"}


class Notebooks(unittest.TestCase):
    def test_the_three_tours_exist(self):
        names = {os.path.basename(p) for p in NOTEBOOKS}
        self.assertTrue({"tracking_tour.ipynb", "dynamics_tour.ipynb", "modes_tour.ipynb"} <= names, names)

    def test_committed_without_outputs(self):
        for path in NOTEBOOKS:
            nb = nbformat.read(path, as_version=4)
            nbformat.validate(nb)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    self.assertEqual(cell.outputs, [], f"{path}: a cell has outputs (strip them before committing)")
                    self.assertIsNone(cell.execution_count, path)


def make_run_test(path):
    name = os.path.basename(path)

    def test(self):
        if name in NEEDS_TRACKING and not support.has_command(VIBRA, "track"):
            self.skipTest("vibra built without tracking (no `vibra track`)")
        out = os.path.join(SCRATCH, name[:-6])
        os.makedirs(out, exist_ok=True)
        env = dict(os.environ, VIBRA=VIBRA, VIBRA_NOTEBOOK_OUT=out, PYTHONPATH=os.path.join(SRC, "python"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1", MPLBACKEND="module://matplotlib_inline.backend_inline")
        r = subprocess.run([NBCONVERT, "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
                            "--ExecutePreprocessor.kernel_name=python3", "--output-dir", out, path],
                           env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"{name}:\n{r.stdout}\n{r.stderr[-4000:]}")
        nb = nbformat.read(os.path.join(out, name), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        self.assertTrue(code)
        for c in code:
            self.assertIsNotNone(c.execution_count, f"{name}: a cell did not run")
            for o in c.outputs:
                self.assertNotEqual(o.output_type, "error", f"{name}: {o.get('ename')}: {o.get('evalue')}")
        images = sum("image/png" in o.get("data", {}) for c in code for o in c.outputs)
        self.assertGreaterEqual(images, 3, f"{name}: figures expected")

    return test


for p in NOTEBOOKS:
    setattr(Notebooks, "test_runs_" + os.path.basename(p)[:-6], make_run_test(p))


if __name__ == "__main__":
    unittest.main(verbosity=2)
