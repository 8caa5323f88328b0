"""The pages the course writes, checked for accessibility by axe-core in Chromium
(tests/accessibility.py): no serious or critical violation (contrast, a text alternative
for every plot and graph drawing, language, headings, labels), and no image left with
nbconvert's stand-in alt text.

Here, the pages that open from disk, each built as cheaply as the course builds it: a
lesson's slide deck and the slides' index (``autograder.content.slides``), feedback pages
(the exporter nbgrader's GenerateFeedback uses, on part of lesson 3's solution: Markdown,
code, two exercises with their test cells, one passing and one failing, a graph drawing
and a plot; and the page for a notebook that could not be graded) and the class report of
a small made-up class. The start page and a lesson open in JupyterLab are checked in
test_browser.py, which has the students' JupyterLab running.

One Chromium serves every browser test of the module; requests to anything but the files
are refused (the pages must work offline). The fast tests check the words themselves: what
a graph drawing's text alternative says, and that every plot and drawing in the executed
notebooks has one.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from accessibility import assert_accessible
from helpers import SOLUTIONS, notebook_path
from nbformat.v4 import new_output

CHROMIUM = Path("/usr/bin/chromium")
LESSON = "03_activations"  # Markdown, math, code, a graph drawing and a plot
FAILING = "act_test_relu"  # the test cell that fails in the feedback page


def in_chromium(test):
    """The browser tests: slow ones, together on one worker (they share one Chromium)."""
    for mark in (pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("accessibility")):
        test = mark(test)
    return test


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if __import__("os").environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    pytest.importorskip("axe_playwright_python")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        outside: list[str] = []

        def only_files(route):
            if route.request.url.startswith(("file:", "data:")):
                route.continue_()
            else:
                outside.append(route.request.url)
                route.abort()

        context.route("**/*", only_files)
        try:
            yield context, outside
        finally:
            browser.close()


def opened(context, path: Path):
    page = context.new_page()
    page.goto(path.as_uri(), wait_until="load")
    return page


# ---- pictures: what they show, in words (fast) ------------------------------------------


def test_a_graph_drawing_says_in_words_what_it_shows():
    from helpers import load_kit
    from refgrad import Value

    kit = load_kit()
    x, w = Value(2.0, label="x"), Value(-3.0, label="w")
    y = (x * w + 1).tanh()
    y.label = "y"
    y.backward()
    assert kit.describe_graph(y) == (
        "Graph of y, drawn left to right: 6 values (boxes: name, data, grad) and 3 "
        "operations (circles). w: data -3, grad 0.000363166. x: data 2, grad -0.00054475. "
        "(w * x): data -6, grad 0.000181583, made by * from w and x. 1: data 1, grad "
        "0.000181583. ((w * x) + 1): data -5, grad 0.000181583, made by + from (w * x) and "
        "1. y: data -0.999909, grad 1, made by tanh from ((w * x) + 1)."
    )
    long = Value(0.0, label="a")
    for _ in range(20):
        long = long + 1
    said = kit.describe_graph(long, "TB")
    assert said.startswith("Graph of a + result, drawn top to bottom: 41 values")
    assert said.endswith(". And 29 more values.")


def test_a_picture_is_an_image_with_its_text_alternative():
    import base64

    from helpers import load_kit

    picture = load_kit()._Picture("image/svg+xml", "<svg>é</svg>", 'a "b" <c>')
    data, metadata = picture._repr_mimebundle_()
    encoded = base64.b64encode("<svg>é</svg>".encode()).decode()
    assert data == {
        "image/svg+xml": "<svg>é</svg>",
        "text/html": f'<img src="data:image/svg+xml;base64,{encoded}" '
        'alt="a &quot;b&quot; &lt;c&gt;">',
        "text/plain": 'a "b" <c>',
    }
    assert metadata == {"image/svg+xml": {"alt": 'a "b" <c>'}}


def test_every_plot_and_graph_drawing_has_a_text_alternative():
    """In every executed solution notebook (what slides, the lab and feedback show), each
    image output is a picture with words: an HTML image whose alt says what it shows."""
    import re

    from autograder.course import assignments

    missing = []
    for assignment in assignments():
        nb = nbformat.read(notebook_path(SOLUTIONS, assignment), as_version=4)
        for i, cell in enumerate(nb.cells):
            for out in cell.get("outputs", []):
                images = [k for k in out.get("data", {}) if k.startswith("image/")]
                html = out.get("data", {}).get("text/html", "")
                alt = re.search(r'<img [^>]*alt="([^"]{20,})"', html)
                said = out.get("metadata", {}).get(images[0], {}).get("alt") if images else ""
                if images and not (alt and said):
                    missing.append(f"{assignment} cell {i}: {images}")
    assert not missing, f"images without a text alternative: {missing}"


# ---- slides ----------------------------------------------------------------------------


@in_chromium
def test_a_slide_deck_and_the_slides_index_are_accessible(browser, tmp_path):
    """Every slide at once: reveal.js's print layout (``?print-pdf``) shows them all,
    where the slideshow hides all but one from axe."""
    from autograder.content import slides

    context, outside = browser
    (deck,) = slides.build([LESSON], tmp_path)
    page = context.new_page()
    try:
        page.goto(deck.as_uri() + "?print-pdf")
        page.wait_for_selector(".reveal.ready")
        page.wait_for_function("!MathJax.Hub.queue.pending && !MathJax.Hub.queue.running")
        shown = page.evaluate(
            "[...document.querySelectorAll('.slides section')].every(s => s.checkVisibility())"
        )
        assert shown, "some slides are hidden from the check"
        assert page.locator("img").count() >= 2, "the deck's graph drawing and plot"
        assert_accessible(page, f"slides/{deck.name}")
    finally:
        page.close()
    page = opened(context, tmp_path / "index.html")
    try:
        assert_accessible(page, "slides/index.html")
    finally:
        page.close()
    assert not outside, f"the slides tried to reach the network: {outside[:5]}"


# ---- feedback pages ----------------------------------------------------------------------


KEPT = {"act_setup", "act_tanh", "act_test_tanh", "act_relu", FAILING}


def shown(cell, index: int) -> bool:
    """The lesson's cells the feedback page is made of: its opening, two exercises with
    their test cells (one passing, one failing), and every cell that draws."""
    images = any(k.startswith("image/") for o in cell.get("outputs", []) for k in o.get("data", {}))
    return index < 3 or images or cell.metadata.get("nbgrader", {}).get("grade_id") in KEPT


def one_test_fails(nb, resources):
    """Grades as GetGrades gives them: every cell its points, but FAILING none."""
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader")
        if md:
            points = md.get("points", 0)
            md.update(score=0 if md.get("grade_id") == FAILING else points, points=points)
            md.update(comment="")
    return nb, resources


@in_chromium
def test_feedback_pages_are_accessible(browser, tmp_path):
    from test_feedback import exporter

    from autograder.feedback.pages import write_note_page
    from autograder.record import GradingRecord

    context, outside = browser
    nb = nbformat.read(notebook_path(SOLUTIONS, LESSON), as_version=4)
    nb.cells = [c for i, c in enumerate(nb.cells) if shown(c, i)]  # axe takes 1 s per 5 cells
    (failing,) = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == FAILING]
    failing.outputs = [
        new_output(
            "error",
            ename="CheckFailed",
            evalue="relu(x) at x = -2: x.grad should be 0, but your engine gave 1.",
            traceback=[  # as IPython colours one
                "\x1b[0;31m" + "-" * 75 + "\x1b[0m",
                "\x1b[0;31mCheckFailed\x1b[0m                 Traceback (most recent call last)",
                "Cell \x1b[0;32mIn[12], line 3\x1b[0m\n\x1b[1;32m----> 3\x1b[0m check(relu)",
                "\x1b[0;31mCheckFailed\x1b[0m: relu(x) at x = -2: x.grad should be 0, but your "
                "engine gave 1.",
            ],
        )
    ]
    points = sum(c.metadata.get("nbgrader", {}).get("points", 0) for c in nb.cells)
    resources = {
        "nbgrader": {"notebook": "activations", "score": points - 1, "max_score": points},
    }
    resources["nbgrader"]["late_penalty"] = 0
    page_html, _ = exporter(grades=one_test_fails).from_notebook_node(nb, resources)
    graded = tmp_path / "activations.html"
    graded.write_text(page_html, encoding="utf-8")
    note = tmp_path / "value.html"
    record = GradingRecord(score=3, max_score=14)
    write_note_page(note, "ada", "01_value", "value", record, ["the notebook was not submitted"])
    for path in (graded, note):
        page = opened(context, path)
        try:
            if path == graded:
                assert page.locator("img").count() >= 2, "the lesson's graph drawing and plot"
                assert page.get_by_text("x.grad should be 0").count(), "the failing test"
            assert_accessible(page, f"feedback page {path.name}")
        finally:
            page.close()
    assert not outside, f"the feedback pages tried to reach the network: {outside[:5]}"


# ---- the class report ------------------------------------------------------------------


@in_chromium
def test_the_class_report_is_accessible(browser, tmp_path):
    from synthetic_class import make_class

    from autograder.report.page import report

    context, outside = browser
    made = make_class(
        tmp_path / "class",
        ["ada", "bob", "cy"],
        ["01_value", "04_checkpoint_engine"],
        missing={("cy", "01_value")},
        late={("bob", "01_value"): 3600},
    )
    result = report(root=made.root, out=tmp_path / "reports", now=datetime(2027, 1, 1))
    page = opened(context, result.path)
    try:
        assert page.locator("img").count() == 3, "the report's three plots"
        assert_accessible(page, "the class report")
    finally:
        page.close()
    assert not outside, f"the report tried to reach the network: {outside[:5]}"
