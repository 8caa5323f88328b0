"""Problem set 1 (07_set_gradients): the hidden tests pass correct work, written any way,
and catch the classic slips, each in the cell of its exercise and only there; the key of
the faulty engine never enters the kernel nor the released notebook, and the feedback on
a fault the student has not touched does not name its operation.
"""

from __future__ import annotations

import importlib
import itertools
import random
from pathlib import Path

import nbformat
import pytest
from catalogue import assert_catches, assert_passes, find, flat, graded, hidden_message, ids
from gradients_slips import (
    ACCUMULATE,
    BUGS,
    CE,
    CHECK,
    DERIVATIVE,
    EXERCISES,
    FAULTY,
    FIXES,
    KEY,
    NAMES,
    PITFALLS,
    REFLECTED,
    SOFTMAX,
    VARIANTS,
)
from helpers import (
    NOTEBOOKS,
    SOURCE,
    assert_blank_fails_each,
    grade_id,
    mutate,
    read,
    run_cells,
    verdict_of,
)

from autograder.verdicts import answers
from autograder.verdicts.probe import kernel_code

A = "07_set_gradients"
hidden = importlib.import_module("autograder.verdicts.hidden.07_set_gradients")
faults = importlib.import_module("autograder.verdicts.hidden.sg_faults")
gradcheck = importlib.import_module("autograder.verdicts.hidden.sg_gradcheck")
common = importlib.import_module("autograder.verdicts.hidden.common")


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS: dict[str, str] = {}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A, visible=True)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_slip(solution, name, old, new, cells):
    assert_catches(mutate(solution, old, new), A, cells, names=NAMES)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    assert_passes(mutate(solution, old, new), A, visible=True)


def bug(name: str) -> tuple[str, str]:
    return find(BUGS, name)[1:3]


MESSAGES = [
    ("softmax without the shift", SOFTMAX, "subtract the max"),
    ("softmax with a plain-number denominator", SOFTMAX, "denominator must be a Value"),
    ("softmax not normalized", SOFTMAX, "divide each exp by their sum"),
    ("softmax returns numbers", SOFTMAX, "should return Values"),
    ("cross-entropy computed naively", CE, "log-sum-exp"),
    ("cross-entropy as -log of a stable softmax", CE, "log-sum-exp"),
    ("cross-entropy not averaged", CE, "MEAN over the batch"),
    ("cross-entropy averaged over the classes", CE, "divide by the batch size"),
    ("cross-entropy with the sign flipped", CE, "sign is flipped"),
    ("cross-entropy forgets to add the max back", CE, "add the max back"),
    ("cross-entropy's log-sum-exp from numbers", CE, "log-sum-exp term passes no gradient"),
    ("cross-entropy's label logit as a number", CE, "-z[y] term passes no gradient"),
    ("cross-entropy takes the wrong label's logit", CE, "own label"),
    ("relative error relative to b", CHECK, "not by |b|"),
    ("relative error absolute", CHECK, "divide the difference by max"),
    ("relative error without abs", CHECK, "absolute difference"),
    ("relative error divides 0 by 0", CHECK, "never 0"),
    ("relative error over the sum", CHECK, "not |a| + |b|"),
    ("grad_check with one-sided differences", CHECK, "central differences"),
    ("grad_check ignores its engine", CHECK, "use the engine it is given"),
    ("grad_check ignores h", CHECK, "use the step h"),
    ("grad_check changes xs", CHECK, "changed the list xs"),
    ("grad_check returns every error", CHECK, "one number"),
    ("grad_check returns the mean error", CHECK, "LARGEST relative error"),
    ("grad_check returns the absolute difference", CHECK, "RELATIVE error"),
    ("names the operation built on the faulty one", FAULTY, "whose own code is wrong"),
    ("names only two", FAULTY, "should name 3 operations"),
    ("names an operator symbol", FAULTY, "not one of the names in OPS"),
    ("tanh 'fixed' with the input again", DERIVATIVE, "t the OUTPUT"),
    ("tanh fixed but sets its grad", DERIVATIVE, "use += in _backward"),
    ("tanh left unfixed", DERIVATIVE, "wrong local derivative: override"),
    ("product fixed on one operand only", ACCUMULATE, "use += in _backward"),
    ("product makes Buggy nodes", ACCUMULATE, "type(self)(...)"),
    ("reflected division the wrong way round", REFLECTED, "__rtruediv__"),
    ("reflected division left out", REFLECTED, "missing reflected operation"),
    ("predicts the right loop's w", PITFALLS, "predicted_w = 0.875 is not within"),
    ("train_one_weight always zeroes", PITFALLS, "never reset w.grad"),
    ("train_one_weight never zeroes", PITFALLS, "set w.grad = 0.0 before each"),
    ("train_one_weight climbs the gradient", PITFALLS, "against the gradient"),
    ("relu_step_grads ignores in_place", PITFALLS, "by editing h.data"),
    ("relu_step_grads returns w.grad only", PITFALLS, "[w.grad, b.grad]"),
]


