# SPDX-License-Identifier: GPL-3.0-or-later
"""One self-contained HTML page for a results file (``vibra analyze``) or a batch output directory.

    /usr/bin/python3 -m vibra.report results.h5 -o report.html     # or: vibra report results.h5 -o report.html
    /usr/bin/python3 -m vibra.report batch_out/ -o report.html      # campaign table + every results file in it

The page holds, in this order: the provenance (the results file and its SHA-256, the command line,
the vibra version, the input trajectory file with its recorded checksum checked against the file as
it is now, the input's own source, units, frame rate, scale, geometry, species, skipped analyses);
the key numbers with their uncertainties; the per-frame tracking diagnostics when the input
trajectory file has them (a figure and a summary table); every figure of vibra.figures; the
parameters and scalar results of every analysis. Figures are PNG embedded as base64 ``data:`` URIs,
the style sheet is inline, there is no script and no external resource: the file can be mailed or
archived alone. Written atomically (temporary file + rename). Layout notes: docs/python.md.
"""
import argparse
import base64
import datetime
import hashlib
import html
import io
import math
import os
import struct
import sys
import tempfile

import numpy as np

from . import figures as _figures
from .figures import style as _style
from .results import Results, campaign, load_results
from .trajectories import frame_table

# Headline scalars (analysis, attribute, words, unit template): L = length unit, T = time unit of the
# input. Shown with their uncertainty when the file has one (X_err, X_sigma, X_ci_low/high).
KEY_NUMBERS = [
    ("velocity_distribution", "beta", "velocity-tail exponent β", "1"),
    ("velocity_distribution", "beta_small", "β, small", "1"),
    ("velocity_distribution", "beta_large", "β, large", "1"),
    ("velocity_distribution", "kurtosis", "velocity kurtosis", "1"),
    ("velocity_distribution", "rms_velocity", "r.m.s. velocity", "L/T"),
    ("kgap", "k_gap", "k-gap", "1/L"),
    ("kgap", "c", "transverse sound speed c (k-gap fit)", "L/T"),
    ("kgap", "tau", "relaxation time τ (k-gap fit)", "T"),
    ("kgap", "c_l", "longitudinal sound speed", "L/T"),
    ("tvdos", "c_t", "transverse sound speed (tvdos)", "L/T"),
    ("tvdos", "c_l", "longitudinal sound speed (tvdos)", "L/T"),
    ("gr", "r_peak", "first peak of g(r)", "L"),
    ("gr", "g_peak", "g(r) at the first peak", "1"),
    ("sk", "k_peak", "first peak of S(k)", "1/L"),
    ("psi6", "psi6_global_mean", "global bond order |⟨ψ6⟩|", "1"),
    ("voronoi", "phi_mean", "packing fraction (Voronoi)", "1"),
    ("number_fluctuations", "exponent", "number-fluctuation exponent", "1"),
    ("msd", "sigma_loc", "localisation noise σ_loc", "L"),
    ("fs", "tau_alpha", "α-relaxation time τ_α", "T"),
    ("temperature", "ratio_mean", "temperature ratio large/small", "1"),
]
_ERR_SUFFIXES = ("_err", "_sigma", "_stderr")
_SPECIES_SUFFIXES = ("_small_small", "_small_large", "_large_large", "_small", "_large", "_mass")

CSS = """
body { font-family: sans-serif; margin: 2em auto; max-width: 1100px; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; border-bottom: 1px solid #ccc; margin-top: 2em; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.9em; word-break: break-all; }
figure { display: inline-block; margin: 0.5em; vertical-align: top; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
.ok { color: #070; } .bad { color: #b00; } .note { color: #555; font-size: 0.9em; }
"""


