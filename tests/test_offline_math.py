"""Math in feedback pages (and the formgrader) without a network: LaTeX in markdown cells
becomes MathML, and the pages load no MathJax (autograder/feedback/offline_math.py)."""

from __future__ import annotations

import re

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE, ScratchCourse, read
from traitlets.config import Config

from autograder.course import assignments
from autograder.feedback import offline_math

FORMULA = re.compile(r"\$\$.+?\$\$|(?<![\\$])\$[^$\n]+\$", re.S)
MATHJAX_SCRIPT = re.compile(r"<script[^>]+(mathjax|MathJax)[^>]*>")


def test_formulas_become_mathml_and_code_is_left_alone():
    text = (
        "The chain rule: $$\\frac{dL}{da} = \\frac{dL}{dc} \\cdot \\frac{dc}{da}$$ and "
        'inline $w_i x_i$, but not `$HOME` in code,\n\n```\nprice = "$5 and $6"\n```\n'
        "nor an escaped \\$5."
    )
    out = offline_math.markdown_with_mathml(text)
    assert out.count("<math") == 2 and 'display="block"' in out
    assert "`$HOME`" in out and 'price = "$5 and $6"' in out and "\\$5" in out
    assert "\\frac" not in out and "w_i" not in out


def test_mathml_text_is_inert_markdown():
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    html = markdown2html_mistune(offline_math.markdown_with_mathml("$a * b * c < d_{12}$"))
    assert "<em>" not in html and "&lt;" in html and "&amp;#" not in html
    assert html.count("<math") == 1


def test_a_formula_that_cannot_be_read_stays_latex_in_code():
    assert offline_math.to_mathml("\\frac{1}{", False).startswith("<code>")


@pytest.mark.parametrize("assignment", assignments())
def test_every_formula_of_the_lessons_converts(assignment):
    for path in (SOURCE / assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            for formula in FORMULA.findall(cell.source):
                tex = formula.strip("$")
                out = offline_math.to_mathml(tex, formula.startswith("$$"))
                assert out.startswith("<math"), f"{path.name}: {formula!r} did not convert"


def test_the_course_config_sets_up_offline_math():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert config.HTMLExporter.preprocessors == ["autograder.feedback.offline_math.MathToMathML"]
    assert config.HTMLExporter.extra_template_basedirs[0] == offline_math.TEMPLATES


def test_an_exported_lesson_has_mathml_and_no_mathjax():
    from nbconvert import HTMLExporter

    c = Config()
    offline_math.configure(c)
    c.HTMLExporter.template_name = "classic"
    nb = read(SOLUTIONS, "03_activations")
    formulas = sum(len(FORMULA.findall(c.source)) for c in nb.cells if c.cell_type == "markdown")
    body, _ = HTMLExporter(config=c).from_notebook_node(nb)
    assert body.count("<math") == formulas > 5
    assert not MATHJAX_SCRIPT.search(body) and "$$" not in body


@pytest.mark.slow
def test_nbgrader_feedback_pages_have_mathml_and_load_no_mathjax(tmp_path):
    """Real nbgrader: autograde the first lesson's blank release, generate feedback."""
    assignment = assignments()[0]
    course = ScratchCourse(tmp_path, [assignment])
    course.release(assignment)
    course.submit("student", assignment, read(NOTEBOOKS, assignment))
    course.autograde(assignment)
    course.nbgrader("generate_feedback", assignment, "--force")
    (page,) = (tmp_path / "feedback" / "student" / assignment).glob("*.html")
    body = page.read_text()
    assert "<math" in body and "\\frac" not in body
    assert not MATHJAX_SCRIPT.search(body), MATHJAX_SCRIPT.search(body)
