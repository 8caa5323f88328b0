"""Feedback pages of exercises graded in parts (issue 42), from a real grading and
``python -m autograder feedback`` in a scratch course: every part's verdict is in the
page, and a cell whose visible check failed above hidden tests that gave points says
why the two differ, next to the cell.

- "floats": lesson 1's ``__add__`` wraps only floats. Exercise 1 loses ``__add__``'s
  share; exercises 3 and 4 fail their visible checks (which run the student's ``+``)
  and pass their hidden tests (on the course's): full points, and the page says so.
- "rsub": ``__rsub__`` swapped: exercise 4's visible check fails, its hidden tests
  credit the three other reflected operations, and the page names them.
- "begun": ``__rsub__`` written wrong, the other reflected operations still the stub's:
  no share, and the page still names ``__rsub__``'s slip and the parts not written.
"""

from __future__ import annotations

import json

import nbformat
import pasted_engines as pe
import pytest
from bs4 import BeautifulSoup
from helpers import SOLUTIONS, ScratchCourse, autograder_cli, grade_id, mutate, notebook_path

A = "01_value"
ADD, ARITH, REFL = "value_test_add_mul", "value_test_arithmetic", "value_test_reflected"
WRAP = "other = other if isinstance(other, Value) else Value(other)"
FLOATS_ONLY = "other = Value(other) if isinstance(other, float) else other"
ADD_WRAP = f'{WRAP}\n        out = Value(self.data + other.data, (self, other), "+")'
STOPPED = "The visible check above failed"
FULL = "they passed, for full points."

# One graded class for the module (its fixture), on one worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("feedback_parts")]


def submissions() -> dict[str, nbformat.NotebookNode]:
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    begun = nbformat.from_dict(solution)
    (cell,) = [c for c in begun.cells if grade_id(c) == "value_reflected"]
    cell.source = pe.RSUB_FIRST_REFLECTED
    return {
        "floats": mutate(solution, ADD_WRAP, ADD_WRAP.replace(WRAP, FLOATS_ONLY)),
        "rsub": mutate(solution, "return Value(other) - self", "return self - other"),
        "begun": begun,
    }


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, dict[str, str]]:
    """{student: {test cell: the words of its part of the page}}."""
    course = ScratchCourse(tmp_path_factory.mktemp("parts") / "course", [A])
    root = course.path
    name = notebook_path(SOLUTIONS, A).name
    for student, nb in submissions().items():
        (root / "submitted" / student / A).mkdir(parents=True)
        (root / "submitted" / student / A / name).write_text(json.dumps(nb))
    autograder_cli("grade", A, "--cell-timeout", "30", cwd=root, timeout=900, codes=(0, 1))
    autograder_cli("feedback", cwd=root, timeout=900, codes=(0,))
    out = {}
    for student in submissions():
        (page,) = (root / "feedback" / student / A).glob("*.html")
        out[student] = cells_of(page.read_text())
    return out


def cells_of(page: str) -> dict[str, str]:
    """{test cell's grade id: its words in the page, from its label to the next cell's}."""
    words = " ".join(BeautifulSoup(page, "html.parser").get_text(" ").split())
    parts = words.split("Grade cell: ")[1:]
    return {part.split()[0]: part for part in parts}


def test_a_visible_failure_above_a_full_hidden_pass_says_why(pages):
    for cell in (ARITH, REFL):
        text = pages["floats"][cell]
        assert "✓ hidden tests: passed" in text, text
        assert STOPPED in text and FULL in text, text
        assert "on the course's version of what it builds on" in text, text
        assert "comes from __add__, lesson 1's exercise 1" in text, text  # the visible check


def test_a_visible_failure_above_shares_names_what_each_part_earned(pages):
    text = pages["rsub"][REFL]
    assert STOPPED in text, text
    assert "credited `__radd__`, `__rmul__`, `__rtruediv__` (3 of 4 shares of the points)" in text
    text = pages["floats"][ADD]
    assert "`__add__`: Value(" in text and "(an int on the right)" in text, text
    assert "credited `__mul__` (1 of 2 shares of the points)" in text, text
    for cell in (ADD, ARITH):  # right everywhere: no note
        assert STOPPED not in pages["rsub"][cell], pages["rsub"][cell]


def test_a_part_written_wrong_beside_stubs_is_named_in_the_page(pages):
    text = pages["begun"][REFL]
    assert "`__rsub__`: 2 - x0 should be" in text, text
    assert "not written yet: `__radd__`, `__rmul__`, `__rtruediv__`" in text, text
    assert STOPPED not in text, text  # no points: nothing to reconcile