def sha256(path, block=1 << 20):
    """'sha256:<hex>' of a file, as vibra records checksums."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            b = f.read(block)
            if not b:
                break
            h.update(b)
    return "sha256:" + h.hexdigest()


def fmt(x, digits=4):
    """A number for the page: integers as they are, floats to `digits` significant digits."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return "not determined (NaN)"
        return f"{x:.{digits}g}"
    if isinstance(x, np.ndarray):
        if x.size > 8:
            return f"array of {x.size}"
        return "[" + ", ".join(fmt(v, digits) for v in x.ravel()) + "]"
    if isinstance(x, (list, tuple)):
        if len(x) > 8:
            return f"list of {len(x)}"
        return ", ".join(fmt(v, digits) for v in x)
    return str(x)


def unit_of(template, meta):
    """'L/T' with the input's length and time units ('1' stays '1')."""
    if template == "1":
        return "1"
    L, T = meta.get("length_unit", "L"), meta.get("time_unit", "T")
    u = template.replace("L", "\0").replace("T", T).replace("\0", L)
    return _style.pretty_unit(u)


def key_numbers(res):
    """[(analysis, attribute, words, value, err, ci, unit)] of the headline scalars present."""
    out = []
    for name, attr, words, tmpl in KEY_NUMBERS:
        a = res.get(name)
        if a is None or attr not in a.attrs:
            continue
        v = a.value(attr)
        out.append((name, attr, words, v.value, v.err, v.ci, unit_of(tmpl, res.meta)))
    return out


def uncertain_attrs(res):
    """Every other scalar attribute with an uncertainty in the file (X next to X_err/X_sigma/
    X_stderr or X_ci_low/X_ci_high): [(analysis path, attribute, value)]."""
    listed = {(n, a) for n, a, *_ in KEY_NUMBERS}
    out = []

    def walk(path, a):
        for k, v in a.attrs.items():
            if not isinstance(v, (int, float, np.integer, np.floating)) or (path, k) in listed:
                continue
            base, suf = k, ""
            for s in _SPECIES_SUFFIXES:
                if k.endswith(s) and k != s:
                    base, suf = k[:-len(s)], s
                    break
            if base.endswith(_ERR_SUFFIXES) or "_ci_" in base:
                continue
            has = any(base + e + suf in a.attrs for e in _ERR_SUFFIXES) or \
                (base + "_ci_low" + suf in a.attrs and base + "_ci_high" + suf in a.attrs)
            if has:
                out.append((path, k, a.value(k)))
        for g, sub in a.groups.items():
            walk(f"{path}/{g}", sub)

    for name in res.keys():
        walk(name, res[name])
    return out


def png_data_uri(fig, dpi):
    """(data: URI, width, height) of the figure as PNG (rendered under vibra's style)."""
    import matplotlib
    buf = io.BytesIO()
    with matplotlib.rc_context(_style.RC):
        fig.savefig(buf, format="png", dpi=dpi)
    png = buf.getvalue()
    w, h = struct.unpack(">II", png[16:24])  # the IHDR chunk: the size as written
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii"), w, h


def img_tag(fig, dpi, caption):
    uri, w, h = png_data_uri(fig, dpi)
    e = html.escape
    return (f'<figure><img src="{uri}" width="{w}" height="{h}" alt="{e(caption)}">'
            f'<figcaption>{e(caption)}</figcaption></figure>')


