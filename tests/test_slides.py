"""Slides (autograder/content/slides.py): the students' decks are made from the student
notebooks, show no answer, carry one idea per slide, and open from disk with no network
(reveal.js and MathJax beside them, copied from Python packages: no npm)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import nbformat
import pytest
from helpers import SOLUTIONS

from autograder.content import slides
from autograder.course import assignments, kind
from autograder.students import edition

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


def test_only_lessons_have_slides():
    assert slides.lessons() == [a for a in assignments() if kind(a) == "lesson"]
    assert {"01_value", "05_mlp", "05_training"} <= set(slides.lessons())
    with pytest.raises(slides.SlidesError, match=r"04_checkpoint_engine.*not for quizzes"):
        slides.lessons(["04_checkpoint_engine"])


def test_no_slide_carries_more_than_one_screen():
    """At most WORDS words of prose and LINES lines of code and output a slide (the
    instructor's worked answers may be longer than the stubs)."""
    assert slides.check() == []
    assert slides.check(instructor=True) == []


def _cell(kind_: str, source: str, slide_type: str, **extra):
    make = nbformat.v4.new_markdown_cell if kind_ == "md" else nbformat.v4.new_code_cell
    cell = make(source, **extra)
    cell.metadata["slideshow"] = {"slide_type": slide_type}
    return cell


def test_a_slide_is_measured_from_one_slide_or_subslide_to_the_next():
    words = lambda n: " ".join(["word"] * n)  # noqa: E731
    code = lambda n: "\n".join(f"x{i} = {i}" for i in range(n))  # noqa: E731
    printed = nbformat.v4.new_output("stream", name="stdout", text="a\nb\nc\n")
    nb = nbformat.v4.new_notebook(
        cells=[
            _cell("md", "# Title\n\n" + words(100), "slide"),
            _cell("md", words(49), "-"),  # 150 words with the title: fits
            _cell("md", words(900), "notes"),  # notes and skipped cells do not count
            _cell("code", code(90), "skip"),
            _cell("md", "## Two\n\n" + words(60), "subslide"),
            _cell("md", words(90), "fragment"),  # 151: one too many
            _cell("md", "## Three\n```python\n" + code(20) + "\n```", "slide"),
            _cell("code", code(3), "-", outputs=[printed]),  # 20 + 3 + 3 printed lines
        ]
    )
    sizes = [(s.words, s.lines) for s in slides.slides_of(nb)]
    assert sizes == [(150, 0), (151, 0), (1, 26)]
    problems = slides.oversized(nb)
    assert len(problems) == 2
    assert problems[0].startswith("slide 2 '## Two': 151 words (most 150)")
    assert "26 lines of code (most 25)" in problems[1]
    assert slides.oversized(nb, lines=None) == [problems[0]]


def test_students_slides_show_stubs_and_the_lessons_own_outputs():
    secrets = edition.secret_lines()
    for lesson in slides.lessons():
        (released,) = (slides.NOTEBOOKS / lesson).glob("*.ipynb")
        stubs = nbformat.read(released, as_version=4).cells
        deck = slides.student_deck(lesson)
        assert [c.source for c in deck.cells] == [c.source for c in stubs], lesson
        answers = [c for c in deck.cells if slides._is_answer(c)]
        assert answers and all(c.get("outputs", []) == [] for c in answers), lesson
        shown = [c for c in deck.cells if c.get("outputs")]
        assert shown, f"{lesson}: no cell shows what the lesson prints or draws"
        for cell in deck.cells:
            texts = [cell.source] + [str(o) for o in cell.get("outputs", [])]
            lines = {line.strip() for t in texts for line in t.splitlines()}
            assert not lines & secrets, f"{lesson}: an answer on a slide: {lines & secrets}"


def test_the_template_leaves_out_every_cdn(tmp_path):
    """Without building: the exporter's HTML refers to nothing but the vendor folder."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Hi\n\n$x^2$")])
    body, _ = slides.exporter().from_notebook_node(nb, resources={"metadata": {"name": "t"}})
    assert remote_references(body) == []
    assert 'src="vendor/reveal.js/dist/reveal.js"' in body
    assert "vendor/mathjax/MathJax.js" in body
    assert "require.js" not in body and "jquery" not in body.lower()


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
    out = tmp_path_factory.mktemp("slides")
    return out, slides.build(out=out)


@pytest.mark.slow
def test_slides_build_for_every_lesson_and_load_only_local_files(built):
    out, written = built
    assert [p.name for p in written] == [f"{a}.slides.html" for a in slides.lessons()]
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
        "reveal.js/LICENSE",
        "reveal.js/dist/reveal.js",
        "reveal.js/plugin/notes/notes.js",
        "reveal.js/dist/theme/white.css",
        "mathjax/LICENSE",
        "mathjax/MathJax.js",
        "mathjax/config/TeX-AMS-MML_HTMLorMML-full.js",
        "mathjax/jax/output/HTML-CSS/fonts/STIX-Web/fontdata.js",
        "mathjax/fonts/HTML-CSS/STIX-Web/woff",
    ):
        assert (vendor / needed).exists(), needed
    css_imports = re.findall(
        r"@import url\(([^)]+)\)", (vendor / "reveal.js/dist/theme/white.css").read_text()
    )
    assert all(not u.startswith(("http", "//")) for u in css_imports), css_imports
    assert edition.leaks(out, edition.secret_lines()) == []


@pytest.mark.slow
def test_instructors_slides_show_answers_and_the_leak_scan_stops_them(tmp_path):
    folder = tmp_path / "edition"
    (_written,) = slides.build(["01_value"], folder / "slides", instructor=True)
    assert (
        "Autograd from Scratch: instructor's slides" in (folder / "slides/index.html").read_text()
    )
    found = edition.leaks(folder, edition.secret_lines())
    assert any(line.startswith("slides/01_value.slides.html: solution") for line in found), found


@pytest.mark.slow
@pytest.mark.browser
def test_a_deck_opens_offline_in_chromium_with_math_a_graph_and_a_next_slide(built, tmp_path):
    """The network is off: the deck starts, typesets math (with no "Math Processing Error",
    even when a slide changes during the first typesetting), shows a graph drawing, and the
    right arrow key moves to the next slide."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    from playwright.sync_api import sync_playwright

    out, _ = built
    deck = out / f"{slides.lessons()[0]}.slides.html"
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
            offline=True,
        )
        try:
            context.route("**/*", only_local)
            page = context.new_page()
            page.on("requestfailed", lambda r: r.url.startswith("about:") or failed.append(r.url))
            page.goto((out / "index.html").as_uri())
            page.click(f"a[href='{deck.name}']")  # the list of lessons leads to the deck
            page.wait_for_selector(".reveal.ready", timeout=60_000)  # reveal.js started
            assert page.evaluate("Reveal.getIndices().h") == 0
            page.keyboard.press("ArrowRight")  # at once, while MathJax typesets the deck
            page.wait_for_function("Reveal.getIndices().h === 1")
            for key in ["ArrowLeft", "ArrowRight"] * 3:  # a few more changes in that time
                page.keyboard.press(key)
            page.wait_for_selector(".reveal .MathJax", state="attached", timeout=60_000)
            seen = {"math": False, "graph": False}
            idle = "!MathJax.Hub.queue.pending && !MathJax.Hub.queue.running"
            for _ in range(page.evaluate("Reveal.getTotalSlides()")):
                page.wait_for_function(idle)  # it typesets each slide again when shown
                here = page.locator("section.present")
                assert not here.locator(".MathJax_Error").count(), "Math Processing Error"
                math = here.locator(".MathJax").first
                if not seen["math"] and math.count():
                    seen["math"] = math.bounding_box()["height"] > 5
                drawing = here.locator('img[src^="data:image/svg+xml"]')
                if not seen["graph"] and drawing.count():
                    seen["graph"] = drawing.first.bounding_box()["width"] > 50
                    page.screenshot(path=str(tmp_path / "graph-slide.png"))
                if all(seen.values()):
                    break
                page.keyboard.press("Space")  # next slide, subslides included
                page.wait_for_timeout(250)
            assert seen == {"math": True, "graph": True}, seen
            print(f"\nscreenshot: {tmp_path / 'graph-slide.png'}")
        finally:
            context.close()
    assert outside == [], f"the slides tried to reach the network: {outside}"
    assert failed == [], f"files the slides could not load: {failed}"