@pytest.mark.parametrize("name, cell, words", MESSAGES, ids=ids(MESSAGES))
def test_hidden_messages_say_what_the_numbers_show(solution, name, cell, words):
    message = hidden_message(mutate(solution, *bug(name)), A, cell)
    assert words in flat(message), message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


# ---- the faulty engine: its key stays in the grader ------------------------------------


def test_the_notebooks_buggy_is_the_graders(solution):
    """The grader's copy of Buggy (refgrad/buggy.py) is the locked cell, to the letter."""
    (cell,) = [c for c in solution.cells if grade_id(c) == "grads_buggy"]
    source = Path(gradcheck.ref_buggy.__file__).read_text()
    assert cell.source.strip() == source[source.index("class Buggy:") :].strip()


def _programs(seed: int, ops: tuple, count: int = 40):
    rng = random.Random(seed)
    return [
        common.random_program(rng, ops, n_leaves=rng.choice((1, 2, 3)), numbers="both")
        for _ in range(count)
    ]


def _agree(engine, program, leaves) -> bool:
    xs = [engine(v) for v in leaves]
    program.run(xs)[-1].backward()
    want = [common.RefValue(v) for v in leaves]
    program.run(want)[-1].backward()
    return all(common.close(x.grad, w.grad) for x, w in zip(xs, want))


def _fixed(*fixes):
    """Buggy with the course's fixes of ``fixes`` (names of methods), as the Givens
    attach them, and the key's other fixes from the notebook's solution."""
    solved = run_cells(read(SOURCE, A), A, until="grads_fixed", tests=False)
    Buggy, Fixed = solved["Buggy"], solved["Fixed"]
    methods = {name: getattr(Fixed, name) for name in fixes}
    return type("Fixed", (Buggy,), methods)


def test_the_key_names_exactly_the_faults_of_buggy():
    """Fixing the three methods of the key makes Buggy agree with refgrad everywhere;
    leaving out any one of them leaves a difference (or an error) that a test can see."""
    ops = ("+", "*", "-", "/", "**", "neg", "tanh")
    programs = _programs(5, ops, 80)
    whole = _fixed(*faults.FAULTY)
    assert all(_agree(whole, p, leaves) for p, leaves in programs)
    for left in faults.FAULTY:
        partial = _fixed(*(faults.FAULTY - {left}))
        seen = False
        for p, leaves in programs:
            try:
                seen |= not _agree(partial, p, leaves)
            except TypeError:
                seen = True
        assert seen, left


def test_the_key_never_enters_the_kernel_or_the_release():
    released = "\n".join(c.source for c in read(NOTEBOOKS, A).cells)
    for order in itertools.permutations(sorted(faults.FAULTY)):
        assert repr(list(order)) not in released
        assert '", "'.join(order) not in released
    assert "FAULTY" not in kernel_code() and "__rtruediv__" not in kernel_code()
    for cell in read(NOTEBOOKS, A).cells:
        gid = grade_id(cell) or ""
        assert not set(gid.split("_")) & {op.strip("_") for op in faults.OPS}, gid