def table(rows, header=None, num_cols=()):
    e = html.escape
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{e(str(h))}</th>" for h in header) + "</tr>")
    for r in rows:
        cells = []
        for i, c in enumerate(r):
            cls = ' class="num"' if i in num_cols else ""
            cells.append(f"<td{cls}>{c}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def resolve_input(results_path, input_path):
    """The results file's input trajectory file: as recorded, else relative to the results file."""
    if not input_path:
        return None
    if os.path.isabs(input_path):
        return input_path if os.path.exists(input_path) else None
    for base in (os.getcwd(), os.path.dirname(os.path.abspath(results_path))):
        p = os.path.join(base, input_path)
        if os.path.exists(p):
            return p
    return None


# ------------------------------------------------------------------------------------------- sections

def provenance_section(res, trajectories):
    e = html.escape
    a, m = res.attrs, res.meta
    rows = [
        ("results file", f"<code>{e(res.path)}</code>"),
        ("results SHA-256", f"<code>{e(sha256(res.path))}</code>"),
        ("created", e(str(a.get("created", "")))),
        ("vibra version", e(str(a.get("vibra_version", "")))),
        ("command line", f"<code>{e(str(a.get('parameters', '')))}</code>"),
    ]
    recorded = str(a.get("input_checksum", ""))
    rows.append(("input trajectory file", f"<code>{e(str(a.get('input_path', '')))}</code>"))
    if trajectories is None:
        status = '<span class="bad">not found: its checksum and diagnostics cannot be checked</span>'
    else:
        now = sha256(trajectories)
        status = (f'<span class="ok">matches the file {e(trajectories)}</span>' if now == recorded else
                  f'<span class="bad">differs from the file {e(trajectories)} ({e(now)}): '
                  'it changed after the analysis</span>')
    rows.append(("input checksum", f"<code>{e(recorded)}</code><br>{status}"))
    src = [(k, m.get(k)) for k in ("source_file", "source_checksum", "source_parameters", "source_vibra_version")]
    for k, v in src:
        if v:
            rows.append((f"input's {k.replace('_', ' ')}", f"<code>{e(str(v))}</code>"))
    L, T = m.get("length_unit", "?"), m.get("time_unit", "?")
    rows.append(("units", f"length {e(L)}, time {e(T)}"))
    if "frame_interval" in m:
        fi = float(m["frame_interval"])
        rate = f" ({fmt(1 / fi)} frames/s)" if T == "s" and fi > 0 else ""
        rows.append(("frame interval", f"{fmt(fi)} {e(T)}{rate}"))
    if "px_per_mm" in m:
        rows.append(("scale", f"{fmt(m['px_per_mm'])} px/mm"))
    if m.get("image_width"):
        rows.append(("image size", f"{fmt(m['image_width'])} × {fmt(m.get('image_height', 0))} px"))
    geo = str(m.get("geometry", ""))
    if geo:
        extra = m.get("geometry_bounds", m.get("geometry_circle"))
        rows.append(("geometry", e(geo) + (f" {fmt(extra)} {e(L)}" if extra is not None else "")))
    names = m.get("species_names")
    if names:
        d = m.get("species_diameters")
        ds = f"; diameters {fmt(d)} {e(L)}" if d is not None else "; diameters unknown"
        rows.append(("species", e(", ".join(map(str, names if isinstance(names, list) else [names]))) + ds))
    for k, words in (("drive_frequency_hz", "drive frequency [Hz]"), ("drive_gamma", "drive Γ")):
        if k in m:
            rows.append((words, fmt(m[k])))
    if res.skipped:
        rows.append(("skipped analyses", "<br>".join(f"{e(k)}: {e(v)}" for k, v in res.skipped.items())))
    import matplotlib
    rows.append(("report", f"vibra.report (Python {e(sys.version.split()[0])}, numpy {e(np.__version__)}, "
                           f"matplotlib {e(matplotlib.__version__)}), "
                           f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}"))
    return "<h2>Provenance</h2>\n" + table([(e(k), v) for k, v in rows])


def value_cell(value, err, ci):
    s = fmt(value)
    if err is not None and np.isfinite(err):
        s += f" ± {fmt(err, 2)}"
    if ci is not None:
        s += f" (CI {fmt(ci[0])} … {fmt(ci[1])})"
    return s


def key_numbers_section(res):
    e = html.escape
    rows = [(e(words), value_cell(v, err, ci), e(unit), f"<code>{e(name)}.{e(attr)}</code>")
            for name, attr, words, v, err, ci, unit in key_numbers(res)]
    for path, attr, val in uncertain_attrs(res):
        rows.append((e(attr.replace("_", " ")), value_cell(val.value, val.err, val.ci), "",
                     f"<code>{e(path)}.{e(attr)}</code>"))
    if not rows:
        return "<h2>Key numbers</h2>\n<p class=\"note\">none of the headline results is in this file.</p>"
    conf = res.get("velocity_distribution")
    note = ""
    if conf is not None and "confidence" in conf.attrs:
        note = (f'<p class="note">CI: bootstrap confidence interval at the level the file records '
                f'({fmt(conf.attrs["confidence"])}); ± one standard error.</p>')
    return ("<h2>Key numbers</h2>\n" + table(rows, ["quantity", "value", "unit", "attribute"], num_cols=(1,)) + note)


def diagnostics_section(trajectories, dpi):
    """Per-frame counters of a tracked file (/diagnostics) as a figure and a summary table."""
    if trajectories is None:
        return ""
    try:
        ft = frame_table(trajectories)
    except (OSError, ValueError):
        return ""
    skip = {"frame", "t", "frame_time", "timestep", "image_number"}
    cols = [c for c in ft.columns if c not in skip]
    if len(cols) <= 1:  # only n_rows: not a tracked file
        return ""
    if "detections" in cols and np.array_equal(ft["detections"], ft["n_rows"]):
        cols.remove("n_rows")  # the same numbers twice
    fig = diagnostics_figure(ft, cols)
    e = html.escape
    units = ft.attrs.get("units", {})
    rows = []
    for c in cols:
        v = ft[c].to_numpy()
        rows.append((e(c), e(_style.pretty_unit(units.get(c, ""))), fmt(int(v.min())), fmt(float(np.median(v))),
                     fmt(int(v.max())), fmt(int(v.sum()))))
    return ("<h2>Tracking diagnostics per frame</h2>\n" + img_tag(fig, dpi, "tracking diagnostics per frame") +
            table(rows, ["counter", "unit", "min", "median", "max", "total"], num_cols=(2, 3, 4, 5)))


@_style.styled
def diagnostics_figure(ft, cols):
    fig, ax = _style.figure(7.0, 3.6)
    for c in cols:
        ax.plot(ft["frame"], ft[c], label=c.replace("_", " "), drawstyle="steps-mid")
    ax.set_xlabel("frame")
    ax.set_ylabel(_style.label("count per frame", "1"))
    ax.set_title("Tracking diagnostics")
    ax.legend(ncol=3)
    return fig


def figures_section(res, dpi):
    errors = []
    figs = _figures.make_all(res, errors)
    parts = ["<h2>Figures</h2>"]
    for name, fig in figs.items():
        parts.append(img_tag(fig, dpi, name.replace("_", " ")))
    if not figs:
        parts.append('<p class="note">no figure applies to this file.</p>')
    for err in errors:
        parts.append(f'<p class="bad">figure {html.escape(err)}</p>')
    return "\n".join(parts), len(figs), errors


def parameters_section(res):
    e = html.escape
    parts = ["<h2>Parameters and scalar results of each analysis</h2>"]

    def rows_of(a):
        return [(f"<code>{e(k)}</code>", e(fmt(v))) for k, v in sorted(a.attrs.items())]

    for name in res.keys():
        a = res[name]
        body = table(rows_of(a), ["attribute", "value"])
        for g, sub in a.groups.items():
            body += f"<h3>{e(name)}/{e(g)}</h3>" + table(rows_of(sub), ["attribute", "value"])
        parts.append(f"<details><summary><b>{e(name)}</b> ({len(a.attrs)} attributes)</summary>{body}</details>")
    return "\n".join(parts)


def campaign_section(df):
    e = html.escape
    units = df.attrs.get("units", {})
    header = [f"{c} [{_style.pretty_unit(units[c])}]" if units.get(c) else c for c in df.columns]
    rows = [[e(fmt(v)) for v in r] for r in df.itertuples(index=False)]
    return (f"<h2>Campaign</h2>\n<p>{len(df)} rows from <code>{e(str(df.attrs.get('path', '')))}</code></p>" +
            table(rows, header))


def results_sections(res, dpi, trajectories=None, heading=None):
    """The sections of one results file; returns (html, n_figures, figure errors)."""
    if trajectories is None:
        trajectories = resolve_input(res.path, str(res.attrs.get("input_path", "")))
    figs, n, errors = figures_section(res, dpi)
    body = "\n".join(s for s in (provenance_section(res, trajectories), key_numbers_section(res),
                                 diagnostics_section(trajectories, dpi), figs, parameters_section(res)) if s)
    if heading:
        body = f"<h2 style=\"border:none\">{html.escape(heading)}</h2>\n" + body.replace("<h2>", "<h3>").replace("</h2>", "</h3>")
    return body, n, errors


def page(title, body):
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head>\n<body>\n"
            f"<h1>{html.escape(title)}</h1>\n{body}\n</body></html>\n")


def is_results_file(path):
    import h5py
    try:
        with h5py.File(path, "r") as f:
            v = f.attrs.get("schema", b"")
            return (v.decode() if isinstance(v, bytes) else str(v)) == "vibra-results"
    except OSError:
        return False


def build(inp, dpi=90, trajectories=None):
    """(html, n_figures, errors) for a results file or a batch directory."""
    if os.path.isdir(inp):
        parts, n, errors = [], 0, []
        try:
            parts.append(campaign_section(campaign(inp)))
        except FileNotFoundError:
            pass
        found = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(inp) for f in fs
                       if f.endswith(".h5") and is_results_file(os.path.join(dp, f)))
        if not parts and not found:
            raise ValueError(f"{inp}: no campaign table and no results file (vibra analyze) in it")
        for p in found:
            body, k, errs = results_sections(load_results(p), dpi, heading=os.path.relpath(p, inp))
            parts.append(body)
            n += k
            errors += [f"{p}: {x}" for x in errs]
        return page(f"vibra report — {inp}", "\n".join(parts)), n, errors
    res = load_results(inp)
    body, n, errors = results_sections(res, dpi, trajectories)
    return page(f"vibra report — {os.path.basename(inp)}", body), n, errors


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise FileNotFoundError(f"{path}: directory {d} does not exist")
    fd, tmp = tempfile.mkstemp(dir=d, suffix=".partial")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    ap = argparse.ArgumentParser(prog="vibra report",
                                 description="One self-contained HTML page (figures embedded) for a results "
                                             "file of vibra analyze or a batch output directory.")
    ap.add_argument("input", help="results HDF5 file (vibra analyze) or batch output directory")
    ap.add_argument("-o", "--output", required=True, help="HTML file to write")
    ap.add_argument("--trajectories", help="the input trajectory file, when it is no longer where the "
                                           "results file records it (checksum check, tracking diagnostics)")
    ap.add_argument("--dpi", type=int, default=90, help="resolution of the embedded figures (default 90)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no summary line")
    a = ap.parse_args(argv)
    if a.dpi < 20 or a.dpi > 600:
        ap.error(f"--dpi {a.dpi}: must be between 20 and 600")
    if not os.path.exists(a.input):
        print(f"vibra report: error: {a.input}: no such file or directory", file=sys.stderr)
        return 1
    out_dir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(out_dir):
        print(f"vibra report: error: {a.output}: directory {out_dir} does not exist", file=sys.stderr)
        return 1
    if a.trajectories and not os.path.exists(a.trajectories):
        print(f"vibra report: error: --trajectories {a.trajectories}: no such file", file=sys.stderr)
        return 1
    try:
        text, n, errors = build(a.input, a.dpi, a.trajectories)
        write_atomic(a.output, text)
    except (OSError, ValueError, KeyError) as e:
        print(f"vibra report: error: {e}", file=sys.stderr)
        return 1
    for err in errors:
        print(f"vibra report: figure {err}", file=sys.stderr)
    if not a.quiet:
        print(f"wrote {a.output}: {n} figures, {len(text) // 1024} KiB")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
