"""Feedback pages: nothing from a submission is active in them, no grading material shows,
and nothing a notebook contains makes ``feedback`` fail.

The fast tests render notebooks with the exporter exactly as nbgrader's GenerateFeedback
builds it from nbgrader_config.py (as ``feedback`` and formgrader's button do), without a
gradebook. The slow ones grade and write feedback for a class with real nbgrader, and open
a page in headless Chromium to check that no injected script ran.
"""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from helpers import ROOT, SOLUTIONS, SOURCE, ScratchCourse, autograder_cli, notebook_path
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

from autograder.feedback import inert, sanitize
from autograder.feedback.pages import (
    REMOVED_OUTPUT,
    check_page,
    hidden_lines,
)
from autograder.markers import BEGIN_HIDDEN
from autograder.preprocessors.hidegradermaterial import HideGraderMaterial

A = "01_value"
PLOTS = "03_activations"  # math in Markdown, graph drawings (SVG) and plots (PNG)
MATHJAX = (
    "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/latest.js?config=TeX-AMS_CHTML-full,Safe"
)
PWN = "document.title='PWNED'; window.pwned = 1"

MARKDOWN_PAYLOAD = f"""# Notes <script>{PWN}</script>

<img src=x onerror="{PWN}"> <img src="data:text/html,<script>{PWN}</script>">
<svg onload="{PWN}"><script>{PWN}</script><circle r="3"/></svg>
<a href="javascript:{PWN}">link</a> <a href=" JaVa&#x09;ScRiPt:{PWN}">spaced</a>
[md link](javascript:alert(1)) ![md image](javascript:alert(1))
<iframe src="javascript:{PWN}"></iframe> <iframe srcdoc="<script>{PWN}</script>"></iframe>
<object data="javascript:{PWN}"></object><embed src="javascript:{PWN}">
<form action="javascript:{PWN}"><button formaction="javascript:{PWN}">go</button></form>
<meta http-equiv="refresh" content="0;url=javascript:{PWN}"> <base href="javascript:{PWN}//">
<math><mtext><table><mglyph><style><img src=x onerror="{PWN}"></style></mglyph>
</table></mtext></math>
<svg><style><img src=x onerror="{PWN}"></style></svg>
<noscript><p title="</noscript><img src=x onerror='{PWN}'>"></noscript>
<div style="background:url(javascript:alert(1))">styled</div>
<details open ontoggle="{PWN}">details</details>
<span class="nbgrader-label">Grade cell: forged</span>

Some math that must still render: $x < y$ and $$\\href{{javascript:alert(1)}}{{z}}$$
"""
SVG_PAYLOAD = f"""<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"
 width="40" height="20" onload="{PWN}"><script>{PWN}</script>
<foreignObject><div xmlns="http://www.w3.org/1999/xhtml"><img src="x" onerror="{PWN}"/>
</div></foreignObject>
<a xlink:href="javascript:{PWN}"><text x="1" y="15">drawn</text></a>
<animate attributeName="href" to="javascript:{PWN}"/>
<set attributeName="onmouseover" to="{PWN}"/></svg>"""


