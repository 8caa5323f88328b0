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
import time

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


# ---- 6. a student's code costs only its own time -------------------------------------------

BUDGET = 1.5  # the test's time (GuardedExecute: what is left of the notebook's wall limit)
MARGIN = 3.0  # one answer's decoding and checks past the deadline, and the machine's noise


def judged(region_code: str, student: str, ask=None) -> tuple[api.Verdict, float]:
    """A region decided against a kernel that holds ``student``, within ``BUDGET``."""
    ns: dict = {}
    exec(student, ns)
    kernel = api.Kernel(ask or api.local_ask(ns), seed=5, timeout=1.0, budget=BUDGET)
    start = time.monotonic()
    verdict = region.verdict(
        region_code,
        kernel,
        exercises.CourseNotebook("test", names=region_names.exercise_names("Value")),
        "Value",
        "test_cell",
    )
    return verdict, time.monotonic() - start


def students_fault(verdict: api.Verdict, elapsed: float) -> None:
    assert elapsed <= BUDGET + MARGIN, elapsed
    assert not verdict.passed and not verdict.grader_error, verdict.message
    assert "course content error" not in verdict.message
    assert len(verdict.message) < 1500 and max(map(len, verdict.message.splitlines())) < 90
    assert verdict.plain is None or len(verdict.plain) < 1500


DATA = "class Value:\n    def __init__(self, x):\n        self.data = {data}\n"

HOSTILE_DATA = {
    # a failing == on the repr of 2 MB of distinct strings (each heard, each scrubbed)
    "huge repr": "[f'{i:06d}' + 'x' * 100 for i in range(20_000)]",
    "sets of frozensets": "{frozenset({1, 2}), frozenset({(3, frozenset({4}))})}",
    "frozenset keys": "{frozenset({1}): [1.0], (2, frozenset()): 2.0}",
    "numpy scalars in a set": "{__import__('numpy').float64(1.5), __import__('numpy').int64(2)}",
    "a frozenset of lists": "frozenset({type('L', (list,), {'__hash__': lambda s: 1})([1])})",
    "deep nesting": "__import__('functools').reduce(lambda a, _: [a], range(5000), [])",
    "deep dicts": "__import__('functools').reduce(lambda a, _: {'k': a}, range(500), {})",
    "a 10 MB string": "'s' * 10_000_000",
}


@pytest.mark.parametrize("kind", list(HOSTILE_DATA))
def test_whatever_data_the_kernel_sends_is_the_students_failure(kind):
    verdict, elapsed = judged(
        "assert Value(1.0).data == 2.0\n", DATA.format(data=HOSTILE_DATA[kind])
    )
    students_fault(verdict, elapsed)


def test_an_error_of_ten_megabytes_is_cut():
    student = "class Value:\n    def __init__(self, x):\n        raise ValueError('e' * 10**7)\n"
    verdict, elapsed = judged("assert Value(1.0).data == 2.0\n", student)
    students_fault(verdict, elapsed)
    assert "ValueError" in verdict.message


ONE_BY_ONE = """
class Value:
    def __init__(self, x):
        self.data = 0.0
    def parameters(self):
        __import__("time").sleep({pause})  # every replay pays it
        return [Value(0.0) for _ in range(100_000)]
"""


@pytest.mark.parametrize("pause", [0.0, 0.05])
def test_containers_that_need_one_round_trip_per_element(pause):
    """A loop that asserts as it goes asks the kernel once per element: 100,000
    elements stop at the round trips a test may make, or at its time, as the
    student's failure."""
    region_code = "for p in Value(1.0).parameters():\n    assert p.data == 0.0\n"
    verdict, elapsed = judged(region_code, ONE_BY_ONE.format(pause=pause))
    students_fault(verdict, elapsed)


def test_the_graders_own_work_on_kernel_data_is_timed():
    """The region's own loops over what the kernel sent (50,000 numbers, compared
    pairwise) end with the test's time."""
    student = DATA.format(data="list(range(50_000))")
    region_code = "xs = list(Value(1.0).data)\nassert all(x in xs for x in xs[::-1])\n"
    verdict, elapsed = judged(region_code, student)
    students_fault(verdict, elapsed)
    assert "ran out of its 2 s" in verdict.message


def test_a_kernel_that_stalls_in_every_reply():
    """Each request waits out its timeout: the test's requests in all stop at its
    budget, not at one timeout per request."""

    def stalling(request):
        time.sleep(request["timeout"])
        return {"timeout": request["timeout"]}

    region_code = "from gradekit import part\n" + "".join(
        f"with part('p{k}', 'Value.p{k}'):\n    assert Value({k}).data == {k}\n" for k in range(6)
    )
    verdict, elapsed = judged(region_code, "", ask=stalling)
    students_fault(verdict, elapsed)
    assert "did not finish within" in verdict.message or "ran out" in verdict.message


def test_a_kernel_that_loops_in_every_replay():
    student = "class Value:\n    def __init__(self, x):\n        while True:\n            pass\n"
    region_code = "from gradekit import part\n" + "".join(
        f"with part('p{k}', 'Value.p{k}'):\n    assert Value({k}).data == {k}\n" for k in range(6)
    )
    verdict, elapsed = judged(region_code, student)
    students_fault(verdict, elapsed)


def test_honest_data_still_passes_and_fails_as_before():
    student = DATA.format(data="{'a': {1, 2}, 'b': (frozenset({3}),), 'c': [x] * 3}")
    ok = "d = Value(1.5).data\nassert d == {'a': {1, 2}, 'b': (frozenset({3}),), 'c': [1.5] * 3}\n"
    verdict, _ = judged(ok, student)
    assert verdict.passed, verdict.message
    verdict, _ = judged("assert Value(1.5).data == {}\n", student)
    assert verdict.message.startswith("Value: `assert Value(1.5).data == {}`: got {'a':")
