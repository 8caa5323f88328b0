"""Hidden regions a submission cannot bend (issue 49, items 5 and 6).

- A region's free names are the exercise's only when the instructor notebook's solution,
  engine or setup cells give them (region_names.py); modules are the grader's own, and
  any other name (the kit's ``check``, a helper of the visible checks) is refused by
  ``generate`` and never bound to what the student's notebook made of it.
- A student's code costs only its own time: whatever the kernel sends (huge reprs, one
  round trip per element, sets the grader cannot hash, deep nesting, 10 MB strings,
  stalls), a verdict ends within the time the grader gives it plus a fixed margin, scores
  0 and blames the student's code, never the course.

Every kernel here is a namespace in this process (the probe answers from a fork, as in a
real kernel), or a fake ``ask`` that stalls: each test takes a second or two.
"""

from __future__ import annotations

import json

import nbformat
import pytest
from helpers import ROOT

from autograder import markers, region_names
from autograder.content import checks
from autograder.verdicts import api, exercises, region, selftest

LESSON1 = ROOT / "source" / "01_value" / "value.ipynb"


def lesson1(extra_setup: str = "") -> dict:
    """Lesson 1's instructor notebook, with one more setup cell before its first."""
    nb = json.loads(LESSON1.read_text())
    if extra_setup:
        nb["cells"].insert(0, nbformat.v4.new_code_cell(extra_setup))
    return nb


def namespace(nb: dict, stub: bool, code: str = "") -> dict:
    """The notebook's solution cells run (as the course solves them, or as nbgrader
    releases them), then ``code``: what a kernel holds at a test cell."""
    ns: dict = {}
    for cell in nb["cells"]:
        if exercises.is_solution_cell(cell):
            source = "".join(cell["source"])
            exec(selftest.stubbed(source) if stub else markers.solved(source), ns)
    exec(code, ns)
    return ns


def decide(code: str, ns: dict, course, timeout: float = 30.0) -> api.Verdict:
    kernel = api.Kernel(api.local_ask(ns), seed=11, timeout=timeout)
    return region.verdict(code, kernel, course, "__mul__", "test_cell")


# ---- 5. a region's names are the author's unless they are the exercise's ------------------

REBINDS = """
import types
_yes = lambda *args, **kwargs: True
math = types.SimpleNamespace(isclose=_yes, exp=lambda x: 1.0, sqrt=lambda x: 1.0)
np = types.SimpleNamespace(isclose=_yes, allclose=_yes, float64=float)
check = check_close = expect = passed = _yes
class Value:  # no engine at all: only the rebound helpers could pass it
    def __init__(self, data, *rest):
        self.data, self.grad = 0.0, 0.0
    def __mul__(self, other):
        return Value(0.0)
    def _backward(self):
        pass
"""

LIBRARY_REGION = """
from gradekit import rng
xs = [rng.uniform(0.5, 2.0) for _ in range(4)]
outs = []
for x in xs:
    a = Value(x)
    c = a * a
    c.grad = 1.0
    c._backward()
    outs.append((x, c.data, a.grad))
for x, data, grad in outs:
    assert math.isclose(data, x * x, rel_tol=1e-9)
    assert np.isclose(grad, 2 * x)
    assert math.sqrt(data) > 0
"""


def test_modules_are_the_graders_whatever_the_notebook_rebinds():
    """math and np in a region are the grader's imports: the course's solution passes,
    and a blank notebook that rebinds both (and the kit's helpers) scores 0, as the
    student's failure."""
    nb = lesson1("import numpy as np")
    course = exercises.read(nb)
    assert course.names.meaning("np").kind == region_names.MODULE
    assert decide(LIBRARY_REGION, namespace(nb, stub=False), course).passed
    for code in ("", REBINDS):
        verdict = decide(LIBRARY_REGION, namespace(nb, stub=True, code=code), course)
        assert not verdict.passed and not verdict.grader_error, verdict.message
        assert verdict.message.startswith("__mul__: `")


@pytest.mark.parametrize(
    ("region_code", "name"),
    [
        ("check(Value, 'a * b', {'a': 2.0, 'b': 3.0}, data=6.0)", "check"),
        ("expect(Value(2.0).data == 2.0, 'data')", "expect"),
        ("assert f(3.0) == 9.0", "f"),  # a function of a setup cell (the slope demo)
        ("assert helper_of_checks(Value) == 1", "helper_of_checks"),  # visible checks
        ("assert np.isclose((Value(2.0) * Value(3.0)).data, 6.0)", "np"),  # never imported
    ],
)
def test_a_name_that_is_not_the_exercises_is_refused(region_code, name):
    """The kit's helpers, a setup cell's function, a name only the visible checks bind
    and a name no cell binds: a blank notebook that rebinds them earns nothing (the
    region is the course's mistake, a content error at grading), and ``generate``
    refuses the region in one line that names the name and its line."""
    nb = lesson1()
    test = next(c for c in nb["cells"] if exercises.is_test_cell(c))
    test["source"] = "helper_of_checks = lambda V: 1\n" + "".join(test["source"])
    course = exercises.read(nb)
    blank = namespace(nb, stub=True, code=REBINDS + f"\n{name} = _yes\n")
    verdict = decide(region_code, blank, course)
    assert not verdict.passed and verdict.grader_error, verdict.message
    assert f"`{name}`" in verdict.message
    found = checks.region_problems(region_code, course.names)
    assert len(found) == 1 and f"uses `{name}`" in found[0] and "line 1" in found[0], found
    assert "\n" not in found[0]


def test_generate_refuses_a_region_in_visible_check_style(tmp_path):
    """checks.problems (what ``generate`` runs first) names the notebook, the cell, the
    line and the name."""
    nb = lesson1()
    at = next(i for i, c in enumerate(nb["cells"]) if exercises.is_test_cell(c))
    cell = nb["cells"][at]
    visible = markers.visible("".join(cell["source"]))
    cell["source"] = (
        f"{visible}\n### BEGIN HIDDEN TESTS\nimport math\nassert math.exp(0) == 1\n"
        "check(Value, 'a + b', {'a': 1.0, 'b': 2.0}, data=3.0)\n### END HIDDEN TESTS\n"
    )
    folder = tmp_path / "source" / "01_value"
    folder.mkdir(parents=True)
    (folder / "value.ipynb").write_text(json.dumps(nb))
    found = checks.problems("01_value", lambda a: set(), tmp_path / "source")
    found = [p for p in found if "`" in p]
    gid = cell["metadata"]["nbgrader"]["grade_id"]
    assert found == [
        f"source/01_value/value.ipynb, cell {at + 1} ({gid}): line 3 of its hidden test uses "
        "`check`, a kit helper (imported in cell 2): not the exercise's, so a submission "
        "could rebind it (docs/authoring.md, the region's names)"
    ]


def test_the_course_regions_use_only_exercise_names_and_modules():
    """Every region of the course's notebooks passes the new check (nothing refused)."""
    for path in sorted((ROOT / "source").glob("*/*.ipynb")):
        nb = json.loads(path.read_text())
        course = exercises.read(nb)
        for ex in course.exercises.values():
            if not markers.is_pointer(ex.hidden):
                assert checks.region_problems(ex.hidden, course.names) == [], (path, ex)