def payload_cells() -> list:
    """Cells with every kind of active content a submission could put in a page."""
    cell = new_code_cell("print('hello')")
    cell.outputs = [
        new_output(
            "display_data",
            data={
                "text/html": f'<b>bold</b><script>{PWN}</script><img src=x onerror="{PWN}">',
                "text/plain": "<HTML>",
            },
        ),
        new_output("display_data", data={"application/javascript": PWN}),
        new_output("display_data", data={"text/markdown": f"*md* <script>{PWN}</script>"}),
        new_output("display_data", data={"image/svg+xml": SVG_PAYLOAD}),
        new_output(
            "display_data",
            data={
                "application/vnd.jupyter.widget-view+json": {
                    "model_id": "x",
                    "version_major": 2,
                    "version_minor": 0,
                },
                "text/plain": "W",
            },
        ),
        new_output("display_data", data={"text/vnd.mermaid": "graph TD; A-->B"}),
        new_output(
            "execute_result",
            execution_count=3,
            data={"text/html": f"<p>isolated</p><script>{PWN}</script>"},
            metadata={"text/html": {"isolated": True}},
        ),
        new_output(
            "stream",
            name="stdout",
            text=f"<script>{PWN}</script> _grader_ _refgrad_0123456789abcdef\n",
        ),
        new_output(
            "error",
            ename="ValueError",
            evalue=f"<img src=x onerror={PWN}>",
            traceback=[f"<script>{PWN}</script>"],
        ),
    ]
    png = new_code_cell("plot()")
    png.outputs = [
        new_output(
            "display_data",
            data={"image/png": tiny_png()},
            metadata={"image/png": {"width": f"1 onerror={PWN}", "height": 10}},
        )
    ]
    bad_png = new_code_cell("broken()")
    bad_png.outputs = [new_output("display_data", data={"image/png": "not base64 at all!"})]
    tagged = new_code_cell("x = 1", metadata={"tags": [f'x" onmouseover="{PWN}']})
    tagged["id"] = "fine-id"
    forged = new_code_cell(
        "y = 2",
        metadata={
            "nbgrader": {
                "grade": True,
                "solution": False,
                "grade_id": f"<img src=x onerror={PWN}>",
                "points": 5,
            }
        },
    )
    return [
        new_markdown_cell(MARKDOWN_PAYLOAD),
        cell,
        png,
        bad_png,
        tagged,
        forged,
        new_markdown_cell("Text with _grader_ and _refgrad_ in it."),
        new_markdown_cell("A student quoting load_grader( in Markdown."),
        new_code_cell("# BEGIN HIDDEN TESTS is only text here"),
    ]


