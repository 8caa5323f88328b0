"""Engines in the styles students copy, pasted into the lessons' solution cells (issue 29):
correct ones get full marks in any style; a structure the grader cannot read gets a
visible ✗ and messages that name it; no hint names a wrong cause.

Each engine (its code: tests/pasted_engines.py) replaces whole solution cells of the
instructor notebook, as a student pasting over a stub does. Its notebook runs once, as
grading runs it (the cell tagged ``engine`` is the course's engine, demonstrations are
skipped, a failing cell does not stop the rest): the visible check of every test cell is
run, and the hidden test of each exercise the engine lists. Each exercise then has three
expectations, each its own test: its score (full marks, or the share of its functions
that are right), whether its visible check fails, and the words its messages must and
must not contain.
"""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import Callable
from dataclasses import dataclass, field

import matplotlib
import nbformat
import pasted_engines as pe
import pytest
from helpers import SOURCE, code_of, grade_id, is_demo, is_test_cell, lesson_path, read, verdict_of

matplotlib.use("Agg")  # lesson 1 draws graphs; no window while testing

# The slip hints that blame a _backward for what the grader's own walk could not reach.
SLIPS = ("gets no gradient", "must update both operands", "use += in _backward")
ORDER = "copied in parameters() order"


@dataclass(frozen=True)
class Expect:
    """What an exercise of a pasted engine must get. ``credit``: 1.0 is full marks,
    otherwise the share earned (the functions of the exercise that are right); ``must``:
    words the hidden message contains; ``visible_must``: words the visible check's
    message contains; ``must_not``: words neither message contains."""

    credit: float = 1.0
    visible_fails: bool = False
    must: tuple[str, ...] = ()
    visible_must: tuple[str, ...] = ()
    must_not: tuple[str, ...] = ()


FULL = Expect()


@dataclass(frozen=True)
class Engine:
    name: str
    assignment: str
    cells: dict[str, str | Callable[[str], str]]  # solution cell: its new source (or how
    # to make it from the instructor's)
    expect: dict[str, Expect]  # test cell's grade id: what it must get
    styles: str = ""
    xfail: dict[tuple[str, str], str] = field(default_factory=dict)  # (cell, aspect): why


# ---- the engines --------------------------------------------------------------------------

V = "01_value"
ADD, HAND, ARITH, REFL = (
    "value_test_add_mul",
    "value_test_hand_backprop",
    "value_test_arithmetic",
    "value_test_reflected",
)
ARITH_OPS = "__pow__, __neg__, __sub__ and __truediv__"
REFL_OPS = "__radd__, __rmul__, __rsub__ and __rtruediv__"


# A lesson 1 exercise on a Value whose parents are not in ``_prev``: the grader cannot see
# its graph, and both checks say so.
PREV_MISSING = Expect(
    credit=0.0,
    visible_fails=True,
    must=("_prev",),
    visible_must=("_prev",),
    must_not=SLIPS,
)


B = "02_backward"
TOPO, BACKWARD, ZERO = (
    "backward_test_topological_order",
    "backward_test_backward",
    "backward_test_zero_grad",
)
T = "03_activations"
TANH, RELU, EXPLOG, NEURON3 = (
    "act_test_tanh",
    "act_test_relu",
    "act_test_exp_log",
    "act_test_neuron",
)
M = "05_mlp"
NEURON, MLP, LINEAR = "mlp_test_neuron", "mlp_test_mlp", "mlp_test_linear"

