# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared by tests/python/test_*.py: the command line (VIBRA_CLI SOURCE_DIR SCRATCH), the module
check (exit 77 = CTest skip, but a failure under CI=true), running the CLI."""
import importlib
import os
import shutil
import subprocess
import sys

SKIP = 77


def require(*modules):
    """Imports `modules`; a missing one skips the test (exit 77), or fails it under CI=true."""
    for m in modules:
        try:
            importlib.import_module(m)
        except ImportError as e:
            if os.environ.get("CI") == "true":
                print(f"FAIL: {e} (Debian's python3 modules must be installed in CI: see .ci/setup)")
                sys.exit(1)
            print(f"SKIP: {e}")
            sys.exit(SKIP)


def args():
    """(vibra CLI, source dir, fresh scratch dir) from argv; removes them from argv for unittest."""
    if len(sys.argv) < 4:
        sys.exit(f"usage: {sys.argv[0]} VIBRA_CLI SOURCE_DIR SCRATCH_DIR")
    vibra, src, scratch = (os.path.abspath(p) for p in sys.argv[1:4])
    del sys.argv[1:4]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    sys.path.insert(0, os.path.join(src, "python"))  # the package under test, whatever PYTHONPATH says
    return vibra, src, scratch


def run(vibra, *argv):
    """Runs the CLI; raises with its output when it fails."""
    r = subprocess.run([vibra, *map(str, argv)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"vibra {' '.join(map(str, argv))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def has_command(vibra, name):
    out = subprocess.run([vibra, "--help"], capture_output=True, text=True).stdout
    return any(line.strip().startswith(name + " ") or line.strip() == name for line in out.splitlines())
