#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Baseline for bench_currents: a straightforward vectorised numpy direct sum of the currents
j(k,t) = sum_i v_i exp(i k.r_i) over the same k set, longitudinal/transverse projections, and the
FFT time correlation per k. Prints the wall time in seconds (first line).

Usage: currents_baseline.py DIR N FRAMES NK   (DIR holds frames.f64 = [T][4][N], k.f64 = kx, ky)
"""
import sys
import time

import numpy as np


def main():
    d, n, t_frames, nk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    fr = np.fromfile(d + "/frames.f64").reshape(t_frames, 4, n)
    k = np.fromfile(d + "/k.f64").reshape(2, nk)
    kx, ky = k[0], k[1]
    kabs = np.hypot(kx, ky)
    t0 = time.perf_counter()
    jl = np.empty((nk, t_frames), complex)
    jt = np.empty((nk, t_frames), complex)
    for t in range(t_frames):
        x, y, vx, vy = fr[t]
        vx = vx - vx.mean()
        vy = vy - vy.mean()
        ph = np.exp(1j * (np.outer(x, kx) + np.outer(y, ky)))  # N x K
        jx = vx @ ph
        jy = vy @ ph
        jl[:, t] = (kx * jx + ky * jy) / kabs
        jt[:, t] = (-ky * jx + kx * jy) / kabs
    p = 2 * t_frames
    for j in (jl, jt):
        f = np.fft.fft(j, p, axis=1)
        c = np.fft.ifft(np.abs(f) ** 2, axis=1)[:, : t_frames // 2].real
        c /= (t_frames - np.arange(t_frames // 2)) * n
    print(time.perf_counter() - t0)


if __name__ == "__main__":
    main()