ENGINES = [
    Engine(
        "lecture class",
        V,
        {
            "value_add_mul": pe.LECTURE_VALUE,
            "value_arithmetic": pe.IN_THE_CLASS.format(ARITH_OPS),
            "value_reflected": pe.IN_THE_CLASS.format("__radd__ and __rmul__"),
        },
        {
            ADD: FULL,
            HAND: FULL,
            ARITH: FULL,
            # __radd__ and __rmul__ are right: half the exercise
            REFL: Expect(credit=0.5, visible_fails=True, must=("__rsub__",), must_not=SLIPS),
        },
        "a class pasted whole; parents as a set; __pow__(self, other); recursive "
        "backward() with its own sort; no __rsub__ or __rtruediv__",
    ),
    Engine(
        "repository class",
        V,
        {
            "value_add_mul": pe.REPO_VALUE,
            "value_arithmetic": pe.IN_THE_CLASS.format(ARITH_OPS),
            "value_reflected": pe.IN_THE_CLASS.format(REFL_OPS),
        },
        {ADD: FULL, HAND: FULL, ARITH: FULL, REFL: FULL},
        "a class pasted whole; int grads; every reflected op; recursive backward()",
    ),
    Engine(
        "parents as _children",
        V,
        {"value_add_mul": pe.CHILDREN_VALUE},
        {
            ADD: PREV_MISSING,
            HAND: FULL,
            ARITH: PREV_MISSING,
            REFL: PREV_MISSING,
        },
        "a class pasted whole keeping its parents in _children, with its own backward()",
    ),
    Engine(
        "parents as parents",
        V,
        {"value_add_mul": pe.PARENTS_VALUE},
        {
            ADD: PREV_MISSING,
            HAND: FULL,
            ARITH: PREV_MISSING,
            REFL: PREV_MISSING,
        },
        "a class pasted whole keeping its parents in a list named parents; no backward()",
    ),
    Engine(
        "tuple with repeats",
        V,
        {
            "value_add_mul": pe.TUPLE_VALUE,
            "value_arithmetic": pe.TUPLE_ARITHMETIC,
            "value_reflected": pe.TUPLE_REFLECTED,
        },
        {ADD: FULL, HAND: FULL, ARITH: FULL, REFL: FULL},
        "parents as the tuple given ((a, a) for a * a); own closures for -, / and neg; "
        "__pow__(self, other); a helper wraps numbers",
    ),
    Engine(
        "Enum labels",
        V,
        {"value_add_mul": pe.ENUM_VALUE},
        {ADD: FULL, HAND: FULL, ARITH: FULL, REFL: FULL},
        "op labels as an Enum; parents as a list named children; int grads; numbers "
        "wrapped only when int or float; the lesson's own later cells",
    ),
    Engine(
        "reflected ops begun with __rsub__",
        V,
        {"value_reflected": pe.RSUB_FIRST_REFLECTED},
        {
            # nothing right yet, but not a blank cell either: every part's verdict shows
            REFL: Expect(
                credit=0.0,
                visible_fails=True,
                must=("`__rsub__`", "not written yet: `__radd__`, `__rmul__`, `__rtruediv__`"),
                must_not=SLIPS,
            ),
        },
        "__rsub__ written as self - other; the other reflected ops still the stub's",
    ),
    Engine(
        "__pow__(self, other) in the stub",
        V,
        {"value_arithmetic": pe.pow_named_other},
        {ARITH: FULL},
        "a __pow__ body using `other` pasted into the stub's solution region, its def "
        "line renamed to match",
    ),
    Engine(
        "recursive backward",
        B,
        {
            "backward_topological_order": pe.RECURSIVE_TOPOLOGICAL_ORDER,
            "backward_backward": pe.RECURSIVE_BACKWARD,
        },
        {TOPO: FULL, BACKWARD: FULL, ZERO: FULL},
        "backward() with its own recursive sort and self.grad = 1 (an int)",
    ),
    Engine(
        "tanh by exp(2x)",
        T,
        {"act_tanh": pe.TANH_EXP_FORMULA, "act_exp_log": pe.EXP_ONLY},
        {
            TANH: Expect(
                credit=0.0,
                visible_fails=True,
                must=("OverflowError", "large inputs"),
                visible_must=("OverflowError",),
                must_not=("tanh'(x)",),
            ),
            # exp is right, log missing: exp's share
            EXPLOG: Expect(credit=0.5, visible_fails=True, must=("log",), must_not=("`exp`:",)),
            NEURON3: FULL,
        },
        "tanh by (e^2x - 1) / (e^2x + 1), which overflows at 1000; exp as in the lecture, "
        "log never written",
    ),
    Engine(
        "tanh by exp(-2|x|)",
        T,
        {
            "act_tanh": pe.TANH_STABLE_FORMULA,
            "act_relu": pe.RELU_MAX,
            "act_exp_log": pe.EXP_AND_TERSE_LOG,
            "act_neuron": pe.SUM_NEURON,
        },
        {
            TANH: FULL,
            RELU: FULL,
            # exp is right, log's ValueError does not name the value: exp's share
            EXPLOG: Expect(
                credit=0.5,
                visible_fails=True,
                must=("log", "ValueError"),
                must_not=("`exp`:",),
            ),
            NEURON3: FULL,
        },
        "tanh by a formula that cannot overflow; relu by max(0, x); exp by math.e ** x; "
        "a log whose ValueError does not name the value; a neuron by sum()",
    ),
    Engine(
        "repository nn",
        M,
        {"mlp_neuron": pe.REPO_MODULE_NEURON, "mlp_mlp": pe.REPO_LAYER_MLP},
        {NEURON: FULL, MLP: FULL, LINEAR: FULL},
        "Module, Neuron, Layer and MLP as in the repositories: int grads, sum() for w·x",
    ),
    Engine(
        "Layer drops keyword arguments",
        M,
        {"mlp_neuron": pe.REPO_MODULE_NEURON, "mlp_mlp": pe.KWARGS_DROPPED_LAYER_MLP},
        {
            NEURON: FULL,
            # MLP is right; only Layer loses its share
            MLP: Expect(
                credit=0.5,
                visible_fails=True,
                must=("keyword argument", "relu"),
                must_not=(ORDER,),
            ),
            LINEAR: FULL,
        },
        "Layer(nin, nout, **kwargs) that builds Neuron(nin): relu where nonlin=False",
    ),
    Engine(
        "Layer without keyword arguments",
        M,
        {"mlp_neuron": pe.REPO_MODULE_NEURON, "mlp_mlp": pe.NO_KWARGS_LAYER_MLP},
        {
            NEURON: FULL,
            # MLP is right; only Layer loses its share
            MLP: Expect(credit=0.5, visible_fails=True, must=("nonlin",), must_not=(ORDER,)),
            LINEAR: FULL,
        },
        "the lecture's Layer(nin, nout), which takes no nonlin, under the lessons' MLP",
    ),
    Engine(
        "tanh Neuron",
        M,
        {"mlp_neuron": pe.TANH_MODULE_NEURON, "mlp_mlp": pe.REPO_LAYER_MLP},
        {
            # Module's parameters() and zero_grad() are right: two of three shares
            NEURON: Expect(
                credit=2 / 3,
                visible_fails=True,
                must=("tanh where relu is asked",),
                must_not=(ORDER,),
            ),
            # right, but its visible check runs on the student's own Neuron (the course's
            # is not shown before the check has run): ✗ there, full marks hidden
            MLP: Expect(visible_fails=True),
            LINEAR: FULL,
        },
        "the lecture's Neuron, squashing with tanh where relu is asked",
    ),
    Engine(
        "tanh Neuron under the stub's Module",
        M,
        {"mlp_neuron": pe.STUB_MODULE_TANH_NEURON, "mlp_mlp": pe.REPO_LAYER_MLP},
        {
            # Module still the stub's: no share, but the Neuron's own slip is named
            NEURON: Expect(
                credit=0.0,
                visible_fails=True,
                must=(
                    "tanh where relu is asked",
                    "not written yet: `Module.parameters`, `Module.zero_grad`",
                ),
                must_not=(ORDER,),
            ),
        },
        "the lecture's Neuron pasted under Module's stub (parameters, zero_grad unwritten)",
    ),
    Engine(
        "forward() nn",
        M,
        {
            "mlp_neuron": pe.FORWARD_MODULE_NEURON,
            "mlp_mlp": pe.FORWARD_LAYER_MLP,
            "mlp_linear": pe.FORWARD_LINEAR_SEQUENTIAL,
        },
        # a Layer calling forward() on its neurons runs on the student's Neuron (it passed)
        {NEURON: FULL, MLP: FULL, LINEAR: FULL},
        "PyTorch's style: Module.__call__ runs forward(), modules call forward() inside",
    ),
    Engine(
        "Linear with relu",
        M,
        {
            "mlp_neuron": pe.REPO_MODULE_NEURON,
            "mlp_mlp": pe.REPO_LAYER_MLP,
            "mlp_linear": pe.RELU_LINEAR_SEQUENTIAL,
        },
        {
            NEURON: FULL,
            MLP: FULL,
            # Sequential is right (checked on the course's Linear): half the exercise
            LINEAR: Expect(
                credit=0.5,
                visible_fails=True,
                must=("a Linear has no", "credited: `Sequential`"),
                must_not=(ORDER,),
            ),
        },
        "a Linear that applies relu, under a right Sequential",
    ),
    Engine(
        "Module without zero_grad",
        M,
        {"mlp_neuron": pe.MLP_ZERO_GRAD_MODULE_NEURON, "mlp_mlp": pe.REPO_LAYER_MLP},
        {
            # parameters() and Neuron are right (Neuron checked on the course's zero_grad)
            NEURON: Expect(
                credit=2 / 3,
                visible_fails=True,
                must=("zero_grad", "credited: `Module.parameters`, `Neuron`"),
                visible_must=("zero_grad",),
            ),
            MLP: FULL,
            LINEAR: FULL,
        },
        "a tutorial's Module with parameters() only",
    ),
]


