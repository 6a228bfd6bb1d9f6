# SPDX-License-Identifier: GPL-3.0-or-later
"""`vibra report`: a tracked clip (synth → track → analyze) → report.html, checked as a file and in a
real browser (headless Debian chromium).

    test_report.py VIBRA_CLI SOURCE_DIR SCRATCH_DIR

File: self-contained (no script, no link, every src a data: URI, no url() in the style sheet), one
image per figure of vibra.figures plus the diagnostics figure, each a PNG of the size its tag says;
the key numbers (β with its CI and standard error, first peak of g(r)) equal the results file's
attributes; the checksums (results file; input file recorded = now; a changed input is flagged);
the diagnostics totals equal the trajectory file's counters. A batch directory with campaign.csv
gives the campaign table. Browser: no console message, every image decoded with a non-zero rendered
size (an inline probe added to a copy writes the result into the DOM, read with --dump-dom), and
the screenshot is not blank. Each browser check is first shown to fail on a page that is broken
that way. Exit 77 (skip) when chromium or a Python module is missing, except under CI=true.
"""
import base64
import hashlib
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

SKIP = 77
CHROMIUM = "/usr/bin/chromium"


def require():
    missing = []
    for m in ("h5py", "numpy", "pandas", "matplotlib"):
        try:
            __import__(m)
        except ImportError as e:
            missing.append(str(e))
    if not os.path.exists(CHROMIUM):
        missing.append(f"{CHROMIUM} not installed (Debian package chromium)")
    if missing:
        if os.environ.get("CI") == "true":
            print("FAIL: " + "; ".join(missing) + " (must be installed in CI: see .ci/setup)")
            sys.exit(1)
        print("SKIP: " + "; ".join(missing))
        sys.exit(SKIP)


if len(sys.argv) < 4:
    sys.exit(f"usage: {sys.argv[0]} VIBRA_CLI SOURCE_DIR SCRATCH_DIR")
VIBRA, SRC, SCRATCH = (os.path.abspath(p) for p in sys.argv[1:4])
del sys.argv[1:4]
require()
shutil.rmtree(SCRATCH, ignore_errors=True)
os.makedirs(SCRATCH)
sys.path.insert(0, os.path.join(SRC, "python"))

import h5py  # noqa: E402
import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402

import vibra.figures  # noqa: E402
from vibra import report  # noqa: E402


def run(*argv):
    r = subprocess.run([VIBRA, *map(str, argv)], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"vibra {' '.join(map(str, argv))} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r.stdout


def chromium(url, *flags, timeout=180):
    """Runs headless chromium on `url` with a fresh profile; returns (stdout, stderr)."""
    profile = tempfile.mkdtemp(prefix="vibra-chromium-")
    try:
        r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", f"--user-data-dir={profile}", *flags, url],
                           capture_output=True, text=True, timeout=timeout)
        return r.stdout, r.stderr
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def console_messages(path):
    """Console messages of the page (chromium logs them as CONSOLE lines with --enable-logging)."""
    shot = path + ".console.png"
    _, err = chromium("file://" + path, "--enable-logging=stderr", "--v=0", f"--screenshot={shot}",
                      "--window-size=1000,800")
    return [line for line in err.splitlines() if "CONSOLE" in line]


PROBE = """<script>window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images), bad = [];
  imgs.forEach(function (im, i) { var r = im.getBoundingClientRect();
    if (!(im.complete && im.naturalWidth > 0 && im.naturalHeight > 0 && r.width > 0 && r.height > 0)) bad.push(i); });
  var p = document.createElement("pre"); p.id = "vibra-probe";
  p.textContent = JSON.stringify({images: imgs.length, bad: bad}); document.body.appendChild(p);
});</script>"""