def test_a_fault_left_alone_is_never_named(solution):
    """With an empty Fixed, each fix's message says what kind of fault is left, and names
    no operation (so the feedback does not answer exercise 4)."""
    start = solution.cells.index(next(c for c in solution.cells if grade_id(c) == "grads_fixed"))
    nb = nbformat.from_dict(solution)
    nb.cells[start].source = "class Fixed(Buggy):\n    pass\n"
    ns = run_cells(nb, A, tests=False)
    for cell in FIXES:
        result = verdict_of(ns, A, cell)
        assert not result.passed
        assert not any(op in result.message for op in faults.OPS), result.message


@pytest.mark.parametrize(
    "answer",
    [None, "tanh", ["tanh"], ["tanh", 3, "exp"], ["tanh", "tanh", "exp"], ["x", "y", "z"]],
)
def test_visible_and_hidden_checks_agree_on_the_answers_form(solution, answer):
    nb = mutate(solution, KEY, f"faulty_ops = {answer!r}")
    visible = graded(nb, A, visible=True)[FAULTY]
    hidden_ = graded(nb, A)[FAULTY]
    assert visible == hidden_ == faults.form_problem(answer)


@pytest.mark.parametrize("wrong", list(itertools.combinations(faults.OPS, 3))[::23])
def test_a_wrong_answer_costs_its_question_and_keeps_the_key(solution, wrong):
    if set(wrong) == faults.FAULTY:
        return
    nb = mutate(solution, KEY, f"faulty_ops = {list(wrong)!r}")
    failed = graded(nb, A)
    assert set(failed) == {FAULTY}
    for op in faults.FAULTY - set(wrong):
        assert op not in failed[FAULTY]


# ---- the probe's answers -------------------------------------------------------------------

SHAPES = [
    ("sg_softmax", {"cases": [{"logits": [1.0, 2.0]}]}, [{"data": [0.3, 0.7], "values": True}]),
    (
        "sg_softmax",
        {"cases": [{"logits": [1.0, 2.0]}]},
        [{"data": [0.3, 0.7], "values": True, "grads": [0.1]}],
    ),
    (
        "sg_cross_entropy",
        {"cases": [{"logits": [[1.0, 2.0]], "labels": [0]}]},
        [{"data": 0.3, "is_value": True, "grads": [[0.1]]}],
    ),
    (
        "sg_cross_entropy",
        {"cases": [{"logits": [[1.0, 2.0]], "labels": [0]}]},
        [{"data": 0.3, "is_value": True}],
    ),
    ("sg_grad_check", {"calls": [{"xs": [1.0, 2.0]}]}, [{"result": 0.0, "xs": [1.0]}]),
    ("sg_grad_check", {"calls": [{"xs": [1.0]}, {"xs": [2.0]}]}, [{"result": 0.0, "xs": [1.0]}]),
    ("sg_overrides", {"names": ["tanh"]}, {"defined": True, "class": True, "own": ["tanh"]}),
    (
        "sg_overrides",
        {"names": ["tanh"]},
        {"defined": True, "class": True, "own": ["exp"], "made": {"exp": "Fixed"}},
    ),
    ("sg_overrides", {"names": ["tanh"]}, {"defined": False, "own": []}),
    ("sg_answers", {"names": ["faulty_ops"]}, {}),
    ("sg_answers", {"names": ["faulty_ops"]}, {"faulty_ops": {"a": 1}}),
]


@pytest.mark.parametrize("op, args, result", SHAPES)
def test_incomplete_answers_of_the_sets_operations_are_refused(op, args, result):
    assert answers.problem(op, args, result) is not None


def test_honest_answers_of_the_sets_operations_pass_their_shapes(solution):
    """Every hidden test of the set, on the solution, without a flag (the probe's own
    answers pass the shape checks)."""
    ns = run_cells(solution, A, tests=False)
    for cell in sorted(EXERCISES):
        result = verdict_of(ns, A, cell)
        assert result.passed and not result.flag, (cell, result)


def test_the_set_is_graded_on_the_course_engine():
    assert hidden.ENGINE.names == ("Value",)
    assert set(hidden.TESTS) == EXERCISES