# ---- running an engine's notebook once ------------------------------------------------------


@dataclass
class Graded:
    visible: dict[str, str]  # test cell: its visible check's message ("" when it passed)
    hidden: dict[str, object]  # test cell: the hidden test's Verdict


def pasted(engine: Engine) -> nbformat.NotebookNode:
    """The instructor notebook with the engine's code over whole solution cells."""
    nb = read(SOURCE, engine.assignment)
    cells = {grade_id(c): c for c in nb.cells if c.cell_type == "code"}
    for cell_id, source in engine.cells.items():
        assert cells[cell_id].metadata["nbgrader"]["solution"], cell_id
        old = cells[cell_id].source
        cells[cell_id].source = source(old) if callable(source) else source
    return nb


@functools.cache
def graded(name: str) -> Graded:
    """Run the engine's notebook as grading does, carrying on past failures: every test
    cell's visible check, then the hidden test of each exercise the engine lists, on the
    namespace as it is right after the check (as the grader asks it)."""
    from autograder.verdicts import api as verdicts

    engine = next(e for e in ENGINES if e.name == name)
    nb = pasted(engine)
    course_engine = verdicts.engine_code(engine.assignment)
    ns: dict = {"__name__": "__main__"}
    passed: set[str] = set()  # the exercises passed so far, as grading keeps them
    result = Graded({}, {})
    with lesson_path(engine.assignment):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or is_demo(cell):
                continue
            code = code_of(cell)
            if "engine" in cell.metadata.get("tags", []) and course_engine is not None:
                code = course_engine  # grading runs the course's earlier lessons here
            error = ""
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code, f"<cell {i}>", "exec"), ns)
            except Exception as exc:
                error = str(exc) or type(exc).__name__
            if is_test_cell(cell):
                result.visible[grade_id(cell)] = error
                if grade_id(cell) in engine.expect:
                    result.hidden[grade_id(cell)] = verdict_of(
                        ns, engine.assignment, grade_id(cell), passed=passed
                    )
    return result


