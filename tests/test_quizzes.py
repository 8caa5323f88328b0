"""The two checkpoint quizzes (04_checkpoint_engine, 06_checkpoint_mlp): every variant of
every question is well formed and its key is right (worked out again here, independently
of the grader: PyTorch, finite differences, the test's own parsing), every valid order
counts, and a wrong or malformed answer costs exactly its own question, with one line
that does not give the right answer away. The variants themselves (one per student, the
practice round, copied notebooks) are tests/test_quiz_variants.py's."""

from __future__ import annotations

import importlib
import itertools
import math
import re

import nbformat
import pytest
import torch
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    SOURCE,
    STUDENT,
    failing_cells,
    grade_id,
    read,
    run_cells,
)

ENGINE, MLP = "04_checkpoint_engine", "06_checkpoint_mlp"
QUIZ = (ENGINE, MLP)
PREFIX = {ENGINE: "engine_quiz", MLP: "mlp_quiz"}
IDS = [f"student{i}" for i in range(40)] + ["ada", "grace", "a.b@uni.edu", "Zoë O'Neil"]
PRACTICE = [("practice", n) for n in range(8)]  # the practice round's variants

# Mutants of the solutions (tests/test_mutants.py) that no test can tell from them.
EQUIVALENT_MUTANTS = {
    "mlp_quiz_q6 line 6: Gt -> GtE": "hinge_grad differs only at the kink margin - y*s = 0, "
    "where the slope is undefined and never asked for",
    "mlp_quiz_q6 line 6: Mult -> Div": "-weight * y and -weight / y are equal: y is 1 or -1",
}


def _covering_ids() -> list[str]:
    """Students whose variants, between them, show every wording, option order... of every
    question: tests/test_mutants.py grades a mutant of a worked answer as each of them, so
    that a slip in the branch for any wording shows."""
    from autograder.verdicts.hidden import quiz

    chosen, seen = [], set()
    for i in range(400):
        who = f"s{i}"
        new = set()
        for assignment in QUIZ:
            for q in quiz.questions_of(assignment).QUESTIONS:
                v = quiz.variant(assignment, who, q)
                new.add((assignment, q, v.stem, v.template))
        if new - seen:
            chosen.append(who)
            seen |= new
    return chosen


MUTANT_STUDENTS = [STUDENT, *_covering_ids()]


@pytest.fixture(scope="module")
def graders():
    """Each quiz's hidden-answer module, by assignment."""
    return {a: importlib.import_module(f"autograder.verdicts.hidden.{a}") for a in QUIZ}


@pytest.fixture(scope="module")
def quiz():
    from autograder.verdicts.hidden import quiz

    return quiz


@pytest.fixture(scope="module")
def solutions():
    return {a: read(SOURCE, a) for a in QUIZ}


def variants(quiz, assignment, ids=IDS):
    """(id, question, variant) for every id and question."""
    for who in ids:
        for q in quiz.questions_of(assignment).QUESTIONS:
            yield who, q, quiz.variant(assignment, who, q)


def cell_id(assignment, q):
    return f"{PREFIX[assignment]}_test_{q}"


def one_short_line(message: str) -> bool:
    return len(message.splitlines()) == 1 and len(message) < 90


def with_answers(nb, assignment, changes: dict[str, str]) -> nbformat.NotebookNode:
    """``nb`` with the answer cells of ``changes`` ({"q2": "1.5"}) replaced: a variable
    set to that expression, or a function of that body."""
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        q = (grade_id(cell) or "").removeprefix(f"{PREFIX[assignment]}_")
        if q in changes and cell.metadata.nbgrader.get("solution"):
            header = re.search(r"^def \w+\(.*\):$", cell.source, re.M)
            if header:
                body = changes[q].replace("\n", "\n    ")
                cell.source = f"{header.group(0)}\n    {body}"
            else:
                cell.source = f"{q} = {changes[q]}"
    return nb


