"""``python -m autograder slides``: every lesson as reveal.js slides that work offline.

The slides are made from ``solutions/`` (executed notebooks, so graph drawings and plots
are in them, without hidden tests) with nbconvert's slides exporter, following each cell's
``slideshow.slide_type``; check cells and the self-check are ``skip`` and do not appear.

Everything a slide loads sits in the output folder (``slides/``, not in git):

    slides/index.html                 the list of lessons
    slides/01_value.slides.html       one file per lesson notebook, images inline
    slides/vendor/                    reveal.js, require.js, jQuery, MathJax 2

``vendor/`` comes from the npm registry (``npm install`` of the pinned versions below,
into a temporary folder, then copied without what the slides never load). It is made
once and kept while the versions stay the same. Only building needs npm and the network;
the slides then open from disk with no network at all.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat

from ..course import ROOT, SOLUTIONS, assignments

OUT = ROOT / "slides"
TEMPLATE = Path(__file__).resolve().parent / "slides_template"
# reveal.js 4 and MathJax 2 are what nbconvert's reveal template is written for.
VENDOR = {"reveal.js": "4.6.1", "requirejs": "2.3.7", "jquery": "3.7.1", "mathjax": "2.7.9"}
VENDOR_LAYOUT = "2"  # bump when vendor() copies a different selection of files
MATHJAX = "vendor/mathjax/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
# MathJax 2 is 73 MB; the slides use its CommonHTML output with the TeX web fonts only.
MATHJAX_SKIP = (
    "unpacked",
    "test",
    "docs",
    "jax/output/SVG",
    "jax/output/HTML-CSS",
    "fonts/HTML-CSS/TeX/png",
    "fonts/HTML-CSS/TeX/eot",
    "fonts/HTML-CSS/TeX/svg",
)
MATHJAX_CONFIGS = ("TeX-AMS_CHTML-full.js", "Safe.js", "local")


class SlidesError(RuntimeError):
    pass


def vendor(out: Path = OUT) -> Path:
    """``out/vendor`` with reveal.js, require.js, jQuery and MathJax from npm."""
    dest = out / "vendor"
    stamp = dest / "versions.json"
    wanted = {**VENDOR, "layout": VENDOR_LAYOUT}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return dest
    npm = shutil.which("npm")
    if npm is None:
        raise SlidesError(
            "building the slides needs npm (it fetches reveal.js and MathJax once):\n"
            "  Debian/Ubuntu: sudo apt-get install npm   macOS: brew install node\n"
            "  or run scripts/setup --test, which installs it"
        )
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            npm,
            "install",
            "--prefix",
            tmp,
            "--no-save",
            "--no-package-lock",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            *(f"{name}@{version}" for name, version in VENDOR.items()),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise SlidesError(f"npm install failed:\n{proc.stderr[-2000:]}")
        modules = Path(tmp) / "node_modules"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        shutil.copytree(modules / "reveal.js" / "dist", dest / "reveal.js" / "dist")
        shutil.copytree(modules / "reveal.js" / "plugin", dest / "reveal.js" / "plugin")
        shutil.copy(modules / "requirejs" / "require.js", dest / "require.js")
        shutil.copy(modules / "jquery" / "dist" / "jquery.min.js", dest / "jquery.min.js")
        shutil.copytree(modules / "mathjax", dest / "mathjax", ignore=_mathjax_skip(modules))
        for name in VENDOR:  # each package's licence goes with it
            licence = modules / name / "LICENSE"
            if licence.exists():
                shutil.copy(licence, dest / f"LICENSE.{name}")
    stamp.write_text(json.dumps(wanted, indent=1))
    return dest


def _mathjax_skip(modules: Path):
    root = modules / "mathjax"

    def ignore(folder: str, names: list[str]) -> list[str]:
        rel = Path(folder).relative_to(root).as_posix()
        paths = {n: n if rel == "." else f"{rel}/{n}" for n in names}
        return [
            n
            for n, p in paths.items()
            if p in MATHJAX_SKIP
            or (rel == "fonts/HTML-CSS" and n != "TeX")  # fonts other than TeX's
            or (rel == "config" and n not in MATHJAX_CONFIGS)
        ]

    return ignore


def exporter():
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    c.TemplateExporter.extra_template_basedirs = [str(TEMPLATE.parent)]
    c.SlidesExporter.template_name = TEMPLATE.name
    c.SlidesExporter.reveal_url_prefix = "vendor/reveal.js"
    c.SlidesExporter.reveal_theme = "white"  # its fonts ship with reveal.js; "simple" fetches some
    c.SlidesExporter.reveal_scroll = True  # long code cells scroll instead of overflowing
    c.SlidesExporter.require_js_url = "vendor/require.js"
    c.SlidesExporter.jquery_url = "vendor/jquery.min.js"
    c.SlidesExporter.mathjax_url = MATHJAX
    c.SlidesExporter.exclude_input_prompt = True
    c.SlidesExporter.exclude_output_prompt = True
    return SlidesExporter(config=c)


def title(nb: nbformat.NotebookNode, default: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return default


def build(
    selected: list[str] | None = None, out: Path = OUT, source: Path = SOLUTIONS
) -> list[Path]:
    """Write the slides of ``selected`` lessons (default: all) into ``out``; return them."""
    lessons = selected or assignments(source)
    missing = [a for a in lessons if not any((source / a).glob("*.ipynb"))]
    if missing:
        raise SlidesError(
            f"no notebooks in {source.name}/ for {', '.join(missing)}: run `make generate` first"
        )
    vendor(out)
    export = exporter()
    written, entries = [], []
    for lesson in lessons:
        paths = sorted((source / lesson).glob("*.ipynb"))
        for path in paths:
            nb = nbformat.read(path, as_version=4)
            name = lesson if len(paths) == 1 else f"{lesson}-{path.stem}"
            heading = title(nb, name)
            body, _ = export.from_notebook_node(nb, resources={"metadata": {"name": heading}})
            target = out / f"{name}.slides.html"
            target.write_text(body, encoding="utf-8")
            written.append(target)
            entries.append((target.name, heading))
    write_index(out, entries)
    return written


def write_index(out: Path, entries: list[tuple[str, str]]) -> None:
    """``out/index.html``: a link per lesson, for every slides file in the folder."""
    known = dict(entries)
    for path in sorted(out.glob("*.slides.html")):
        if path.name not in known:  # built earlier, alone: keep it listed
            match = re.search(r"<title>(.*?) slides</title>", path.read_text(encoding="utf-8"))
            known[path.name] = html.unescape(match.group(1)) if match else path.stem
    items = "\n".join(
        f'  <li><a href="{html.escape(name)}">{html.escape(heading)}</a></li>'
        for name, heading in sorted(known.items())
    )
    (out / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        "<title>Autograd from Scratch: slides</title></head>\n<body>\n"
        "<h1>Autograd from Scratch: slides</h1>\n<ul>\n" + items + "\n</ul>\n"
        "<p>Arrow keys move between slides; press S for the speaker view.</p>\n"
        "</body>\n</html>\n",
        encoding="utf-8",
    )


def main(selected: list[str] | None = None, out: Path | None = None) -> int:
    try:
        written = build(selected, out or OUT)
    except SlidesError as exc:
        print(exc)
        return 1
    folder = written[0].parent if written else out or OUT
    for path in written:
        print(f"slides: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    print(f"open {folder / 'index.html'} in a browser (works offline)")
    return 0