# ---- the expectations, one test each --------------------------------------------------------


ASPECTS = ("score", "visible", "visible words", "hidden words")


def _aspects(want: Expect) -> list[str]:
    aspects = ["score", "visible"]
    if want.visible_must or (want.visible_fails and want.must_not):
        aspects.append("visible words")
    if want.must or (want.credit < 1.0 and want.must_not):
        aspects.append("hidden words")
    return aspects


def _cases():
    for engine in ENGINES:
        for cell, want in engine.expect.items():
            for aspect in _aspects(want):
                reason = engine.xfail.get((cell, aspect))
                marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
                yield pytest.param(
                    engine.name, cell, aspect, marks=marks, id=f"{engine.name}-{cell}-{aspect}"
                )


def _expect(name: str, cell: str) -> Expect:
    return next(e for e in ENGINES if e.name == name).expect[cell]


def _words(message: str, what: str, must: tuple[str, ...], must_not: tuple[str, ...]) -> None:
    assert all(len(line) < 90 for line in message.splitlines()), message
    for word in must:
        assert word in message, f"{word!r} not in the {what}:\n{message}"
    for word in must_not:
        assert word not in message, f"{word!r} in the {what}:\n{message}"


@pytest.mark.parametrize("name, cell, aspect", list(_cases()))
def test_pasted_engine(name, cell, aspect):
    want = _expect(name, cell)
    result = graded(name)
    verdict, visible = result.hidden[cell], result.visible[cell]
    if aspect == "score":
        assert not verdict.grader_error, verdict.message
        if want.credit == 1.0:
            assert verdict.passed, verdict.message
        else:
            assert not verdict.passed
            assert getattr(verdict, "credit", 0.0) == pytest.approx(want.credit), verdict.message
    elif aspect == "visible":
        assert bool(visible) == want.visible_fails, visible or "the visible check passed"
    elif aspect == "visible words":
        _words(visible, "visible check's message", want.visible_must, want.must_not)
    else:
        _words(verdict.message, "hidden message", want.must, want.must_not)


def test_engines_replace_whole_solution_cells():
    """Every pasted cell is a solution cell of its lesson, and every engine's expectations
    name test cells of that lesson."""
    for engine in ENGINES:
        nb = read(SOURCE, engine.assignment)
        ids = {grade_id(c): c for c in nb.cells if c.cell_type == "code" and grade_id(c)}
        for cell in engine.cells:
            assert ids[cell].metadata["nbgrader"].get("solution"), (engine.name, cell)
        for cell in engine.expect:
            assert is_test_cell(ids[cell]), (engine.name, cell)
        for cell, aspect in engine.xfail:
            assert aspect in _aspects(engine.expect[cell]), (engine.name, cell, aspect)