# ---- the notebooks and the grader agree ----------------------------------------------------


@pytest.mark.parametrize("assignment", QUIZ)
def test_quiz_points_agree_everywhere(solutions, graders, quiz, assignment):
    """A question's points are written once (POINTS in questions.py); its test cell's
    nbgrader points, its heading and the notebook's totals line, in source/, notebooks/
    and solutions/, all say the same. No total is pinned here: a points change is one
    edit in questions.py (then generate)."""
    from autograder.content import quizpoints

    points = quizpoints.points(assignment)
    assert points == quiz.points(assignment)  # the grader reads the same table
    assert list(points) == list(quiz.questions_of(assignment).QUESTIONS)  # every question
    assert set(graders[assignment].KEYS) == set(points)
    assert all(isinstance(n, int) and n > 0 for n in points.values())
    assert quizpoints.problems(assignment) == []
    total = f"**{len(points)} questions, {sum(points.values())} points.**"
    for nb in (solutions[assignment], read(NOTEBOOKS, assignment), read(SOLUTIONS, assignment)):
        checks = {grade_id(c): c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")}
        assert set(checks) == {cell_id(assignment, q) for q in points}
        assert {q: checks[cell_id(assignment, q)].metadata.nbgrader.points for q in points} == (
            points
        )
        for q, n in points.items():  # each question's heading says its points
            (heading,) = [
                c.source for c in nb.cells if c.source.startswith(f"### Question {q[1:]} ")
            ]
            assert heading.endswith(f"({n} point{'s' * (n != 1)})"), heading
        assert total in nb.cells[0].source


@pytest.mark.parametrize("assignment", QUIZ)
def test_solutions_answer_every_variant(solutions, assignment):
    """The worked solutions are written for any variant: graded as any student, they get
    full marks (the keys and the solutions were worked out in two different ways)."""
    for student in ("ada", "student7", "a.b@uni.edu"):
        assert failing_cells(solutions[assignment], assignment, student=student) == {}


@pytest.mark.parametrize("assignment", QUIZ)
def test_every_variant_is_well_formed(quiz, graders, assignment):
    kinds = {"choice", "truth", "number", "line", "order", "function"}
    for who, q, v in variants(quiz, assignment, [*IDS, *PRACTICE]):  # practice ones too
        assert v.kind in kinds and v.text.strip(), (who, q)
        spec = v.spec()
        key = graders[assignment].KEYS[q].key(v)
        if v.kind == "choice":
            assert len(v.options) >= 4 and len({i for i, _ in v.options}) == len(v.options)
            assert key in spec["choices"]
        elif v.kind == "number":
            assert math.isfinite(key) and abs(key) < 1e4, (who, q, key)
        elif v.kind == "line":
            assert 1 <= key <= len(v.listing) and v.listing[key - 1].strip(), (who, q)
        elif v.kind == "order":
            assert set(key) == set(v.items) and all(set(b) <= set(v.items) for b in key.values())
        elif v.kind == "function":
            assert all(math.isfinite(f) for _, f in key)


# ---- numbers: PyTorch works each one out again ---------------------------------------------


class TorchValue:
    """The lessons' Value over a float64 torch scalar, so PyTorch's autograd does the work."""

    def __init__(self, data, _t=None):
        self.t = torch.tensor(float(data), dtype=torch.float64, requires_grad=True)
        if _t is not None:
            self.t = _t

    @property
    def data(self):
        return float(self.t.detach())

    @data.setter
    def data(self, value):
        with torch.no_grad():
            self.t.copy_(torch.tensor(float(value), dtype=torch.float64))

    @property
    def grad(self):
        return 0.0 if self.t.grad is None else float(self.t.grad)

    @grad.setter
    def grad(self, value):
        self.t.grad = torch.tensor(float(value), dtype=torch.float64)

    def _op(self, other, fn):
        other = other.t if isinstance(other, TorchValue) else other
        return TorchValue(0.0, fn(self.t, other))

    def __add__(self, o):
        return self._op(o, lambda a, b: a + b)

    def __radd__(self, o):
        return self._op(o, lambda a, b: b + a)

    def __mul__(self, o):
        return self._op(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return self._op(o, lambda a, b: b * a)

    def __sub__(self, o):
        return self._op(o, lambda a, b: a - b)

    def __truediv__(self, o):
        return self._op(o, lambda a, b: a / b)

    def __pow__(self, n):
        return self._op(n, lambda a, b: a**b)

    def tanh(self):
        return TorchValue(0.0, torch.tanh(self.t))

    def backward(self):
        self.t.backward()


def torch_names():
    def linear(nin, nout):
        return torch.nn.Linear(nin, nout)

    def mlp(nin, nouts):
        sizes = [nin, *nouts]
        layers = [torch.nn.Linear(a, b) for a, b in itertools.pairwise(sizes)]
        return torch.nn.Sequential(*layers)

    class Counted:
        def __init__(self, module):
            self.module = module

        def parameters(self):
            return [x for p in self.module.parameters() for x in p.flatten()]

    return {
        "Value": TorchValue,
        "MLP": lambda nin, nouts: Counted(mlp(nin, nouts)),
        "Linear": linear,
        "ReLU": torch.nn.ReLU,
        "Sequential": lambda *m: Counted(torch.nn.Sequential(*m)),
    }


@pytest.mark.parametrize("assignment", QUIZ)
def test_number_keys_agree_with_pytorch(quiz, graders, assignment):
    checked = 0
    for _, q, v in variants(quiz, assignment, IDS[:25]):
        if v.kind != "number" or "id(" in v.asks:  # where a Value is: test below
            continue
        ns = quiz.run(v.code, torch_names())
        expected = eval(v.asks, ns)
        assert graders[assignment].KEYS[q].key(v) == pytest.approx(float(expected), abs=1e-9)
        checked += 1
    assert checked >= 25 * 3


def test_parameter_index_key_is_where_pytorch_keeps_that_parameter(quiz):
    """Question 16: torch.nn.Linear lists weight (row by row) and then bias, as our Linear
    does; mark the asked parameter and find it in the flat list."""
    for who in IDS[:20]:
        v = quiz.variant(MLP, who, "q16")
        layer = torch.nn.Linear(v.nin, v.nout)
        with torch.no_grad():
            for p in layer.parameters():
                p.zero_()
            (layer.bias[v.i] if v.bias else layer.weight[v.i, v.j]).fill_(1.0)
        flat = torch.cat([p.detach().flatten() for p in layer.parameters()])
        assert graders_key(MLP, "q16", v) == int(flat.argmax())


def test_pytorch_facts_are_pytorchs(quiz):
    """Question 15's shapes and question 14's calls are what PyTorch has."""
    for who in IDS[:10]:
        v = quiz.variant(MLP, who, "q15")
        shape = tuple(torch.nn.Linear(v.nin, v.nout).weight.shape)
        assert graders_key(MLP, "q15", v) == v.letter_of(f"`{shape}`")
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model(torch.ones(2)).sum().backward()
    before = model.weight.detach().clone()
    opt.step()  # the update of question 14's stem s1
    assert torch.allclose(model.weight, before - 0.1 * model.weight.grad)
    opt.zero_grad()  # stem s2: the grads are gone
    assert model.weight.grad is None or not model.weight.grad.any()


def graders_key(assignment, q, v):
    return importlib.import_module(f"autograder.verdicts.hidden.{assignment}").KEYS[q].key(v)


# ---- spot the bug: the key's line is the one whose fix gives the right gradients ------------


class LessonValue:
    """A Value as the lessons write it: closures without arguments."""

    def __init__(self, data, _parents=(), _op=""):
        self.data, self.grad, self._prev, self._op = float(data), 0.0, tuple(_parents), _op
        self._backward = lambda: None

    def __add__(self, other):
        other = other if isinstance(other, LessonValue) else LessonValue(other)
        out = LessonValue(self.data + other.data, (self, other))

        def back():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = back
        return out

    def __mul__(self, other):
        other = other if isinstance(other, LessonValue) else LessonValue(other)
        out = LessonValue(self.data * other.data, (self, other))

        def back():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = back
        return out


def backprop(root):
    order, seen = [], set()

    def visit(node):
        if id(node) not in seen:
            seen.add(id(node))
            for parent in node._prev:
                visit(parent)
            order.append(node)

    visit(root)
    root.grad = 1.0
    for node in reversed(order):
        node._backward()


# Each listing's wrong line, and that line as it should read. The graphs use the faulty
# input twice, once downstream, and give it a parent of its own, so that "=" for "+=" and
# a missing parent both show.
RIGHT_LINE = {
    "m1": (7, "        w.grad += self.data * out.grad"),
    "m2": (8, "        b.grad += out.grad"),
    "m3": (6, "        self.grad += w.data * out.grad"),
    "m4": (3, "    out = Value(self.data * w.data + b.data, (self, w, b), 'muladd')"),
    "m5": (8, "        b.grad += out.grad"),
    "m6": (6, "        self.grad += w.data * out.grad"),
    "cube": (6, "        self.grad += 3 * x**2 * out.grad"),
    "sinh": (5, "        self.grad += math.cosh(self.data) * out.grad"),
    "softsign": (6, "        self.grad += out.grad / (1 + abs(x)) ** 2"),
    "square": (2, "    out = Value(self.data**2, (self,), 'square')"),
    "cosh": (5, "        self.grad += math.sinh(self.data) * out.grad"),
    "exp2": (5, "        self.grad += math.log(2) * out.data * out.grad"),
}
PLAIN = {
    "muladd": lambda x, w, q: (x * w + 1.5 * q) * (1.5 * q),
    "cube": lambda t: (1.5 * t) ** 3 * (1.5 * t),
    "sinh": lambda t: math.sinh(1.5 * t) * (1.5 * t),
    "softsign": lambda t: 1.5 * t / (1 + abs(1.5 * t)) * (1.5 * t),
    "square": lambda t: (1.5 * t) ** 2 * (1.5 * t),
    "cosh": lambda t: math.cosh(1.5 * t) * (1.5 * t),
    "exp2": lambda t: 2 ** (1.5 * t) * (1.5 * t),
}


def gradients_of(listing: list[str], name: str, at: list[float]) -> list[float]:
    ns = {"Value": LessonValue, "math": math}
    exec("\n".join(listing), ns)
    setattr(LessonValue, name, ns[name])
    try:
        leaves = [LessonValue(x) for x in at]
        if name == "muladd":
            x, w, q = leaves
            b = q * 1.5
            out = x.muladd(w, b) * b
        else:
            y = leaves[0] * 1.5
            out = getattr(y, name)() * y
        backprop(out)
        return [leaf.grad for leaf in leaves]
    finally:
        delattr(LessonValue, name)


def slopes(f, at: list[float], h: float = 1e-6) -> list[float]:
    out = []
    for i in range(len(at)):
        up, down = list(at), list(at)
        up[i] += h
        down[i] -= h
        out.append((f(*up) - f(*down)) / (2 * h))
    return out


@pytest.mark.parametrize("template", sorted(RIGHT_LINE))
def test_spot_the_bug_key_is_the_line_to_fix(quiz, template):
    questions = quiz.questions_of(ENGINE)
    q = "q6" if template.startswith("m") else "q7"
    listing = (questions.MULADD if q == "q6" else questions.UNARY)[template]
    name = "muladd" if q == "q6" else template
    at = [0.7, -1.3, 0.9] if name == "muladd" else [0.7]
    want = slopes(PLAIN[name], at)
    assert gradients_of(listing, name, at) != pytest.approx(want, rel=1e-6)  # as listed: wrong
    line, fixed = RIGHT_LINE[template]
    repaired = [fixed if i + 1 == line else text for i, text in enumerate(listing)]
    assert repaired != listing
    assert gradients_of(repaired, name, at) == pytest.approx(want, rel=1e-5)  # fixed: right
    drawn = [quiz.variant(ENGINE, who, q) for who in [*IDS, *PRACTICE]]  # graded or practice
    v = next(v for v in drawn if v.template == template)
    assert graders_key(ENGINE, q, v) == line


# ---- orders: every valid one counts ----------------------------------------------------------


def edges_of(code: str) -> dict[str, set[str]]:
    """{box: the boxes it is computed from}, read from the question's code."""
    parents = {}
    for line in code.splitlines():
        target, _, expression = line.partition(" = ")
        parents[target] = {t for t in re.findall(r"\b[a-zA-Z]\b", expression) if t in parents}
    return parents


def test_graph_order_key_is_the_graph_the_question_shows(quiz):
    for _, q, v in variants(quiz, ENGINE):
        if q != "q4":
            continue
        key = graders_key(ENGINE, q, v)
        assert {k: set(b) for k, b in key.items()} == edges_of(v.code)
        valid = [v.names[r] for r in ("x", "y", "z", "u", "v", "w", "L")]
        assert quiz.wrong(v, valid, quiz_keys(ENGINE)[q]) is None
        reverse = valid[::-1]
        assert "must come first" in quiz.wrong(v, reverse, quiz_keys(ENGINE)[q])


def quiz_keys(assignment):
    return importlib.import_module(f"autograder.verdicts.hidden.{assignment}").KEYS


def test_graph_order_accepts_exactly_the_valid_orders(quiz):
    v = quiz.variant(ENGINE, "ada", "q4")
    parents = edges_of(v.code)
    accepted = 0
    for order in itertools.permutations(v.items):
        place = {label: i for i, label in enumerate(order)}
        ok = all(place[p] < place[c] for c, ps in parents.items() for p in ps)
        assert (quiz.wrong(v, list(order), quiz_keys(ENGINE)["q4"]) is None) == ok, order
        accepted += ok
    assert 1 < accepted < 5040


def test_training_step_order_accepts_both_valid_orders(quiz):
    for who in IDS[:10]:
        v = quiz.variant(MLP, who, "q7")
        loss, zero, back, update = (
            v.letter_of(w)
            for w in ("compute the predictions", "zero_grad", "loss.backward", "p.data")
        )
        accepted = {
            "".join(o)
            for o in itertools.permutations("abcd")
            if quiz.wrong(v, list(o), quiz_keys(MLP)["q7"]) is None
        }
        assert accepted == {loss + zero + back + update, zero + loss + back + update}


# ---- the code questions ------------------------------------------------------------------


def test_function_keys_are_the_derivatives(quiz):
    for who in IDS[:15]:
        v = quiz.variant(ENGINE, who, "q13")
        f = quiz_keys(ENGINE)["q13"].truth(v)
        a, b, c = v.a, v.b, v.c
        for x in (-7.5, -2.0, -0.3, 0.0, 0.4, 3.0, 7.9):
            [slope] = slopes(lambda t: c * math.log1p(math.exp(a * t + b)), [x])  # noqa: B023
            assert f(x) == pytest.approx(slope, rel=1e-6, abs=1e-8)
        v = quiz.variant(MLP, who, "q6")
        g = quiz_keys(MLP)["q6"].truth(v)
        for score, y in itertools.product((-2.6, -1.2, -0.4, 0.3, 0.9, 1.7, 2.2), (1, -1)):
            if abs(v.margin - y * score) > 1e-3:
                loss = lambda s, y=y, v=v: v.weight * max(0.0, v.margin - y * s)  # noqa: E731
                [slope] = slopes(loss, [score])
                assert g(score, y) == pytest.approx(slope, abs=1e-6)


RIGHT_BODIES = {
    ENGINE: [
        "v = quiz.variant('q13')\nu = math.exp(v.a * x + v.b)\nreturn v.c * v.a * u / (1 + u)",
        "v = quiz.variant('q13')\nz = v.a * x + v.b\ne = math.exp(-abs(z))\n"
        "return v.a * v.c * (1 / (1 + e) if z >= 0 else e / (1 + e))",
    ],
    MLP: [
        "v = quiz.variant('q6')\nreturn float(-y * v.weight) if y * score < v.margin else 0.0",
        "v = quiz.variant('q6')\nif v.margin - y * score <= 0:\n    return 0\nreturn -y * v.weight",
    ],
}
WRONG_BODIES = {
    ENGINE: [
        "v = quiz.variant('q13')\nreturn v.c * math.log(1 + math.exp(v.a * x + v.b))",  # f
        "v = quiz.variant('q13')\nreturn v.c / (1 + math.exp(-(v.a * x + v.b)))",  # no a
        "return 3.7 / (1 + math.exp(-3.7 * x))",  # another variant's numbers
    ],
    MLP: [
        "return -y * quiz.variant('q6').weight",  # ignores relu
        "v = quiz.variant('q6')\nreturn v.weight * y if v.margin - y * score > 0 else 0.0",
        "return -y if 5 - y * score > 0 else 0.0",  # another variant's numbers
    ],
}
FUNCTION_Q = {ENGINE: "q13", MLP: "q6"}


@pytest.mark.parametrize("assignment", QUIZ)
def test_functions_written_differently_count_and_wrong_ones_cost_one_line(
    solutions, quiz, assignment
):
    q = FUNCTION_Q[assignment]
    for student in ("student7", "student3"):
        assert quiz.variant(ENGINE, student, "q13").a != 1  # "no a" is wrong for them
        for body in RIGHT_BODIES[assignment]:
            nb = with_answers(solutions[assignment], assignment, {q: body})
            assert failing_cells(nb, assignment, student=student) == {}, body
        for body in WRONG_BODIES[assignment]:
            nb = with_answers(solutions[assignment], assignment, {q: body})
            failed = failing_cells(nb, assignment, student=student)
            assert set(failed) == {cell_id(assignment, q)}, body
            assert one_short_line(failed[cell_id(assignment, q)]), failed


# ---- wrong and malformed answers ---------------------------------------------------------


def wrong_answer(v, key):
    """A well-formed answer to variant ``v`` that is wrong."""
    if v.kind == "number":
        return repr(key + 1.0)
    if v.kind == "choice":
        return repr(next(x for x in "abcd" if x != key))
    if v.kind == "truth":
        return repr(not key)
    if v.kind == "line":
        return repr(key % len(v.listing) + 1)
    if v.kind == "order":  # a valid order, backwards
        order: list[str] = []
        while len(order) < len(key):
            order.append(
                next(i for i in sorted(key) if i not in order and set(key[i]) <= set(order))
            )
        return repr(order[::-1])
    return None


@pytest.mark.parametrize("assignment", QUIZ)
def test_wrong_answers_lose_exactly_their_questions(solutions, quiz, graders, assignment):
    keys = graders[assignment].KEYS
    changes, right = {}, {}
    for q, key in keys.items():
        v = quiz.variant(assignment, STUDENT, q)
        if v.kind != "function":
            right[q] = key.key(v)
            changes[q] = wrong_answer(v, right[q])
    failed = failing_cells(with_answers(solutions[assignment], assignment, changes), assignment)
    assert set(failed) == {cell_id(assignment, q) for q in changes}
    for q in changes:
        message = failed[cell_id(assignment, q)]
        assert one_short_line(message) and message.startswith(f"{q}: "), message
        key = right[q]
        if isinstance(key, float):  # the right value never shows
            shown = re.findall(r"-?\d+(?:\.\d+)?", message.partition(":")[2])
            assert all(float(x) != pytest.approx(key) for x in shown[:1]), message


# (assignment, question, malformed answer, a phrase of the one-line message)
MALFORMED = [
    (ENGINE, "q2", '"22"', "must be a number"),
    (ENGINE, "q3", "[9.0]", "must be a number"),
    (ENGINE, "q1", '"e"', 'must be "a", "b", "c" or "d"'),
    (ENGINE, "q5", "1", 'must be "a", "b", "c" or "d"'),
    (ENGINE, "q6", "7.5", "must be a whole number from 1 to 11"),
    (ENGINE, "q8", '"True"', "must be True or False"),
    (ENGINE, "q4", '"L w v z u x y"', "must be a list"),
    (ENGINE, "q4", '["@"]', "is not one of"),
    (ENGINE, "q13", 'return "0.5"', "must return a number"),
    (ENGINE, "q13", "return x / 0", "raised ZeroDivisionError"),
    (MLP, "q1", '"25"', "must be a number"),
    (MLP, "q9", "None", "is not answered yet"),
    (MLP, "q7", '"bcad"', "must be a list"),
    (MLP, "q7", '["a", "b", "c", "c"]', "more than once"),
    (MLP, "q6", "pass", "must return a number; got None"),
]


@pytest.mark.parametrize(
    "assignment, q, bad, phrase", MALFORMED, ids=[f"{m[0][:2]}-{m[1]}-{m[2]}" for m in MALFORMED]
)
def test_malformed_answer_fails_visible_and_hidden_check_with_one_line(
    solutions, assignment, q, bad, phrase
):
    """The check cell stops with one line; the grader, even when the visible check is
    bypassed, says the same line."""
    nb = with_answers(solutions[assignment], assignment, {q: bad})
    visible = failing_cells(nb, assignment, visible=True)
    hidden = failing_cells(nb, assignment)
    assert set(hidden) == {cell_id(assignment, q)}
    assert phrase in hidden[cell_id(assignment, q)], hidden
    assert one_short_line(hidden[cell_id(assignment, q)])
    assert phrase in visible[cell_id(assignment, q)], visible


def test_grader_never_crashes_on_odd_answers(quiz, graders):
    odd = [None, "", "b ", float("nan"), float("inf"), [], {}, object(), True, 1e300, -0.0]
    odd += [["L"] * 7, lambda: 1, print, "a" * 10_000]
    for assignment, module in graders.items():
        for q in module.KEYS:
            for value in odd:
                try:
                    quiz.grade(assignment, module.KEYS, q, value, "ada")
                except AssertionError as exc:
                    assert one_short_line(str(exc)), (assignment, q, value, str(exc))


def test_letters_are_accepted_in_either_case(solutions, quiz):
    key1 = quiz.variant(ENGINE, STUDENT, "q1")
    key5 = quiz.variant(ENGINE, STUDENT, "q5")
    changes = {
        "q1": repr(graders_key(ENGINE, "q1", key1).upper()),
        "q5": repr(f" {graders_key(ENGINE, 'q5', key5)} "),
    }
    assert failing_cells(with_answers(solutions[ENGINE], ENGINE, changes), ENGINE) == {}


def test_answer_keys_are_spread_over_the_letters(quiz, graders):
    """Over the class, every letter is the key of some choice question about as often."""
    for assignment, module in graders.items():
        letters = [
            module.KEYS[q].key(v) for _, q, v in variants(quiz, assignment) if v.kind == "choice"
        ]
        counts = [letters.count(x) for x in "abcd"]
        assert min(counts) > len(letters) / 8, (assignment, counts)


# ---- real nbgrader ---------------------------------------------------------------------------


def test_solution_cells_run_in_order(solutions):
    """Run top to bottom as a student would (practice cells aside), nothing fails."""
    for assignment, nb in solutions.items():
        ns = run_cells(nb, assignment)
        assert ns["quiz"].student == STUDENT
