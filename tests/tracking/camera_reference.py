#!/usr/bin/python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Second, independent decode of the real camera files for tests/tracking/test_camera_formats.cpp.

Written with numpy/struct/xml.etree only (no vibra code): prints one line per file and per checked
frame, "key=value" tokens separated by spaces, and writes each checked frame's pixels as raw
little-endian uint16 (top row first) into OUTDIR so the C++ test can compare every pixel.

usage: camera_reference.py DATA_DIR OUTDIR
"""
import os
import struct
import sys
import xml.etree.ElementTree as ET

import numpy as np


def emit(kind, **kv):
    print(kind + " " + " ".join(f"{k}={v}" for k, v in kv.items()))


def frame_lines(name, frames, outdir):
    for k, img in frames:
        raw = os.path.join(outdir, f"{name}.{k}.u16")
        img.astype("<u2").tofile(raw)
        emit("frame", file=name, index=k, min=int(img.min()), max=int(img.max()),
             sum=int(img.astype(np.int64).sum()), raw=raw)


def cine(path, outdir):
    d = open(path, "rb").read()
    (sig, _hs, _comp, _ver, _fmi, _tot, first_no, count, off_bi, off_setup, off_offs, trig) = \
        struct.unpack_from("<2sHHHiIiIIIIQ", d, 0)
    assert sig == b"CI"
    bi = struct.unpack_from("<IiiHHIIiiII", d, off_bi)
    w, h, bits = bi[1], bi[2], bi[4]
    setup_len = struct.unpack_from("<H", d, off_setup + 142)[0]
    frame_rate = struct.unpack_from("<I", d, off_setup + 768)[0]
    real_bpp = struct.unpack_from("<I", d, off_setup + 896)[0]
    # tagged blocks: look for the per-image TIME64 block (type 1002)
    stamps = None
    p = off_setup + setup_len
    while p + 8 <= off_offs:
        size, typ = struct.unpack_from("<IH", d, p)
        if size < 8:
            break
        if typ == 1002:
            stamps = np.frombuffer(d, "<u8", count, p + 8)
        p += size
    sec = (stamps >> 32).astype(np.int64)
    frac = (stamps & 0xFFFFFFFF).astype(np.int64)
    span = float(sec[-1] - sec[0]) + float(frac[-1] - frac[0]) / 2**32  # exact difference, no 1e9 s offset
    fps = (count - 1) / span
    offs = np.frombuffer(d, "<u8", count, off_offs)
    assert bits == 16
    frames = []
    for k in sorted({0, 1, count - 1}):
        o = int(offs[k])
        ann = struct.unpack_from("<I", d, o)[0]
        size = struct.unpack_from("<I", d, o + ann - 4)[0]
        img = np.frombuffer(d, "<u2", size // 2, o + ann).reshape(abs(h), w)
        if h > 0:
            img = img[::-1]  # bottom-up rows
        frames.append((k, img))
    emit("file", file=os.path.basename(path), n_frames=count, width=w, height=abs(h), bit_depth=real_bpp,
         fps=f"{fps:.6f}", fps_setup=frame_rate, first_image=first_no)
    frame_lines(os.path.basename(path), frames, outdir)


def photron_fields(header_path):
    raw = open(header_path, "rb").read()
    if header_path.endswith(".cihx"):
        xml = raw[raw.index(b"<?xml"):raw.index(b"</cih>") + 6]  # binary preamble / trailer cut off
        root = ET.fromstring(xml.decode("utf-8"))
        g = lambda q: root.find(q).text.strip()
        return dict(w=int(g("imageDataInfo/resolution/width")), h=int(g("imageDataInfo/resolution/height")),
                    n=int(g("frameInfo/totalFrame")), bit=int(g("imageDataInfo/colorInfo/bit")),
                    eff=int(g("imageDataInfo/effectiveBit/depth")), fps=float(g("recordInfo/recordRate")),
                    start=int(g("frameInfo/startFrame")))
    kv = {}
    for line in raw.decode("latin-1").splitlines():
        if " : " in line:
            k, v = line.split(" : ", 1)
            kv.setdefault(k.strip(), v.strip())
    return dict(w=int(kv["Image Width"]), h=int(kv["Image Height"]), n=int(kv["Total Frame"]),
                bit=int(kv["Color Bit"]), eff=int(kv["EffectiveBit Depth"]), fps=float(kv["Record Rate(fps)"]),
                start=int(kv["Start Frame"]))


def mraw(header_path, outdir):
    f = photron_fields(header_path)
    name = os.path.basename(header_path)
    emit("file", file=name, n_frames=f["n"], width=f["w"], height=f["h"], bit_depth=f["eff"],
         fps=f"{f['fps']:.6f}", color_bit=f["bit"], first_image=f["start"])
    mraw_path = os.path.splitext(header_path)[0] + ".mraw"
    if not os.path.exists(mraw_path):
        return
    data = np.fromfile(mraw_path, np.uint8)
    npx = f["w"] * f["h"]
    if f["bit"] == 16:
        allpx = data.view("<u2")
    elif f["bit"] == 12:
        b = data.reshape(-1, 3).astype(np.uint16)
        allpx = np.empty(b.shape[0] * 2, np.uint16)
        allpx[0::2] = (b[:, 0] << 4) | (b[:, 1] >> 4)
        allpx[1::2] = ((b[:, 1] & 0x0F) << 8) | b[:, 2]
    else:
        allpx = data
    stack = allpx.reshape(f["n"], f["h"], f["w"])
    frame_lines(os.path.basename(mraw_path), [(k, stack[k]) for k in sorted({0, 1, f["n"] - 1})], outdir)


def main():
    data, out = sys.argv[1], sys.argv[2]
    cine(os.path.join(data, "cine_781.cine"), out)
    mraw(os.path.join(data, "ball_12bit.cihx"), out)
    mraw(os.path.join(data, "beam.cihx"), out)
    mraw(os.path.join(data, "sample_60k_16bit.cih"), out)


if __name__ == "__main__":
    main()
