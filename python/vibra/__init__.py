# SPDX-License-Identifier: GPL-3.0-or-later
"""vibra's files from Python (Debian's python3 with h5py, numpy, pandas; matplotlib for figures).

    export PYTHONPATH=$PWD/python          # from the repository root; then:
    import vibra
    df = vibra.load_trajectories("clip.h5")            # frame, particle, x, y, species, t, … (mm when known)
    for frame, d in vibra.iter_frames("clip.h5"): ...  # one frame at a time, bounded memory
    per_frame = vibra.frame_table("clip.h5")           # time stamps, tracking diagnostics per frame
    res = vibra.load_results("results.h5")             # res["velocity_distribution"].value("beta")
    tab = vibra.campaign("batch_out/")                 # `vibra batch` table, one row per video
    tp = vibra.to_trackpy(df); df2 = vibra.from_trackpy(tp, tp.attrs)
    import vibra.figures; vibra.figures.save_all("results.h5", "figures/")

See docs/python.md.
"""
from .results import Analysis, Results, Value, campaign, load_results
from .trajectories import frame_table, from_trackpy, iter_frames, load_trajectories, read_meta, to_trackpy

__all__ = ["load_trajectories", "iter_frames", "read_meta", "frame_table", "to_trackpy", "from_trackpy",
           "load_results", "campaign", "Results", "Analysis", "Value"]
