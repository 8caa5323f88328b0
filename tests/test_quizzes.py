"""The two checkpoint quizzes (04_checkpoint_engine, 06_checkpoint_mlp): every answer key is
right (worked out again here, independently of the grader), every valid order counts, a
wrong or malformed answer costs exactly its own question, and nothing released gives an
answer away."""

from __future__ import annotations

import ast
import itertools
import math
import re

import nbformat
import pytest
import refgrad
import torch
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    SOURCE,
    ScratchCourse,
    failing_cells,
    grade_id,
    is_test_cell,
    read,
    run_cells,
)
from refgrad import nn as refnn

ENGINE, MLP = "04_checkpoint_engine", "06_checkpoint_mlp"
QUIZ = (ENGINE, MLP)
PREFIX = {ENGINE: "engine_quiz", MLP: "mlp_quiz"}
SIZE = {ENGINE: (13, 17), MLP: (15, 19)}  # (questions, points)
FUNCTIONS = {(ENGINE, "q13"): "softplus_grad", (MLP, "q6"): "hinge_grad"}


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from them.
EQUIVALENT_MUTANTS = {
    "mlp_quiz_q6 line 5: Gt -> GtE": "hinge_grad differs only at the kink 1 - y*s = 0, where "
    "the slope is undefined and never asked for",
}


@pytest.fixture(scope="module")
def graders():
    """Each quiz's hidden-answer module, by assignment."""
    import importlib

    return {a: importlib.import_module(f"autograder.verdicts.hidden.{a}") for a in QUIZ}


@pytest.fixture(scope="module")
def kit():
    from autograder.students.selfcheck import load_coursekit

    return load_coursekit()


@pytest.fixture(scope="module")
def solutions():
    return {a: read(SOURCE, a) for a in QUIZ}


@pytest.fixture(scope="module")
def answers(solutions):
    """Each quiz's solution answers, by question: {assignment: {"q1": "b", ...}}."""
    result = {}
    for a, nb in solutions.items():
        ns = run_cells(nb, a, tests=False)
        result[a] = {q: ns[name] for q, name in answer_names(nb, a).items()}
    return result


# ---- reading the quiz notebooks ---------------------------------------------------------


def check_cells(nb, assignment) -> dict[str, nbformat.NotebookNode]:
    """{"q1": the check cell of question 1, ...}"""
    start = f"{PREFIX[assignment]}_test_"
    return {
        grade_id(c)[len(start) :]: c
        for c in nb.cells
        if is_test_cell(c) and grade_id(c).startswith(start)
    }


def answer_names(nb, assignment) -> dict[str, str]:
    """{"q1": "q1", ..., "q13": "softplus_grad"}: the name each check cell looks at."""
    names = {}
    for q, cell in check_cells(nb, assignment).items():
        call = next(ln for ln in cell.source.splitlines() if ln.startswith("check_answer("))
        names[q] = ast.parse(call).body[0].value.args[0].value
    return names


def question_text(nb, q: str) -> str:
    heading = f"### Question {q[1:]} "
    (cell,) = [c for c in nb.cells if c.cell_type == "markdown" and c.source.startswith(heading)]
    return cell.source


def code_block(markdown: str) -> str:
    return re.search(r"```(?:python)?\n(.*?)```", markdown, re.S).group(1)


def visible_spec(cell) -> dict:
    """The keywords the check cell gives check_answer, as values."""
    call = next(ln for ln in cell.source.splitlines() if ln.startswith("check_answer("))
    node = ast.parse(call).body[0].value
    spec = {}
    for kw in node.keywords:
        if isinstance(kw.value, ast.Name):
            spec[kw.arg] = {
                "float": float,
                "int": int,
                "bool": bool,
                "list": list,
                "callable": callable,
            }[kw.value.id]
        elif isinstance(kw.value, ast.Call):  # range(1, 11)
            spec[kw.arg] = range(*(a.value for a in kw.value.args))
        else:
            spec[kw.arg] = ast.literal_eval(kw.value)
    return spec


