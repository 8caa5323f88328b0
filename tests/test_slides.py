"""``python -m autograder slides``: every lesson builds into reveal.js slides that open from
disk with no network (reveal.js, require.js, jQuery and MathJax sit beside them)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from helpers import SOLUTIONS

from autograder.content import slides

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LESSONS = sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def test_every_lesson_has_slide_metadata():
    for lesson in LESSONS:
        for path in sorted((SOLUTIONS / lesson).glob("*.ipynb")):
            nb = nbformat.read(path, as_version=4)
            kinds = [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]
            assert None not in kinds, f"{lesson}/{path.name}: a cell has no slide_type"
            assert kinds.count("slide") >= 2, f"{lesson}/{path.name}: fewer than 2 slides"
            checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
            assert all(c.metadata["slideshow"]["slide_type"] == "skip" for c in checks)


def test_the_template_leaves_out_every_cdn(tmp_path):
    """Without building: the exporter's HTML refers to nothing but the vendor folder."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hi\n\n$x^2$")])
    body, _ = slides.exporter().from_notebook_node(nb, resources={"metadata": {"name": "t"}})
    assert remote_references(body) == []
    assert 'src="vendor/require.js"' in body and "vendor/reveal.js/dist/reveal.js" in body


def remote_references(page: str) -> list[str]:
    """http(s) URLs the page would load: script/link/img/iframe sources, CSS imports."""
    refs = re.findall(
        r"""<(?:script|link|img|iframe|source)\b[^>]*?\b(?:src|href)=["']([^"']+)""", page
    )
    refs += re.findall(r"""@import\s+(?:url\()?["']?([^"')\s;]+)""", page)
    refs += re.findall(r"""\bimport\s+\w+\s+from\s+["']([^"']+)""", page)  # JS modules
    refs += re.findall(r'"(https?://[^"]+\.js)"', page)  # require([...]) lists
    return [r for r in refs if r.startswith(("http:", "https:", "//"))]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("npm") is None:
        if os.environ.get("CI"):
            pytest.fail("npm is missing: scripts/setup --test installs it")
        pytest.skip("building slides needs npm (scripts/setup --test)")
    out = tmp_path_factory.mktemp("slides")
    return out, slides.build(out=out)


@pytest.mark.slow
def test_slides_build_for_every_lesson_and_load_only_local_files(built):
    out, written = built
    assert {p.name for p in written} >= {
        f"{a}.slides.html" for a in LESSONS if len(list((SOLUTIONS / a).glob("*.ipynb"))) == 1
    }
    index = (out / "index.html").read_text()
    for path in written:
        page = path.read_text(encoding="utf-8")
        assert remote_references(page) == [], path.name
        assert path.name in index
        assert '"""Check:' not in page, f"{path.name}: check cells must be skipped"
        assert "self_check()" not in page, f"{path.name}: the self-check must be skipped"
        for ref in re.findall(r"""(?:src|href)=["'](vendor/[^"'?#]+)""", page):
            assert (out / unquote(ref)).is_file(), f"{path.name} needs missing {ref}"
    vendor = out / "vendor"
    for needed in (
        "reveal.js/dist/reveal.js",
        "reveal.js/plugin/notes/notes.js",
        "reveal.js/dist/theme/white.css",
        "require.js",
        "jquery.min.js",
        "mathjax/MathJax.js",
        "mathjax/config/TeX-AMS_CHTML-full.js",
        "mathjax/jax/output/CommonHTML/jax.js",
    ):
        assert (vendor / needed).is_file(), needed
    css_imports = re.findall(
        r"@import url\(([^)]+)\)", (vendor / "reveal.js/dist/theme/white.css").read_text()
    )
    assert all(not u.startswith(("http", "//")) for u in css_imports), css_imports


@pytest.mark.slow
@pytest.mark.browser
def test_a_slide_renders_offline_in_chromium(built, tmp_path):
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    from playwright.sync_api import sync_playwright

    _, written = built
    page_path = next(p for p in written if "$$" in p.read_text(encoding="utf-8"))
    outside: list[str] = []
    failed: list[str] = []

    def only_local(route):
        if urlsplit(route.request.url).scheme in ("file", "data", "blob"):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 800},
        )
        try:
            context.route("**/*", only_local)
            page = context.new_page()
            page.on("requestfailed", lambda r: failed.append(r.url))
            page.goto(page_path.as_uri())
            page.wait_for_selector(".reveal.ready", timeout=60_000)  # reveal.js started
            count = page.locator(".reveal .slides > section").count()
            assert count >= 2
            for _ in range(count):  # to the first slide with typeset math
                if page.locator("section.present .MathJax_CHTML").count():
                    break
                page.keyboard.press("ArrowRight")
                page.wait_for_timeout(300)
            math = page.locator("section.present .MathJax_CHTML").first
            math.wait_for(timeout=60_000)
            assert math.bounding_box()["height"] > 10
            shot = tmp_path / f"slide-{page_path.stem}.png"
            page.screenshot(path=str(shot))
            print(f"\nscreenshot: {shot}")
        finally:
            context.close()
    assert outside == [], f"the slides tried to reach the network: {outside}"
    assert failed == [], f"files the slides could not load: {failed}"