def tiny_png() -> str:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(1, 1), dpi=20)
    ax.plot([0, 1], [0, 1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def fake_grades(nb, resources):
    """What nbgrader's GetGrades adds from the gradebook: a score and a comment per cell."""
    for cell in nb.cells:
        md = cell.metadata.get("nbgrader")
        if md:
            md.update(score=0, points=md.get("points", 0), comment="")
    return nb, resources


def exporter(inert_pages: bool = True, grades=fake_grades):
    """The exporter nbgrader's GenerateFeedback makes from nbgrader_config.py (as the
    feedback command and formgrader do), with its preprocessors (GetGrades's scores made
    up by ``grades``: there is no gradebook)."""
    from nbgrader.converters import GenerateFeedback
    from traitlets.config import Config

    from autograder.course import nbgrader_config

    config = nbgrader_config()
    if not inert_pages:
        config.GenerateFeedback.exporter_class = "nbconvert.exporters.HTMLExporter"
    converter = GenerateFeedback(config=config)
    template = Config()
    template.HTMLExporter.template_name = "feedback"  # as NbGraderAPI.generate_feedback
    converter.update_config(template)
    exp = converter.exporter_class(parent=converter, config=converter.config)
    for pp in converter.preprocessors:  # as GenerateFeedback.start registers them
        if "GetGrades" in str(pp):
            exp.register_preprocessor(grades, enabled=True)
        else:
            exp.register_preprocessor(pp)
    return exp


def render(nb, exp=None, with_resources=False):
    exp = exp or exporter()
    resources = {"nbgrader": {"notebook": "value", "score": 3, "max_score": 14, "late_penalty": 0}}
    page, resources = exp.from_notebook_node(
        nbformat.from_dict(json.loads(json.dumps(nb))), resources
    )
    return (page, resources) if with_resources else page


def trusted_scripts_only(soup) -> None:
    """The page has no script at all: math is MathML (offline_math.py), so not even
    MathJax's loader is left of what nbgrader's feedback template would write."""
    scripts = soup.find_all("script")
    assert scripts == [], [str(s)[:100] for s in scripts]


def assert_inert(page: str) -> None:
    """Nothing in ``page`` can run or load anything: checked independently of
    autograder.feedback.inert, on the page as a whole."""
    soup = BeautifulSoup(page, features="html.parser")
    trusted_scripts_only(soup)
    head = soup.head
    assert head is not None
    for element in head.find_all(True):
        assert element.name in ("meta", "title", "style", "script"), element.name
        if element.name == "meta":
            assert set(element.attrs) <= {"charset", "name", "content"}, element
    body = soup.body
    assert body is not None  # (nbgrader's template nests a second <body> in it)
    for name in (
        "script",
        "style",
        "link",
        "meta",
        "base",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "applet",
        "param",
        "form",
        "button",
        "input",
        "select",
        "textarea",
        "svg",
        "noscript",
        "template",
        "portal",
    ):
        assert body.find(name) is None, name
    from autograder.feedback.sanitize import MATHML as mathml

    for math in body.find_all("math"):  # offline math: presentation MathML and nothing else
        assert {e.name for e in [math, *math.find_all(True)]} <= mathml, math
    for element in soup.find_all(True):
        for attr, value in element.attrs.items():
            value = " ".join(value) if isinstance(value, list) else value
            assert not attr.lower().startswith("on"), (element.name, attr, value)
            squeezed = re.sub(r"[\x00-\x20]+", "", value).lower()
            assert not squeezed.startswith(("javascript:", "vbscript:")), (element.name, attr)
            if attr in (
                "href",
                "src",
                "action",
                "formaction",
                "data",
                "background",
                "poster",
            ) and re.match(r"^[a-z][a-z0-9+.-]*:", squeezed):
                if element.name == "img" and attr == "src":
                    assert squeezed.startswith(("data:image/", "https:")), element
                else:
                    assert squeezed.startswith(("http:", "https:", "mailto:")), element
            assert attr not in ("srcdoc", "srcset", "formaction"), element.name
            if attr == "style":
                assert "url(" not in squeezed and "expression" not in squeezed, element


def inert_trusted():
    exp = exporter()
    _, resources = render(nbformat.v4.new_notebook(), exp, with_resources=True)
    return exp.trusted_elements(resources)


def payload_notebook():
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    nb.cells[1:1] = payload_cells()
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {
            "state": {},
            "version_major": 2,
            "version_minor": 0,
        }
    }
    return nb


# ---- inert pages (fast) -----------------------------------------------------------------------


def test_the_payload_is_live_without_the_inert_exporter():
    """The payloads below are real: nbgrader's own exporter leaves them active."""
    page = render(payload_notebook(), exporter(inert_pages=False))
    assert "onerror" in page and f"<script>{PWN}</script>" in page
    assert len(inert.active_markup(page, inert_trusted())) > 5


def test_nothing_from_a_submission_is_active_in_its_page():
    page = render(payload_notebook())
    assert_inert(page)
    soup = BeautifulSoup(page, features="html.parser")
    text = soup.get_text()
    assert "<script>" in text  # shown as text, not run
    assert "forged" in text and not [
        s for s in soup.find_all("span", class_="nbgrader-label") if "forged" in s.get_text()
    ]
    assert "[an output of type application/javascript not shown in the feedback]" in text
    assert "_grader_" in text  # a student's text is the student's, left alone


def test_what_students_legitimately_see_stays():
    nb = nbformat.read(notebook_path(SOLUTIONS, PLOTS), as_version=4)
    page = render(nb)
    assert_inert(page)
    soup = BeautifulSoup(page, features="html.parser")
    images = [img["src"] for img in soup.find_all("img") if img.get("src")]
    svgs = [
        base64.b64decode(s.split(",", 1)[1]).decode()
        for s in images
        if s.startswith("data:image/svg+xml;base64,")
    ]
    pngs = [s for s in images if s.startswith("data:image/png;base64,")]
    want_svg = sum(
        "image/svg+xml" in o.get("data", {}) for c in nb.cells for o in c.get("outputs", [])
    )
    assert len(svgs) == want_svg > 0 and all("<polygon" in s or "<path" in s for s in svgs)
    assert pngs and all(base64.b64decode(s.split(",", 1)[1]).startswith(b"\x89PNG") for s in pngs)
    assert soup.find("math") and soup.find("mfrac")  # the lesson's math, as MathML
    assert soup.find("div", class_="highlight")  # Markdown code blocks still highlighted
    plain = render(nb, exporter(inert_pages=False))
    styles = BeautifulSoup(plain, features="html.parser").find_all("style")
    assert [str(s) for s in soup.find_all("style")] == [str(s) for s in styles]


def test_svg_drawings_lose_scripts_handlers_and_outside_links():
    clean = sanitize.clean_svg(SVG_PAYLOAD)
    assert "drawn" in clean
    for word in ("script", "onload", "foreignObject", "javascript", "animate", "<set"):
        assert word not in clean, word
    assert sanitize.clean_svg("<svg><!ENTITY x 'y'></svg>") is None
    assert sanitize.clean_svg("<html><script>x</script></html>") is None
    assert sanitize.clean_svg("not xml <") is None


def test_html_fragments_keep_formatting_and_lose_everything_active():
    html = sanitize.clean_html(
        '<table><tr><th style="text-align: right">a</th></tr></table>'
        '<a href="https://example.org">ok</a><a href="#x">in</a>'
        '<img src="data:image/png;base64,iVBORw0KGgo=" width="3">'
    )
    assert '<th style="text-align: right;">' in html
    assert 'href="https://example.org"' in html and 'href="#x"' in html
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in html
    for bad in (
        '<a href="data:text/html,x">',
        '<img src="https://tracker.example/p.gif">',
        '<div class="panel panel-primary">',
        '<p onclick="x()">',
    ):
        out = sanitize.clean_html(bad)
        assert not re.search(r"(href|src)=|class=|onclick", out), out


# ---- nothing in a notebook makes feedback fail (fast) ------------------------------------


def fuzz_notebooks():
    big = "x" * 1_000_000
    nested_html = "<div>" * 50_000 + "deep" + "</div>" * 50_000
    nested_md = "".join("  " * i + "- item\n" for i in range(3000))
    weird = "\ud800 lone surrogate \x00 NUL \u202e RTL \U0001f600 \ufeff BOM"
    cells = []
    out = new_code_cell(weird)
    out.outputs = [
        new_output("stream", name="stdout", text=big),
        new_output("display_data", data={"text/html": nested_html}),
        new_output("display_data", data={"text/markdown": nested_md}),
        new_output("display_data", data={"text/html": weird, "image/png": "%%%%"}),
        new_output("display_data", data={"image/jpeg": base64.b64encode(b"no jpeg").decode()}),
        new_output("display_data", data={"image/svg+xml": "<svg" * 10_000}),
    ]
    cells.append(out)
    cells.append(new_markdown_cell(nested_md))
    cells.append(new_markdown_cell(">" * 20_000 + " quoted"))
    cells.append(new_markdown_cell(weird + "\n\n$\\frac{1}{" * 2000))
    cells.append(new_markdown_cell("<" * 20_000 + "b" + ">" * 20_000))
    nb = nbformat.v4.new_notebook(cells=cells)
    raw = json.loads(json.dumps(nb))
    odd = raw["cells"][0]
    odd["execution_count"] = "<script>x</script>"
    odd["id"] = '"><script>x</script>'
    odd["metadata"] = {"tags": 7, "nbgrader": {"solution": True}}  # no grade_id
    odd["outputs"] += [
        {"output_type": "display_data", "data": "not a dict", "metadata": []},
        {"output_type": "display_data", "data": {"text/html": ["<b>", 3, None]}, "metadata": {}},
        {"output_type": "error", "ename": 1, "evalue": None, "traceback": [1, {"a": 2}]},
        {"output_type": "stream", "name": "<b>", "text": ["a", "b", 3]},
        {"output_type": "teleport", "data": {}},
        "not an output",
    ]
    raw["cells"].append({"cell_type": "heading", "source": "old", "metadata": {}})
    raw["cells"].append(
        {
            "cell_type": "markdown",
            "source": "att ![a](attachment:a.png)",
            "metadata": {},
            "attachments": {"a.png": {"image/png": "%%"}, "b": {"text/html": "<script>"}},
        }
    )
    raw["metadata"] = {"language_info": "not a dict", "widgets": 5}
    return raw


def test_the_linear_scans_find_what_the_regular_expressions_found():
    """sanitize._depth, feedback._html_text and feedback.blank_paths scan in one pass (the
    regular expressions they replace were quadratic in crafted text, see
    tests/test_review_covert.py): on thousands of short texts made of the characters that
    matter, they find exactly what those expressions found."""
    import html
    import random

    from autograder.feedback import pages as feedback

    tag = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*?(/?)>")
    material = re.compile(r"[^\s'\"]{0,300}/autograder-material/[0-9a-f]+")

    def depth(text):
        level = deepest = 0
        for closing, name, selfclosing in tag.findall(text):
            if name.lower() not in sanitize.VOID and not selfclosing:
                level += -1 if closing else 1
                deepest = max(deepest, level)
        return deepest

    rng = random.Random(20)
    pieces = ["/autograder-material/", "/autograder-material", "ab", "9", "x", " ", "'", "\n"]
    for _ in range(5000):
        text = "".join(
            rng.choice(rng.choice(["<>/ab ", "<>/aB1:-\"' \n", "<>/brdiv "]))
            for _ in range(rng.randint(0, 40))
        )
        assert sanitize._depth(text) == depth(text), text
        assert feedback._html_text(text) == html.unescape(re.sub(r"<[^>]+>", "", text)), text
        text = "".join(
            rng.choice([*pieces, "q" * rng.randint(0, 320)]) for _ in range(rng.randint(0, 12))
        )
        assert feedback.blank_paths(text) == material.sub("<course>", text), text


def test_no_notebook_content_makes_rendering_fail():
    started = time.monotonic()
    page = render(fuzz_notebooks())
    assert time.monotonic() - started < 90
    assert_inert(page)
    assert "lone surrogate" in page and "deep" in page and "quoted" in page
    page.encode("utf-8")  # what nbgrader writes


def test_the_preprocessor_never_fails_and_hides_grading_material():
    common = ROOT / "autograder" / "verdicts" / "hidden" / "common.py"
    quoted = new_markdown_cell("```\n" + common.read_text()[:2000] + "\n```")
    cell = new_code_cell("print(1)")
    cell.outputs = [
        new_output("stream", name="stdout", text=common.read_text()[:3000]),
        {"output_type": "stream", "text": None},
    ]
    nb = nbformat.from_dict(
        {"cells": [quoted, cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    )
    nb, _ = HideGraderMaterial().preprocess(nb, {})
    assert "removed from the feedback" in nb.cells[0].source
    assert nb.cells[1].outputs[0].text.strip() == REMOVED_OUTPUT
    assert "not shown" in nb.cells[1].outputs[1].text


# ---- the final page check: only what the grader controls --------------------------------


def test_page_check_catches_hidden_tests_and_pages_not_made_inert():
    source = nbformat.read(notebook_path(SOURCE, A), as_version=4)
    tests = sum(
        1
        for c in source.cells
        if c.metadata.get("nbgrader", {}).get("grade")
        and not c.metadata.get("nbgrader", {}).get("solution")
    )
    hidden = hidden_lines(str(SOURCE / A))
    assert hidden and tests
    assert any(BEGIN_HIDDEN in c.source for c in source.cells)
    good = render(source)
    assert check_page(good, hidden, tests) == ""
    leaky = exporter()
    leaky._preprocessors = [
        p for p in leaky._preprocessors if not isinstance(p, HideGraderMaterial)
    ]
    trouble = check_page(render(source, leaky), hidden, tests)
    assert "showed hidden tests" in trouble
    plain = render(source, exporter(inert_pages=False))
    assert "InertHTMLExporter" in check_page(plain, hidden, tests)
    # What a student writes cannot trip the check: a page full of it passes.
    nb = nbformat.from_dict(json.loads(json.dumps(source)))
    nb.cells[1:1] = [*payload_cells(), new_markdown_cell("\n".join(sorted(hidden)))]
    assert check_page(render(nb), hidden, tests) == ""


def test_page_check_passes_every_assignment_of_the_course():
    """Every test cell of every assignment is found in its page, none showing hidden tests."""
    from autograder.feedback.pages import _test_cells

    exp = exporter()
    for folder in sorted(p for p in SOURCE.iterdir() if p.is_dir() and p.name[0] != "."):
        for path in sorted(folder.glob("*.ipynb")):
            page = render(nbformat.read(path, as_version=4), exp)
            tests = _test_cells(path)
            assert tests and check_page(page, hidden_lines(str(folder)), tests) == "", path


# ---- end to end: grade, feedback, export (slow) ----------------------------------------------


def run(course: Path, *args, check_codes=(0, 1)):
    return autograder_cli(*args, cwd=course, timeout=900, codes=check_codes)


def evil_submission():
    """The solution, plus cells whose Markdown and outputs hold every payload (made by
    running code, as a student's notebook would), plus flagged code."""
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    code = f"""from IPython.display import HTML, SVG, Javascript, Markdown, display
display(HTML({json.dumps(MARKDOWN_PAYLOAD)}))
display(Javascript({json.dumps(PWN)}))
display(Markdown("*md* <script>" + {json.dumps(PWN)} + "</script>"))
display(SVG({json.dumps(SVG_PAYLOAD)}))
display({{"image/png": "1 onerror=x"}}, raw=True)
print("_grader_ _refgrad_ BEGIN HIDDEN TESTS load_grader( END HIDDEN TESTS")"""
    nb.cells[1:1] = [
        new_markdown_cell(MARKDOWN_PAYLOAD),
        new_markdown_cell("_grader_ and _refgrad_ and load_grader( here"),
        new_markdown_cell("BEGIN HIDDEN TESTS in a student's Markdown"),
        new_code_cell(code),
        new_code_cell("import gc\n\nn = len(gc.get_objects())"),
    ]
    return nb


def fuzz_submission():
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    code = """from IPython.display import HTML, Markdown, display
print("\\u202e odd \\U0001f600 unicode \\x00 " * 1000)
print("y" * 900_000)
display(HTML("<div>" * 20000 + "deep" + "</div>" * 20000))
display(Markdown("".join("  " * i + "- item\\n" for i in range(2000))))
display({"image/png": "%%% not base64", "text/plain": "broken image"}, raw=True)
display({"image/jpeg": "aGVsbG8="}, raw=True)
display({"text/html": "<b>ok</b>"}, metadata={"text/html": {"isolated": True}}, raw=True)"""
    nb.cells[1:1] = [
        new_code_cell(code),
        new_markdown_cell(">" * 5000 + " quoted"),
        new_markdown_cell("\U0001f600 fine emoji, \u202e bidi, \ud800 lone"),
    ]
    return nb


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    course = ScratchCourse(tmp_path_factory.mktemp("feedback") / "course", [A])
    root = course.path
    name = notebook_path(SOLUTIONS, A).name
    subs = {
        "correct": nbformat.read(notebook_path(SOLUTIONS, A), as_version=4),
        "evil": evil_submission(),
        "fuzz": fuzz_submission(),
    }
    for student, nb in subs.items():
        (root / "submitted" / student / A).mkdir(parents=True)
        # ASCII JSON, as some editors write it: "\ud800" stays a lone surrogate.
        (root / "submitted" / student / A / name).write_text(json.dumps(nb))
    grade = run(root, "grade", A, "--cell-timeout", "30")
    feedback = run(root, "feedback", check_codes=(0,))
    export = run(root, "export", check_codes=(0,))
    return {"root": root, "grade": grade, "feedback": feedback, "export": export}


@pytest.mark.slow
def test_feedback_pages_of_a_hostile_class_are_written_and_inert(graded_class):
    root = graded_class["root"]
    assert "3 page(s) written" in graded_class["feedback"].stdout
    for student in ("correct", "evil", "fuzz"):
        (page,) = (root / "feedback" / student / A).glob("*.html")
        text = page.read_text()
        assert_inert(text)
        assert inert.STAMP.split()[1] in text  # name="autograder-feedback"
    evil = next((root / "feedback" / "evil" / A).glob("*.html")).read_text()
    assert "<script>" in BeautifulSoup(evil, features="html.parser").get_text()
    assert "BEGIN HIDDEN TESTS" not in evil and "load_grader(" not in evil


@pytest.mark.slow
def test_flags_for_review_reach_the_record_the_table_and_grades_csv(graded_class):
    import csv

    root = graded_class["root"]
    rows = {
        r["student"]: r
        for r in csv.DictReader((root / "exports" / "grades.csv").open(encoding="utf-8"))
    }
    assert rows["correct"]["review"] == "" and rows["fuzz"]["review"] == ""
    # The evil student prints the words load_grader( and _refgrad_ too: each flag says
    # where (the cell of the notebook as handed in, the line of the cell) and its class.
    reasons = [
        "cell 5, line 7: mentions load_grader: the grader's code or files",
        "cell 5, line 7: mentions refgrad: the grader's code or files",
        "cell 6, line 3: calls gc.get_objects: introspection of the process",
    ]
    # gc.get_objects also reaches the probe (its tables, its key's frames): the probe's
    # guard refuses it, and every hidden test after it scores 0 and is flagged.
    review = rows["evil"]["review"].split("; ")
    assert review[:3] == reasons, review
    guard = review[3:]
    assert guard and all(
        "reached into the grading code" in r and "gc.get_objects" in r for r in guard
    ), guard
    assert f"flagged for review: {'; '.join(reasons)}" in rows["evil"]["note"]
    assert rows["evil"]["problem"] == "no" and float(rows["evil"]["score"]) == 0.0
    assert float(rows["correct"]["score"]) > 0
    record = json.loads((root / "autograded" / "evil" / A / ".autograder.json").read_text())
    assert record["review"][:3] == reasons and not record["problem"]
    assert "flagged for review: cell 5, line 7: mentions load_grader" in (
        graded_class["grade"].stdout
    )
    assert graded_class["grade"].returncode == 0  # a flag is not a problem
    evil = next((root / "feedback" / "evil" / A).glob("*.html")).read_text()
    assert "flagged for review" not in evil  # for instructors, not in the student's page


@pytest.mark.slow
@pytest.mark.browser
def test_no_injected_script_runs_in_a_browser(graded_class, tmp_path):
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (scripts/setup --test installs it)")
    root = graded_class["root"]
    pages = {s: next((root / "feedback" / s / A).glob("*.html")) for s in ("evil", "fuzz")}
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            context = browser.new_context()

            def offline(route):
                requests.append(route.request.url)
                if route.request.url.startswith(("file:", "data:")):
                    route.continue_()
                else:
                    route.abort()

            context.route("**/*", offline)
            dialogs: list[str] = []
            for student, path in pages.items():
                page = context.new_page()
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_timeout(1500)
                for img in page.query_selector_all("img"):  # hover/click handlers, if any
                    img.hover(timeout=2000)
                assert page.title() != "PWNED", student
                assert page.evaluate("typeof window.pwned") == "undefined", student
                if student == "evil":
                    drawn = page.evaluate("""() => [...document.images]
                        .filter(i => i.src.startsWith('data:image/svg+xml'))
                        .map(i => i.complete && i.naturalWidth > 0)""")
                    assert drawn and all(drawn), drawn  # graph drawings still display
                    page.screenshot(path=str(tmp_path / "evil.png"), full_page=False)
                page.close()
            assert dialogs == []
        finally:
            browser.close()
    assert not [u for u in requests if u.startswith("javascript:")]
