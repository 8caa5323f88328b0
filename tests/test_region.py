"""Hidden tests written in the notebook (verdicts/region.py): run in the grader against
stand-ins of the student's objects, decided on plain data the probe sends.

The fast tests run a hidden region against a namespace in this process (the probe
answers from a fork, as in a kernel); the slow one adds a plain nbgrader test cell to
lesson 1 in a scratch course and grades real submissions with nbgrader's autograde."""

from __future__ import annotations

import json

import nbformat
import pytest
from helpers import ROOT, ScratchCourse, mutate

from autograder import markers, region_names
from autograder.verdicts import api, exercises, region

LESSON1 = ROOT / "source" / "01_value" / "value.ipynb"
PLAIN = (
    "a = Value(2.0)\nb = Value(-3.0)\nc = a * b\nc.grad = 1.0\nc._backward()\n"
    "assert a.grad == -3.0\nassert b.grad == 2.0\n"
)


@pytest.fixture(scope="module")
def course():
    return exercises.read(json.loads(LESSON1.read_text()))


def notebook(*names: str) -> exercises.CourseNotebook:
    """A notebook whose exercise defines ``names`` (and nothing else)."""
    return exercises.CourseNotebook("test", names=region_names.exercise_names(*names))


def solved_namespace() -> dict:
    nb = json.loads(LESSON1.read_text())
    ns: dict = {}
    for cell in nb["cells"]:
        if exercises.is_solution_cell(cell):
            exec(markers.solved("".join(cell["source"])), ns)
    return ns


def decide(code: str, ns: dict, course, name: str = "__mul__") -> api.Verdict:
    kernel = api.Kernel(api.local_ask(ns), seed=7)
    return region.verdict(code, kernel, course, name, "test_cell")


def with_code(ns: dict, code: str) -> dict:
    ns = dict(ns)
    exec(code, ns)
    return ns


SLIP_MUL = """
def __mul__(self, other):
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), "*")
    def _backward():
        self.grad += other.data * out.grad
        other.grad += other.data * out.grad
    out._backward = _backward
    return out
Value.__mul__ = __mul__
"""

# Objects that lie in every method a comparison could ask.
LIARS = """
class Any(float):
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __bool__(self): return True
    def __float__(self): return -3.0
    def __abs__(self): return 0.0
    def __lt__(self, other): return True
    def __sub__(self, other): return 0.0
    def __rsub__(self, other): return 0.0
    __hash__ = float.__hash__
class Value:
    def __init__(self, data, *rest):
        self.data = Any(0.0)
        self.grad = Any(0.0)
        self._backward = lambda: None
    def __mul__(self, other): return Value(0.0)
    __add__ = __radd__ = __rmul__ = __mul__
"""


def test_the_solution_passes_and_a_slip_fails_with_both_sides(course):
    assert decide(PLAIN, solved_namespace(), course).passed
    slip = decide(PLAIN, with_code(solved_namespace(), SLIP_MUL), course)
    assert not slip.passed and not slip.grader_error
    assert slip.message == "__mul__: `assert b.grad == 2.0`: got -3.0, expected 2.0"


@pytest.mark.parametrize(
    "check",
    [
        "assert a.grad == -3.0",  # __eq__
        "assert float(a.grad) == -3.0",  # __float__
        "assert a.grad",  # __bool__
        "assert abs(a.grad - -3.0) < 1e-9",  # __sub__, __abs__
        "assert abs(a.grad + 3.0) < 1e-9",  # __add__ on a liar
        "assert a.grad < 1",  # __lt__
        "assert a.grad in [-3.0]",  # __eq__ through `in`
        "assert round(a.grad) == -3",  # __round__
        "assert str(a.grad) == '-3.0'",  # __str__ / __format__
        "import math\nassert math.isclose(a.grad, -3.0)",  # __float__ through math
    ],
)
def test_objects_that_lie_prove_nothing(course, check):
    code = "a = Value(2.0)\nc = a * Value(-3.0)\nc.grad = 1.0\nc._backward()\n" + check
    verdict = decide(code, with_code({}, LIARS), course)
    assert not verdict.passed and not verdict.grader_error, verdict.message