FITS = """() => {
    const height = Reveal.getConfig().height;
    return Reveal.getSlides().flatMap(slide => {
        const at = Reveal.getIndices(slide);
        Reveal.slide(at.h, at.v);  // shown, so that it is laid out
        const title = slide.querySelector("h1, h2, h3")?.textContent ?? "";
        return slide.scrollHeight > height
            ? [`slide ${at.h}.${at.v} "${title.replace("\u00b6", "")}": ${slide.scrollHeight}px`]
            : [];
    });
}"""


@pytest.mark.slow
@pytest.mark.browser
def test_every_slide_fits_on_one_screen(built, tmp_path):
    """Laid out by the browser, no slide is taller than the deck's canvas (HEIGHT pixels:
    reveal.js scales the canvas to the window), math and pictures included."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    from playwright.sync_api import sync_playwright

    _, written = built
    too_tall = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            for deck in written:
                page.goto(deck.as_uri())
                page.wait_for_selector(".reveal.ready", timeout=60_000)
                page.wait_for_function("!MathJax.Hub.queue.pending && !MathJax.Hub.queue.running")
                assert page.evaluate("Reveal.getConfig().height") == slides.HEIGHT
                too_tall += [f"{deck.name} {line}" for line in page.evaluate(FITS)]
        finally:
            browser.close()
    assert too_tall == [], "slides taller than one screen:\n" + "\n".join(too_tall)