def image_probe(path):
    """{'images': n, 'bad': [indices]} measured by the browser on a copy of the page with the probe."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    probed = path + ".probe.html"
    with open(probed, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", PROBE + "</body>"))
    out, err = chromium("file://" + probed, "--virtual-time-budget=10000", "--dump-dom")
    m = re.search(r'<pre id="vibra-probe">(.*?)</pre>', out, re.S)
    if not m:
        raise AssertionError(f"{probed}: the probe wrote nothing (chromium stderr: {err[-2000:]})")
    return json.loads(m.group(1))


def screenshot_is_blank(path, shot):
    chromium("file://" + path, f"--screenshot={shot}", "--window-size=1280,3000", "--hide-scrollbars")
    img = matplotlib.image.imread(shot)[..., :3]
    if img.dtype != np.float32:
        img = img / 255.0
    non_white = np.mean(np.any(img < 0.9, axis=-1))
    colours = len(np.unique((img * 255).astype(np.uint8).reshape(-1, 3), axis=0))
    return non_white < 0.02 or colours < 16, (non_white, colours)


class Page(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.imgs, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "img":
            self.imgs.append(a)

    def handle_data(self, data):
        self.text.append(data)


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise AssertionError("not a PNG")
    return struct.unpack(">II", data[16:24])


class ReportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = SCRATCH
        d = lambda *p: os.path.join(SCRATCH, *p)  # noqa: E731
        cls.clip, cls.results, cls.html = d("clip.h5"), d("results.h5"), d("report.html")
        run("-q", "synth", "-o", d("clip.avi"), "--frames", "40", "--width", "256", "--height", "256",
            "--packing-fraction", "0.5", "--look", "dark-ring", "--noise", "0.05")
        run("-q", "track", d("clip.avi"), "-o", cls.clip, "--radius-small", "6", "--radius-large", "8",
            "--fps", "2000", "--px-per-mm", "10")
        run("-q", "analyze", cls.clip, "-o", cls.results)
        cls.out = run("report", cls.results, "-o", cls.html)
        with open(cls.html, encoding="utf-8") as f:
            cls.text = f.read()
        cls.page = Page()
        cls.page.feed(cls.text)
        cls.n_figures = len(vibra.figures.make_all(cls.results))

    def test_self_contained(self):
        tags = {t for t, _ in self.page.tags}
        for forbidden in ("script", "link", "iframe", "object", "embed", "base"):
            self.assertNotIn(forbidden, tags)
        for tag, a in self.page.tags:
            for k in ("src", "href", "data", "poster"):
                if k in a:
                    self.assertTrue(a[k].startswith("data:") or a[k].startswith("#"), f"<{tag} {k}={a[k][:60]}>")
        for css in re.findall(r"<style>(.*?)</style>", self.text, re.S):
            self.assertNotIn("url(", css)
            self.assertNotIn("@import", css)

    def test_every_figure_embedded_as_png_of_its_size(self):
        self.assertGreaterEqual(self.n_figures, 10)
        self.assertEqual(len(self.page.imgs), self.n_figures + 1)  # + the tracking diagnostics
        self.assertIn(f"{self.n_figures} figures", self.out)
        for a in self.page.imgs:
            self.assertTrue(a["src"].startswith("data:image/png;base64,"))
            w, h = png_size(base64.b64decode(a["src"].split(",", 1)[1]))
            self.assertGreater(w, 100)
            self.assertGreater(h, 100)
            self.assertEqual((w, h), (int(a["width"]), int(a["height"])))
            self.assertTrue(a.get("alt"))

    def test_key_numbers_are_the_files(self):
        with h5py.File(self.results) as f:
            v = f["analysis/velocity_distribution"].attrs
            beta = (f"{float(v['beta']):.4g} ± {float(v['beta_sigma']):.2g} "
                    f"(CI {float(v['beta_ci_low']):.4g} … {float(v['beta_ci_high']):.4g})")
            r_peak = float(f["analysis/gr"].attrs["r_peak"])
        self.assertRegex(self.text, r"velocity-tail exponent β</td><td class=\"num\">" + re.escape(beta) + "</td>")
        self.assertRegex(self.text, r"first peak of g\(r\)</td><td class=\"num\">" + re.escape(f"{r_peak:.4g}") +
                         r"</td><td>mm</td>")

    def test_provenance_checksums(self):
        digest = "sha256:" + hashlib.sha256(open(self.results, "rb").read()).hexdigest()
        self.assertIn(digest, self.text)
        self.assertIn("matches the file", self.text)
        self.assertIn("2000 frames/s", self.text)
        self.assertIn("10 px/mm", self.text)
        # a trajectory file changed after the analysis is flagged
        changed = os.path.join(self.dir, "changed.h5")
        shutil.copy(self.clip, changed)
        with open(changed, "ab") as f:
            f.write(b"\0")
        sec = report.provenance_section(vibra.load_results(self.results), changed)
        self.assertIn("differs from the file", sec)
        self.assertNotIn("matches the file", sec)

    def test_diagnostics_totals_are_the_files(self):
        with h5py.File(self.clip) as f:
            detections = int(f["diagnostics/detections"][:].sum())
            new_tracks = int(f["diagnostics/new_tracks"][:].sum())
            rows = int(f["index/frame_offsets"][-1])
        self.assertIn("Tracking diagnostics per frame", self.text)
        self.assertRegex(self.text, rf"<td>detections</td>.*?<td class=\"num\">{detections}</td></tr>")
        self.assertRegex(self.text, rf"<td>new_tracks</td>.*?<td class=\"num\">{new_tracks}</td></tr>")
        if rows != detections:  # n_rows is shown only when it differs from the detections
            self.assertRegex(self.text, rf"<td>n_rows</td>.*?<td class=\"num\">{rows}</td></tr>")
        else:
            self.assertNotIn("<td>n_rows</td>", self.text)

    def test_batch_directory_with_campaign(self):
        batch = os.path.join(self.dir, "batch")
        os.makedirs(batch, exist_ok=True)
        shutil.copy(self.results, os.path.join(batch, "clip.results.h5"))
        with open(os.path.join(batch, "campaign.csv"), "w") as f:
            f.write("video,frames,beta\nrun_a.cine,4000,1.52\nrun_b.cine,3990,1.71\n")
        out = os.path.join(self.dir, "batch.html")
        run("report", batch, "-o", out, "--dpi", "40")
        text = open(out, encoding="utf-8").read()
        self.assertIn("<h2>Campaign</h2>", text)
        self.assertIn("2 rows from", text)
        self.assertIn("<td>run_b.cine</td><td>3990</td><td>1.71</td>", text)
        self.assertIn("clip.results.h5", text)
        self.assertEqual(text.count("<img "), self.n_figures + 1)  # the input is where it was: diagnostics

    def test_errors(self):
        r = subprocess.run([VIBRA, "report", self.clip, "-o", os.path.join(self.dir, "x.html")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a vibra-results file", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "x.html")))
        r = subprocess.run([VIBRA, "report", self.results, "-o", os.path.join(self.dir, "no", "x.html")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("does not exist", r.stderr)

    # ---- in the browser: each check first fails on a page broken that way

    def test_browser_checks_catch_a_broken_page(self):
        bad = os.path.join(self.dir, "broken.html")
        with open(bad, "w") as f:
            f.write('<!DOCTYPE html><html><body><p>broken</p><img src="missing.png">'
                    '<img src="data:image/png;base64,AAAA"><script>console.error("boom")</script></body></html>')
        self.assertTrue(any("boom" in m for m in console_messages(bad)))
        self.assertEqual(image_probe(bad), {"images": 2, "bad": [0, 1]})
        blank = os.path.join(self.dir, "blank.html")
        with open(blank, "w") as f:
            f.write("<!DOCTYPE html><html><body></body></html>")
        self.assertTrue(screenshot_is_blank(blank, blank + ".png")[0])

    def test_browser_loads_without_console_messages(self):
        self.assertEqual(console_messages(self.html), [])

    def test_browser_shows_every_image(self):
        self.assertEqual(image_probe(self.html), {"images": self.n_figures + 1, "bad": []})

    def test_browser_screenshot_not_blank(self):
        blank, stats = screenshot_is_blank(self.html, os.path.join(self.dir, "report.png"))
        self.assertFalse(blank, f"non-white fraction, colours: {stats}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
