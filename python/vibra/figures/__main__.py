# SPDX-License-Identifier: GPL-3.0-or-later
"""python3 -m vibra.figures RESULTS.h5 -o DIR"""
import sys

from . import main

sys.exit(main())