def test_a_value_is_what_it_was_when_read(course):
    """Read once, a value stays what the kernel sent then: a grad that changes on a
    later read (or after a later step) does not change what the test already holds."""
    code = """
class Value:
    reads = 0
    def __init__(self, data):
        self.data = data
    @property
    def grad(self):
        Value.reads += 1
        return -3.0 if Value.reads == 1 else 99.0
"""
    ns = with_code({}, code)
    test = "a = Value(2.0)\ng = a.grad\nh = a.grad\nassert g == -3.0\nassert h == 99.0\n"
    assert decide(test, ns, notebook("Value")).passed
    lists = "class Box:\n    def __init__(self):\n        self.items = [1.0]\n"
    ns = with_code({}, lists)
    test = "b = Box()\nfirst = b.items\nb.items.append(2.0)\nassert first == [1.0]\n"
    assert decide(test, ns, notebook("Box")).passed


def test_what_the_kernel_never_sends_fails(course):
    ns = solved_namespace()
    verdict = decide("a = Value(2.0)\nassert a.missing == 1.0", ns, course)
    assert not verdict.passed and "AttributeError" in verdict.message
    verdict = decide("assert Value(2.0) == 2.0", ns, course)  # an object is no number
    assert not verdict.passed
    verdict = decide("assert Value.undefined_name.grad == 1.0", ns, course)
    assert not verdict.passed and "undefined_name" in verdict.message
    assert not verdict.grader_error


def test_an_engine_operation_that_answers_with_data_is_refused(course):
    code = LIARS + "Value.__sub__ = lambda self, other: 0.0\n"
    verdict = decide("assert abs(Value(1.0) - 5.0) < 1e-9", with_code({}, code), course)
    assert not verdict.passed and "gave plain data" in verdict.message


def test_errors_of_the_test_itself_are_course_content_errors(course):
    ns = solved_namespace()
    for code in (
        "import no_such_module",
        "assert (",
        "from gradekit import given\ngiven('Value.no_such_method')\n",
        "x = 1 / 0",
        "assert undefined_name.grad == 1.0",  # no cell of the notebook binds it
    ):
        verdict = decide(code, ns, course)
        assert verdict.grader_error and "course content error" in verdict.message, code


def test_parts_credit_each_function_and_given_isolates_a_bug(course):
    code = """
from gradekit import part
with part("__add__", "Value.__add__"):
    assert (Value(1.0) + Value(2.0)).data == 3.0
with part("__mul__", "Value.__mul__", given=["Value.__add__"]):
    c = Value(2.0) * Value(3.0) + Value(1.0)
    assert c.data == 7.0
"""
    bad_add = "Value.__add__ = lambda self, other: Value(0.0)\n"
    verdict = decide(code, with_code(solved_namespace(), bad_add), course)
    assert not verdict.passed and verdict.credit == 0.5
    assert verdict.message.startswith("__add__:")
    assert "credited: __mul__" in verdict.message


def test_raises_and_iteration(course):
    ns = solved_namespace()
    code = """
from gradekit import raises
with raises(TypeError):
    Value("two")
a = Value(2.0)
b = a * a
assert set(b._prev) == {a}
assert [p.data for p in b._prev] == [2.0]
assert len(b._prev) == 1
"""
    assert decide(code, ns, course).passed, decide(code, ns, course).message
    verdict = decide(
        "from gradekit import raises\nwith raises(TypeError):\n    Value(2.0)", ns, course
    )
    assert not verdict.passed and "should raise TypeError" in verdict.message


def test_the_reference_engine_and_random_inputs(course):
    code = """
from refgrad import Value as Ref
from gradekit import rng, expect_close
xs = [rng.uniform(-2, 2) for _ in range(8)]
outs = [Value(x) * Value(x) for x in xs]
for x, out in zip(xs, outs):
    expect_close(f"(x*x).data at x={x:.3g}", out.data, (Ref(x) * Ref(x)).data)
"""
    assert decide(code, solved_namespace(), course).passed
    slip = "Value.__mul__ = lambda self, other: Value(self.data + other.data)\n"
    verdict = decide(code, with_code(solved_namespace(), slip), course)
    assert "expected" in verdict.message and "got" in verdict.message