def with_answer(nb, assignment, q: str, new: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` whose answer to ``q`` is ``new``: the right-hand side of
    ``q3 = ...``, or for a function question its whole body."""
    nb = nbformat.from_dict(nb)
    (cell,) = [c for c in nb.cells if grade_id(c) == f"{PREFIX[assignment]}_{q}"]
    lines = cell.source.splitlines()
    begin = lines.index(next(ln for ln in lines if "### BEGIN SOLUTION" in ln))
    end = lines.index(next(ln for ln in lines if "### END SOLUTION" in ln))
    if (assignment, q) in FUNCTIONS:
        body = ["    " + ln for ln in new.splitlines()]
    else:
        body = [f"{q} = {new}"]
    cell.source = "\n".join(lines[: begin + 1] + body + lines[end:])
    return nb


def with_answers(nb, assignment, changes: dict[str, str]):
    for q, new in changes.items():
        nb = with_answer(nb, assignment, q, new)
    return nb


def cell_id(assignment, q):
    return f"{PREFIX[assignment]}_test_{q}"


def one_short_line(message: str) -> bool:
    return len(message.splitlines()) == 1 and len(message) < 90


# ---- the shape of each quiz --------------------------------------------------------------


@pytest.mark.parametrize("assignment", QUIZ)
def test_quiz_size_and_points_match_the_grader(solutions, graders, assignment):
    cells = check_cells(solutions[assignment], assignment)
    questions = graders[assignment].QUESTIONS
    assert list(cells) == [f"q{i}" for i in range(1, len(cells) + 1)]
    assert set(cells) == set(questions)
    points = {q: c.metadata.nbgrader.points for q, c in cells.items()}
    assert points == {q: question.points for q, question in questions.items()}
    assert (len(cells), sum(points.values())) == SIZE[assignment]
    for q in cells:  # the heading states the points the cell gives
        heading = question_text(solutions[assignment], q).splitlines()[0]
        assert heading.endswith(f"({points[q]} point{'s' if points[q] > 1 else ''})")


@pytest.mark.parametrize("assignment", QUIZ)
def test_visible_and_hidden_checks_agree_on_form(solutions, graders, assignment):
    """The check cell and the grader ask for the same kind of answer."""
    questions = graders[assignment].QUESTIONS
    for q, cell in check_cells(solutions[assignment], assignment).items():
        spec = visible_spec(cell)
        if spec.get("kind") is list:
            spec["items"] = sorted(spec["items"])
        assert spec == questions[q].spec, q


@pytest.mark.parametrize("assignment", QUIZ)
def test_solution_passes_every_check(solutions, assignment):
    assert failing_cells(solutions[assignment], assignment) == {}


@pytest.mark.parametrize("assignment", QUIZ)
def test_blank_quiz_fails_every_check_with_one_line(assignment):
    blank = read(NOTEBOOKS, assignment)
    failed = failing_cells(blank, assignment)
    tests = {cell_id(assignment, q) for q in check_cells(blank, assignment)}
    assert tests <= set(failed)
    for cell in tests:
        assert one_short_line(failed[cell]), failed[cell]
        assert "not answered yet" in failed[cell] or "NotImplementedError" in failed[cell]
    # Nothing else breaks: only the unanswered answer cells stop (not setup, not figures).
    others = set(failed) - tests
    answer_cells = {f"{PREFIX[assignment]}_q{i}" for i in range(1, SIZE[assignment][0] + 1)}
    functions = {f"{PREFIX[assignment]}_{q}" for (a, q) in FUNCTIONS if a == assignment}
    assert others == answer_cells - functions


# ---- every answer key, worked out again ------------------------------------------------


def run_with_refgrad(code: str) -> dict:
    ns = {"Value": refgrad.Value}
    exec(code, ns)
    return ns


@pytest.mark.parametrize("q, expression", [("q2", "a.grad"), ("q3", "x.grad"), ("q11", "x.grad")])
def test_engine_numbers_follow_from_the_question_code(solutions, answers, q, expression):
    code = code_block(question_text(solutions[ENGINE], q))
    want = eval(expression, run_with_refgrad(code))
    assert abs(answers[ENGINE][q] - want) < 1e-4, (q, want)


def test_engine_number_answers(answers):
    """The same numbers by hand, as the explanations work them out."""
    assert answers[ENGINE]["q2"] == 2 * (3.0 * -2.0) * -2.0 + -2.0 == 22.0
    assert answers[ENGINE]["q3"] == 5.0 + 2 * 2.0
    assert abs(answers[ENGINE]["q11"] - 2 * (1 - math.tanh(1.0) ** 2)) < 1e-4


def test_mlp_numbers_follow_from_the_question_code(solutions, answers):
    nb, got = solutions[MLP], answers[MLP]
    names = {
        "MLP": refnn.MLP,
        "Sequential": refnn.Sequential,
        "Linear": refnn.Linear,
        "ReLU": refnn.ReLU,
    }
    q1 = re.search(r"`(MLP\(.*?\))`", question_text(nb, "q1")).group(1)
    assert got["q1"] == len(eval(q1, names).parameters()) == 25
    q2 = re.search(r"`(Sequential\(.*?\)\))`", question_text(nb, "q2")).group(1)
    assert got["q2"] == len(eval(q2, names).parameters()) == 26
    ns = run_with_refgrad(code_block(question_text(nb, "q5")))
    assert got["q5"] == ns["preds"][0].grad
    loop = code_block(question_text(nb, "q9"))
    assert abs(got["q9"] - run_with_refgrad(loop)["p"].data) < 1e-12
    assert "p.grad = 0.0" in question_text(nb, "q10")
    no_reset = re.sub(r"(?m)^ *p\.grad = 0\.0\n", "", loop)
    assert no_reset != loop
    assert abs(got["q10"] - run_with_refgrad(no_reset)["p"].data) < 1e-12


def test_torch_agrees_with_the_pytorch_answers(solutions, answers):
    """relu's slope at 0 (engine q10) and nn.Linear's weight shape (mlp q15)."""
    x = torch.tensor(0.0, requires_grad=True)
    torch.relu(x).backward()
    assert (x.grad.item() == 0.0) is answers[ENGINE]["q10"]
    shape = tuple(torch.nn.Linear(3, 2).weight.shape)
    option = re.search(
        rf"\*\*{answers[MLP]['q15']}\*\*: `(.*?)`", question_text(solutions[MLP], "q15")
    ).group(1)
    assert option == str(shape)


class LessonValue:
    """A Value as the lessons write it: closures without arguments."""

    def __init__(self, data, _parents=(), _op=""):
        self.data, self.grad, self._prev, self._op = float(data), 0.0, set(_parents), _op
        self._backward = lambda: None


def listing(markdown: str) -> dict[int, str]:
    """The numbered code listing of a spot-the-bug question: {line number: code}."""
    lines = {}
    for row in code_block(markdown).splitlines():
        number, _, code = row.strip(" ").partition("  ")
        lines[int(number)] = code
    return lines


def run_closures(root, seed: float) -> None:
    """Call every node's ``_backward()``, each after all the nodes that use it."""
    order, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node._prev:
                visit(parent)
            order.append(node)

    visit(root)
    root.grad = seed
    for node in reversed(order):
        node._backward()


def gradients(method_source: str, name: str, build) -> list[float]:
    ns = {"Value": LessonValue, "math": math}
    exec(method_source, ns)
    setattr(LessonValue, name, ns[name])
    try:
        leaves = [LessonValue(0.7), LessonValue(-1.3)]
        run_closures(build(*leaves), 1.5)
        return [v.grad for v in leaves]
    finally:
        delattr(LessonValue, name)


@pytest.mark.parametrize(
    "q, name, fix, build, want",
    [
        (
            "q6",
            "__mul__",
            "        other.grad += self.data * out.grad",
            lambda a, b: a * b,
            lambda a, b: [1.5 * b, 1.5 * a],
        ),
        (
            "q7",
            "tanh",
            "        self.grad += (1 - t**2) * out.grad",
            lambda a, b: a.tanh(),
            lambda a, b: [1.5 * (1 - math.tanh(a) ** 2), 0.0],
        ),
    ],
)
def test_spot_the_bug_answer_is_the_line_to_fix(solutions, answers, q, name, fix, build, want):
    lines = listing(question_text(solutions[ENGINE], q))
    line = answers[ENGINE][q]
    assert set(lines) == set(range(1, len(lines) + 1))
    expected = want(0.7, -1.3)
    source = "\n".join(lines.values())
    assert gradients(source, name, build) != pytest.approx(expected)  # as listed: wrong
    fixed = "\n".join(fix if n == line else code for n, code in lines.items())
    assert fixed != source
    assert gradients(fixed, name, build) == pytest.approx(expected)  # that line fixed: right


# ---- orders: every valid one counts ------------------------------------------------------


def figure_edges(nb) -> set[tuple[str, str]]:
    """(parent, child) label pairs of the graph the engine quiz draws for question 4,
    taken from the real Value objects the figure cell builds."""
    ns = run_cells(nb, ENGINE, until=f"{PREFIX[ENGINE]}_figure_q4", tests=False)
    edges, todo, seen = set(), [ns["L"]], set()
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for parent in node._prev:
            edges.add((parent.label, node.label))
            todo.append(parent)
    return edges


def backward_order_ok(order, edges) -> bool:
    """backward() may process a node only after every node that uses it."""
    position = {label: i for i, label in enumerate(order)}
    return all(position[child] < position[parent] for parent, child in edges)


def test_figure_graph_is_the_one_the_grader_checks(solutions, graders):
    edges = figure_edges(solutions[ENGINE])
    assert edges == {
        ("x", "u"),
        ("y", "u"),
        ("u", "v"),
        ("z", "v"),
        ("v", "w"),
        ("x", "w"),
        ("w", "L"),
        ("u", "L"),
    }
    uses = {}
    for parent, child in edges:
        uses.setdefault(parent, set()).add(child)
    assert {k: v for k, v in graders[ENGINE].backward_order().items() if v} == uses


def test_engine_order_accepts_exactly_the_valid_orders(solutions, answers, graders):
    edges = figure_edges(solutions[ENGINE])
    assert backward_order_ok(answers[ENGINE]["q4"], edges)
    labels = sorted({label for edge in edges for label in edge})
    valid = 0
    for order in itertools.permutations(labels):
        ok = backward_order_ok(order, edges)
        valid += ok
        try:
            graders[ENGINE].grade("q4", list(order))
        except AssertionError as exc:
            assert not ok, (order, str(exc))
            assert one_short_line(str(exc)) and "must come first" in str(exc)
        else:
            assert ok, order
    assert valid == 8  # L, w, v first; then u before x and y, and z anywhere


def test_training_step_order_accepts_both_valid_orders(answers, graders):
    accepted = set()
    for order in itertools.permutations("abcd"):
        try:
            graders[MLP].grade("q7", list(order))
        except AssertionError:
            continue
        accepted.add("".join(order))
    assert accepted == {"bcad", "cbad"}
    assert "".join(answers[MLP]["q7"]) in accepted


@pytest.mark.parametrize(
    "assignment, q, order",
    [
        (ENGINE, "q4", '["L", "w", "v", "u", "z", "y", "x"]'),
        (ENGINE, "q4", '["L", "w", "v", "u", "x", "z", "y"]'),
        (MLP, "q7", '["c", "b", "a", "d"]'),
    ],
)
def test_another_valid_order_keeps_full_marks(solutions, assignment, q, order):
    assert failing_cells(with_answer(solutions[assignment], assignment, q, order), assignment) == {}


# ---- the two code questions --------------------------------------------------------------


def slope(f, x, h=1e-6):
    return (f(x + h) - f(x - h)) / (2 * h)


def test_function_answers_are_the_derivatives(answers):
    softplus_grad = answers[ENGINE]["q13"]
    for x in (-7.5, -2.0, -0.3, 0.0, 0.4, 3.0, 7.9):
        assert softplus_grad(x) == pytest.approx(
            slope(lambda t: math.log1p(math.exp(t)), x), rel=1e-6, abs=1e-8
        )
    hinge_grad = answers[MLP]["q6"]
    for score in (-2.5, -1.2, -0.5, 0.3, 0.9, 1.1, 2.0):
        for y in (1, -1):

            def loss(s, y=y):
                return max(0.0, 1 - y * s)

            assert hinge_grad(score, y) == pytest.approx(slope(loss, score), abs=1e-6)


@pytest.mark.parametrize(
    "assignment, q, body",
    [
        (ENGINE, "q13", "return math.exp(x) / (1 + math.exp(x))"),
        (ENGINE, "q13", "e = math.exp(-abs(x))\nreturn 1 / (1 + e) if x >= 0 else e / (1 + e)"),
        (MLP, "q6", "return float(-y) if y * score < 1 else 0.0"),
        (MLP, "q6", "if 1 - y * score <= 0:\n    return 0\nreturn -y"),
    ],
)
def test_correct_function_written_differently_keeps_full_marks(solutions, assignment, q, body):
    nb = with_answer(solutions[assignment], assignment, q, body)
    assert failing_cells(nb, assignment) == {}


@pytest.mark.parametrize(
    "assignment, q, body",
    [
        (ENGINE, "q13", "return math.log(1 + math.exp(x))"),  # softplus itself
        (ENGINE, "q13", "return math.exp(x)"),  # forgot the chain rule's denominator
        (ENGINE, "q13", "s = 1 / (1 + math.exp(-x))\nreturn s * (1 - s)"),  # sigmoid's slope
        (MLP, "q6", "return -y"),  # ignores relu
        (MLP, "q6", "return y if 1 - y * score > 0 else 0.0"),  # sign
        (MLP, "q6", "return -y if score < 1 else 0.0"),  # forgets the label in the kink
    ],
)
def test_wrong_function_fails_with_one_line(graders, assignment, q, body):
    with pytest.raises(AssertionError) as info:
        graders[assignment].grade(q, function(assignment, body))
    message = str(info.value)
    assert one_short_line(message) and "is wrong" in message, message


def function(assignment, body):
    """A function with the signature the question asks for, and ``body``."""
    ns = {"math": math}
    args = "x" if assignment == ENGINE else "score, y"
    exec(f"def f({args}):\n    " + body.replace("\n", "\n    "), ns)
    return ns["f"]


# ---- wrong and malformed answers ------------------------------------------------------------

# A well-formed but wrong answer to every question that is not a function.
WRONG = {
    ENGINE: {
        "q1": '"c"',
        "q2": "-11.0",
        "q3": "4.0",
        "q4": '["L", "u", "w", "v", "z", "x", "y"]',
        "q5": '"b"',
        "q6": "6",
        "q7": "2",
        "q8": "False",
        "q9": "True",
        "q10": "False",
        "q11": "0.41997",
        "q12": '"a"',
    },
    MLP: {
        "q1": "36",
        "q2": "15",
        "q3": "True",
        "q4": '"a"',
        "q5": "-1.0",
        "q7": '["a", "b", "c", "d"]',
        "q8": '"a"',
        "q9": "0.2",
        "q10": "0.44",
        "q11": "False",
        "q12": "True",
        "q13": '"b"',
        "q14": '"b"',
        "q15": '"a"',
    },
}


@pytest.mark.parametrize("assignment", QUIZ)
def test_wrong_answers_lose_exactly_their_questions(solutions, assignment):
    wrong = dict(WRONG[assignment])
    wrong.update({q: body for (a, q), body in HALF_BODY.items() if a == assignment})
    failed = failing_cells(with_answers(solutions[assignment], assignment, wrong), assignment)
    assert set(failed) == {cell_id(assignment, q) for q in wrong}
    for q in wrong:
        message = failed[cell_id(assignment, q)]
        assert one_short_line(message) and message.startswith(f"{q}: "), message


@pytest.mark.parametrize("assignment, q", [(a, q) for a in WRONG for q in WRONG[a]])
def test_wrong_answer_message_keeps_the_right_one_secret(graders, answers, assignment, q):
    with pytest.raises(AssertionError) as info:
        graders[assignment].grade(q, eval(WRONG[assignment][q]))
    message = str(info.value)
    assert one_short_line(message) and message.startswith(f"{q}: "), message
    right = answers[assignment][q]
    shown = [repr(right), f"{right:.6g}" if isinstance(right, float) else repr(right)]
    assert not any(s in message for s in shown), message


# (assignment, question, malformed answer, a phrase of the one-line message)
MALFORMED = [
    (ENGINE, "q2", '"22"', "must be a number"),
    (ENGINE, "q3", "[9.0]", "must be a number"),
    (ENGINE, "q1", '"e"', 'must be "a", "b", "c" or "d"'),
    (ENGINE, "q5", "1", 'must be "a", "b", "c" or "d"'),
    (ENGINE, "q6", "7.5", "must be a whole number from 1 to 10"),
    (ENGINE, "q7", '"6"', "must be a whole number from 1 to 9"),
    (ENGINE, "q8", '"True"', "must be True or False"),
    (ENGINE, "q4", '"L w v z u x y"', "must be a list"),
    (ENGINE, "q4", '["L", "w", "v", "z", "u", "x"]', "leaves out 'y'"),
    (ENGINE, "q4", '["L", "w", "v", "z", "u", "x", "y", "q"]', "'q' is not one of"),
    (ENGINE, "q4", '["L", "w", "v", "z", "u", "x", "x"]', "more than once"),
    (ENGINE, "q13", 'return "0.5"', "must return a number"),
    (ENGINE, "q13", "return x / 0", "raised ZeroDivisionError"),
    (MLP, "q1", '"25"', "must be a number"),
    (MLP, "q9", "None", "is not answered yet"),
    (MLP, "q7", '"bcad"', "must be a list"),
    (MLP, "q6", "pass", "must return a number; got None"),
]


@pytest.mark.parametrize(
    "assignment, q, bad, phrase", MALFORMED, ids=[f"{m[0][:2]}-{m[1]}-{m[2]}" for m in MALFORMED]
)
def test_visible_check_rejects_malformed_answer_in_one_line(
    solutions, kit, assignment, q, bad, phrase
):
    """The check cell's own call, with the malformed answer: one line, and it stops."""
    cell = check_cells(solutions[assignment], assignment)[q]
    name = answer_names(solutions[assignment], assignment)[q]
    value = function(assignment, bad) if (assignment, q) in FUNCTIONS else eval(bad)
    with pytest.raises(kit.CheckFailed) as info:
        kit.check_answer(name, value, **visible_spec(cell))
    (line,) = info.value._render_traceback_()
    assert line.startswith("✗ ") and phrase in line and len(line) < 90, line


@pytest.mark.parametrize(
    "assignment, q, bad, phrase", MALFORMED, ids=[f"{m[0][:2]}-{m[1]}-{m[2]}" for m in MALFORMED]
)
def test_grader_rejects_malformed_answers_with_the_same_sentence(
    graders, assignment, q, bad, phrase
):
    """Even if the visible check is bypassed, the grader says the same one line."""
    value = function(assignment, bad) if (assignment, q) in FUNCTIONS else eval(bad)
    with pytest.raises(AssertionError) as info:
        graders[assignment].grade(q, value)
    assert phrase in str(info.value) and one_short_line(str(info.value))


def test_grader_never_crashes_on_odd_answers(graders):
    odd = [
        None,
        "",
        "b ",
        float("nan"),
        float("inf"),
        [],
        {},
        object(),
        True,
        1e300,
        -0.0,
        ["L"] * 7,
        lambda: 1,
        print,
    ]
    for quiz, module in graders.items():
        for q in module.QUESTIONS:
            for value in odd:
                try:
                    module.grade(q, value)
                except AssertionError as exc:
                    assert one_short_line(str(exc)), (quiz, q, value, str(exc))
                    assert "hidden test stopped" not in str(exc), (quiz, q, value, str(exc))


def test_letters_are_accepted_in_either_case(solutions):
    nb = with_answers(solutions[ENGINE], ENGINE, {"q1": '"B"', "q5": '" a "'})
    assert failing_cells(nb, ENGINE) == {}


# A submission with about half the questions wrong, and the score it must get.
HALF_WRONG = {
    ENGINE: ["q1", "q3", "q4", "q6", "q8", "q13"],  # 9 of 17 points lost
    MLP: ["q2", "q5", "q6", "q8", "q9", "q12"],  # 9 of 19 points lost
}
HALF_SCORE = {ENGINE: 8, MLP: 10}
HALF_BODY = {(ENGINE, "q13"): "return math.exp(x)", (MLP, "q6"): "return -y"}
# A submission with a few malformed answers (a string where a number is expected, ...).
MALFORMED_SUBMISSION = {
    ENGINE: {"q2": '"22"', "q4": '"L w v z u x y"', "q13": 'return "0.5"'},
    MLP: {"q1": '"25"', "q3": '"False"', "q6": "pass"},
}


def half_right(nb, assignment):
    changes = {
        q: WRONG[assignment].get(q) or HALF_BODY[(assignment, q)] for q in HALF_WRONG[assignment]
    }
    return with_answers(nb, assignment, changes)


@pytest.mark.parametrize("assignment", QUIZ)
def test_half_right_submission_loses_exactly_its_wrong_questions(solutions, assignment):
    failed = failing_cells(half_right(solutions[assignment], assignment), assignment)
    assert set(failed) == {cell_id(assignment, q) for q in HALF_WRONG[assignment]}
    points = {
        q: c.metadata.nbgrader.points
        for q, c in check_cells(solutions[assignment], assignment).items()
    }
    kept = sum(p for q, p in points.items() if q not in HALF_WRONG[assignment])
    assert kept == HALF_SCORE[assignment]


@pytest.mark.parametrize("assignment", QUIZ)
def test_malformed_submission_loses_exactly_those_questions(solutions, assignment):
    nb = with_answers(solutions[assignment], assignment, MALFORMED_SUBMISSION[assignment])
    failed = failing_cells(nb, assignment)
    assert set(failed) == {cell_id(assignment, q) for q in MALFORMED_SUBMISSION[assignment]}
    assert all(one_short_line(m) for m in failed.values()), failed


# ---- nothing released gives an answer away ------------------------------------------------


def solution_lines(nb) -> list[str]:
    """Every line written inside a solution region of the instructor notebook."""
    lines = []
    for cell in nb.cells:
        inside = False
        for line in cell.source.splitlines():
            if "### BEGIN SOLUTION" in line:
                inside = True
            elif "### END SOLUTION" in line:
                inside = False
            elif inside and line.strip():
                lines.append(line.strip())
    return lines


@pytest.mark.parametrize("assignment", QUIZ)
def test_release_reveals_no_answer(solutions, assignment):
    released = read(NOTEBOOKS, assignment)
    text = "\n".join(c.source for c in released.cells)
    secret = solution_lines(solutions[assignment])
    assert len(secret) > 3 * SIZE[assignment][0]  # an answer and its explanation each
    for line in secret:
        assert line not in text, line
    assert "Why:" not in text and "grade(" not in text
    for cell in released.cells:
        assert cell.get("outputs", []) == []
        if is_test_cell(cell):  # a check cell only checks the form of the answer
            docstring, call = cell.source.splitlines()
            assert docstring.startswith('"""Check: ') and call.startswith("check_answer(")


@pytest.mark.parametrize("assignment", QUIZ)
def test_solutions_give_every_answer_with_a_reason(assignment, answers):
    nb = read(SOLUTIONS, assignment)
    cells = {grade_id(c): c for c in nb.cells if grade_id(c)}
    for q in answers[assignment]:
        source = cells[f"{PREFIX[assignment]}_{q}"].source
        assert "# Why: " in source and "NotImplementedError" not in source, q
        outputs = "".join(o.get("text", "") for o in cells[cell_id(assignment, q)].outputs)
        assert outputs.startswith("✓ "), (q, outputs)


def test_answer_keys_are_spread_over_the_letters(graders):
    """Guessing one letter for every multiple-choice question gets few of them right."""
    for quiz, module in graders.items():
        keys = []
        for q, question in module.QUESTIONS.items():
            if question.spec.get("choices") != "abcd":
                continue
            for letter in "abcd":
                try:
                    module.grade(q, letter)
                except AssertionError:
                    continue
                keys.append(letter)
        assert len(set(keys)) >= 3 and max(map(keys.count, keys)) <= 2, (quiz, keys)


# ---- real nbgrader -------------------------------------------------------------------------


@pytest.mark.slow
def test_nbgrader_grades_the_quizzes(tmp_path, solutions):
    course = ScratchCourse(tmp_path, list(QUIZ))
    for assignment, nb in solutions.items():
        course.release(assignment)
        blank = read(course.path / "notebooks", assignment)
        malformed = MALFORMED_SUBMISSION[assignment]
        course.submit("perfect", assignment, nb)
        course.submit("blank", assignment, blank)
        course.submit("half", assignment, half_right(nb, assignment))
        course.submit("malformed", assignment, with_answers(nb, assignment, malformed))
        scores = course.autograde(assignment)
        full = course.max_scores(assignment)
        assert sum(full.values()) == SIZE[assignment][1]
        assert scores["perfect"] == full
        assert set(scores["blank"].values()) == {0.0}
        lost = {cell_id(assignment, q) for q in HALF_WRONG[assignment]}
        assert scores["half"] == {c: 0.0 if c in lost else p for c, p in full.items()}
        assert sum(scores["half"].values()) == HALF_SCORE[assignment]
        bad = {cell_id(assignment, q) for q in malformed}
        assert scores["malformed"] == {c: 0.0 if c in bad else p for c, p in full.items()}