def test_a_course_notebook_says_what_each_test_grades(course):
    ex = course.exercises["value_test_arithmetic"]
    assert ex.targets == ("Value.__pow__", "Value.__neg__", "Value.__sub__", "Value.__truediv__")
    assert "self * -1" in course.given("Value.__neg__").source
    assert "BEGIN SOLUTION" not in course.given("Value.__add__").source


def plain_cell_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Lesson 1 with a plain nbgrader test cell after the + and * exercise."""
    at = next(
        i
        for i, c in enumerate(nb.cells)
        if c.metadata.get("nbgrader", {}).get("grade_id") == "value_test_add_mul"
    )
    cell = nbformat.v4.new_code_cell(
        "### BEGIN HIDDEN TESTS\n" + PLAIN + "### END HIDDEN TESTS\n",
        metadata={
            "nbgrader": {
                "grade": True,
                "grade_id": "value_test_plain",
                "locked": True,
                "points": 1,
                "schema_version": 3,
                "solution": False,
                "task": False,
            }
        },
    )
    nb.cells.insert(at + 1, cell)
    return nb


@pytest.mark.slow
def test_a_plain_nbgrader_hidden_test_is_decided_outside_the_kernel(tmp_path):
    course = ScratchCourse(tmp_path / "course", ["01_value"])
    source = course.path / "source" / "01_value" / "value.ipynb"
    nbformat.write(plain_cell_notebook(nbformat.read(source, as_version=4)), source)
    released = course.release("01_value")
    blank = nbformat.read(released / "value.ipynb", as_version=4)
    solved = nbformat.read(source, as_version=4)
    for cell in solved.cells:
        cell.source = markers.solved(cell.source)
    slip = mutate(
        solved, "other.grad += self.data * out.grad", "other.grad += other.data * out.grad"
    )
    liar = nbformat.read(released / "value.ipynb", as_version=4)
    liar.cells.append(nbformat.v4.new_code_cell(LIARS))
    at = next(i for i, c in enumerate(liar.cells) if "value_test_plain" in str(c.metadata))
    liar.cells.insert(at, liar.cells.pop())
    edited = nbformat.read(released / "value.ipynb", as_version=4)  # a region of its own
    for cell in edited.cells:
        if "value_test_plain" in str(cell.metadata):
            cell.source = "### BEGIN HIDDEN TESTS\nassert True\n### END HIDDEN TESTS\n"
    copied = nbformat.read(released / "value.ipynb", as_version=4)  # the test cell twice
    test_cell = next(c for c in copied.cells if "value_test_plain" in str(c.metadata))
    copied.cells.insert(0, nbformat.from_dict(dict(test_cell)))
    submissions = [("sol", solved), ("blank", blank), ("slip", slip), ("liar", liar)]
    submissions += [("edited", edited), ("copied", copied)]
    for student, nb in submissions:
        course.submit(student, "01_value", nb)
    scores = course.autograde("01_value")
    full = course.max_scores("01_value")
    assert scores["sol"] == full
    assert scores["blank"]["value_test_plain"] == 0
    assert scores["slip"]["value_test_plain"] == 0
    assert scores["liar"]["value_test_plain"] == 0
    assert scores["edited"]["value_test_plain"] == 0  # the course's region, not the file's
    assert scores["copied"].get("value_test_plain", 0) == 0


def test_slip_tables_skip_an_op_they_do_not_know():
    from autograder.verdicts.hidden.common import Program, Step
    from autograder.verdicts.hidden.diagnose import diagnose

    program = Program(1, [Step("softplus", (0,))])
    assert diagnose(program, [0.5], [0.1], methods=("softplus",)) is None


def test_a_replay_cannot_change_what_the_test_already_read(course):
    """Every request replays the steps in a fresh copy of the kernel; a grad that
    answers differently on the second replay does not change the first reading."""
    state: list[int] = []
    ns = with_code({"STATE": state}, "class Value:\n    grad = property(lambda self: len(STATE))\n")
    ask = api.local_ask(ns)

    def counting(request):
        state.append(1)  # each replay sees one more
        return ask(request)

    kernel = api.Kernel(counting, seed=3)
    code = (
        "a = Value()\ng = a.grad\nassert g == 1\nb = Value()\nassert b.grad == 2\nassert g == 1\n"
    )
    assert region.verdict(code, kernel, notebook("Value"), "grad", "x").passed
