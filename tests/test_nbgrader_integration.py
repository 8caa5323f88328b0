"""Real nbgrader, once for the whole course: one scratch course with every assignment,
all released by one ``nbgrader generate_assignment``, and one ``nbgrader autograde`` of
all the submissions. For each assignment the class holds the solution ("perfect"), the blank
release ("blank") and the key slips and variants of the lesson's own tests (their tables,
read from tests/test_<assignment>.py); each test below reads its scores in the gradebook.

Full marks for the solution and for each variant, nothing for the blank release, and a
slip costs exactly its own cell's points (or its share of them). One run instead of one
per assignment: nbgrader starts twice and the course is copied once."""

from __future__ import annotations

import importlib
import json
import random

import nbformat
import pasted_engines as pe
import pytest
import test_01_value as t01
import test_02_backward as t02
import test_03_activations as t03
import test_05_mlp as t05m
import test_05_training as t05t
import test_07_set_gradients as t07
import test_08_set_training as t08
import test_09_set_arrays as t09
import test_quizzes as tq
from helpers import NOTEBOOKS, SOURCE, ScratchCourse, grade_id, mutate, read

from autograder.course import assignments

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("nbgrader_integration")]

ASSIGNMENTS = assignments()


# ---- what each assignment's class hands in ----------------------------------------------


def lesson_01() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t01.A)
    return {
        "rsub_swapped": mutate(solution, *t01.BUGS[6][1:3]),
        "tuple_prev": mutate(solution, *t01.VARIANTS[0][1:3]),
        "neg_broken": mutate(solution, *t01.SIBLINGS[0][1:3]),
    }


def lesson_02() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t02.A)
    return {
        "leaves_only": t02.apply(solution, t02.bug("zero_grad zeroes only the leaves")),
        "recursive": t02.apply(solution, t02.bug("topological_order_iterative by recursion")),
        "kahn": t02.apply(solution, t02.KAHN),
    }


def lesson_03() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t03.A)
    return {
        "relu_at_zero": mutate(solution, *t03.BUGS[5][1:3]),
        "tanh_identity": mutate(solution, *t03.VARIANTS[11][1:3]),
    }


def lesson_05_mlp() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t05m.A)
    (loop,) = [v for v in t05m.VARIANTS if v[0] == "Neuron with a loop"]
    forward = {
        "mlp_neuron": pe.FORWARD_MODULE_NEURON,
        "mlp_mlp": pe.FORWARD_LAYER_MLP,
        "mlp_linear": pe.FORWARD_LINEAR_SEQUENTIAL,
    }
    return {
        "relu_out": mutate(solution, *t05m.bug("relu on the output layer")),
        "loop": mutate(solution, *loop[1:3]),
        "forward": t05m._pasted(solution, forward),
    }


LOSSES = {"train_mse", "train_bce", "train_max_margin"}  # 05_training's loss cells
# their functions, as RECOVER names them
NAMES = ("mse_loss", "binary_cross_entropy_with_logits", "max_margin_loss")


def lesson_05_training() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t05t.A)
    (softplus,) = [v for v in t05t.VARIANTS if v[0] == "BCE through softplus"]
    recover = nbformat.from_dict(json.loads(json.dumps(read(NOTEBOOKS, t05t.A))))
    for cell in recover.cells:
        if grade_id(cell) in LOSSES:
            cell.source += "\n\n" + RECOVER
    return {
        "plus_update": mutate(solution, *t05t.bug("update with += instead of -=")),
        "softplus": mutate(solution, *softplus[1:3]),
        "recover": recover,
    }


def set_07() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t07.A)
    (variant,) = [v for v in t07.VARIANTS if v[0] == "reflected division by a power"]
    return {
        "not_averaged": mutate(solution, *t07.bug("cross-entropy not averaged")),
        "one_fix_left": mutate(solution, *t07.bug("reflected division left out")),
        "variant": mutate(solution, *variant[1:3]),
    }


def set_08() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t08.A)
    (variant,) = [v for v in t08.VARIANTS if v[0] == "SGD: v = mu*v - lr*g, p += v"]
    return {
        "no_correction": mutate(solution, *t08.bug("Adam without bias correction")),
        "other_momentum": mutate(solution, *variant[1:3]),
    }


def set_09() -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, t09.A)
    (kahn,) = [v for v in t09.VARIANTS if v[0] == "backward by counting the uses (Kahn)"]
    return {
        "no_transpose": mutate(solution, *t09.bug("@ without the transpose of B")),
        "kahn": mutate(solution, *kahn[1:3]),
    }


def quizzes() -> tuple[dict[str, dict[str, nbformat.NotebookNode]], dict[str, set[str]]]:
    """Each quiz's "half": five questions (drawn as tests/test_quizzes.py always drew
    them) answered wrongly, well formed. Returns ({quiz: {"half": nb}}, {quiz: the test
    cells it loses})."""
    from autograder.verdicts.hidden import quiz

    rng = random.Random(7)
    submissions, lost_cells = {}, {}
    for assignment in tq.QUIZ:
        nb = read(SOURCE, assignment)
        keys = importlib.import_module(f"autograder.verdicts.hidden.{assignment}").KEYS
        lost = rng.sample(
            sorted(q for q in keys if quiz.variant(assignment, "half", q).kind != "function"), 5
        )
        half = {
            q: tq.wrong_answer(
                quiz.variant(assignment, "half", q),
                keys[q].key(quiz.variant(assignment, "half", q)),
            )
            for q in lost
        }
        submissions[assignment] = {"half": tq.with_answers(nb, assignment, half)}
        lost_cells[assignment] = {tq.cell_id(assignment, q) for q in lost}
    return submissions, lost_cells


class Graded:
    """The graded course: scores and max scores by assignment, read once."""

    def __init__(self, course: ScratchCourse, lost: dict[str, set[str]]):
        self.course = course
        self.scores = {a: course.scores(a) for a in ASSIGNMENTS}
        self.full = {a: course.max_scores(a) for a in ASSIGNMENTS}
        self.quiz_lost = lost


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    """Every assignment released, its class submitted, all autograded in one run."""
    course = ScratchCourse(tmp_path_factory.mktemp("integration") / "course")
    quiz_subs, lost = quizzes()
    classes = {
        t01.A: lesson_01(),
        t02.A: lesson_02(),
        t03.A: lesson_03(),
        t05m.A: lesson_05_mlp(),
        t05t.A: lesson_05_training(),
        t07.A: set_07(),
        t08.A: set_08(),
        t09.A: set_09(),
        **quiz_subs,
    }
    assert set(classes) == set(ASSIGNMENTS)  # a new assignment gets its class here
    course.nbgrader("generate_assignment", "*", "--force")  # every one, in one run
    for assignment in ASSIGNMENTS:
        course.submit("perfect", assignment, read(SOURCE, assignment))
        course.submit("blank", assignment, read(course.path / "notebooks", assignment))
        for student, nb in classes[assignment].items():
            course.submit(student, assignment, nb)
    course.nbgrader("autograde", "*", "--force")
    return Graded(course, lost)


# ---- every assignment -------------------------------------------------------------------


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_solution_gets_full_marks_and_the_blank_release_none(graded, assignment):
    scores, full = graded.scores[assignment], graded.full[assignment]
    assert scores["perfect"] == full
    assert set(scores["blank"].values()) == {0.0}


# ---- the lessons --------------------------------------------------------------------------


def test_01_value(graded):
    scores, full = graded.scores[t01.A], graded.full[t01.A]
    assert scores["tuple_prev"] == full
    assert scores["rsub_swapped"] == {**full, t01.REFL: full[t01.REFL] * 0.75}
    # the share of a cell's points, in nbgrader's gradebook: -, ** and / still count
    assert scores["neg_broken"] == {**full, t01.ARITH: full[t01.ARITH] * 0.75}


def test_02_backward(graded):
    scores, full = graded.scores[t02.A], graded.full[t02.A]
    assert sum(full.values()) == 16
    assert scores["kahn"] == full
    assert scores["leaves_only"] == {**full, t02.ZERO: 0.0}
    assert scores["recursive"] == {**full, t02.ITER: 0.0}


def test_03_activations(graded):
    scores, full = graded.scores[t03.A], graded.full[t03.A]
    assert sum(full.values()) == 16
    assert scores["tanh_identity"] == full
    assert scores["relu_at_zero"] == {**full, t03.RELU: 0.0}


def test_05_mlp(graded):
    """A bug in MLP costs MLP's half of its exercise; a Layer that calls forward() on its
    own Neuron (which passed) is graded on that Neuron, as in the lab."""
    scores, full = graded.scores[t05m.A], graded.full[t05m.A]
    assert sum(full.values()) == 9
    assert scores["loop"] == full
    assert scores["forward"] == full
    assert scores["relu_out"] == {**full, t05m.MLP: full[t05m.MLP] / 2}  # Layer's share


def test_05_training(graded):
    scores, full = graded.scores[t05t.A], graded.full[t05t.A]
    assert sum(full.values()) == 11
    assert scores["softplus"] == full
    # `+=` in the update costs train's first share of three (the updates), not all of it
    assert scores["plus_update"] == {**full, t05t.TRAIN: round(full[t05t.TRAIN] * 2 / 3, 2)}


# ---- the problem sets ---------------------------------------------------------------------


def test_07_set_gradients(graded):
    scores, full = graded.scores[t07.A], graded.full[t07.A]
    assert sum(full.values()) == 16
    assert scores["variant"] == full
    assert scores["not_averaged"] == {**full, t07.CE: 0.0}
    assert scores["one_fix_left"] == {**full, t07.REFLECTED: 0.0}


def test_08_set_training(graded):
    """A slip in Adam costs only Adam's points (the Iris recipe, which uses Adam, is
    graded on the course's)."""
    scores, full = graded.scores[t08.A], graded.full[t08.A]
    assert sum(full.values()) == 17
    assert scores["other_momentum"] == full
    assert scores["no_correction"] == {**full, t08.ADAM: 0.0}


def test_08_set_training_reads_iris_beside_the_graded_notebook(graded):
    """nbgrader put iris.csv beside the graded notebook, where the grading kernel read it."""
    folder = graded.course.path / "autograded" / "perfect" / t08.A
    assert (folder / "iris.csv").read_bytes() == (SOURCE / t08.A / "iris.csv").read_bytes()
    nb = nbformat.read(folder / "training.ipynb", as_version=4)
    outputs = {
        c.metadata.get("nbgrader", {}).get("grade_id"): "".join(
            o.get("text", "") for o in c.outputs if o.output_type == "stream"
        )
        for c in nb.cells
        if c.cell_type == "code"
    }
    assert outputs["training_iris_data"].startswith("150 flowers"), outputs["training_iris_data"]
    assert "✓ fit_standardizer" in outputs[t08.DATA], outputs[t08.DATA]


def test_09_set_arrays(graded):
    scores, full = graded.scores[t09.A], graded.full[t09.A]
    assert sum(full.values()) == 14
    assert scores["kahn"] == full
    assert scores["no_transpose"] == {**full, t09.MATMUL: 0.0}


# ---- the quizzes --------------------------------------------------------------------------


@pytest.mark.parametrize("assignment", tq.QUIZ)
def test_quiz(graded, assignment):
    """Each question's points are its test cell's; five wrong answers cost exactly their
    own questions."""
    from autograder.verdicts.hidden import quiz

    scores, full = graded.scores[assignment], graded.full[assignment]
    assert full == {tq.cell_id(assignment, q): n for q, n in quiz.points(assignment).items()}
    gone = graded.quiz_lost[assignment]
    assert scores["half"] == {c: 0.0 if c in gone else p for c, p in full.items()}


# ---- a blank notebook that looks for the losses in its grading kernel --------------------

RECOVER = r"""
def _recover(name):
    # the course's name from anywhere this kernel can read: None if nowhere
    import ast, gc, os, sys
    pattern = f"def {name}("

    def from_text(text):
        # (not this cell's own text: its stub is not the course's, and running this
        # search again from inside itself would never end)
        if not isinstance(text, str) or pattern not in text or "_recover(" in text:
            return None
        pieces = [text]
        try:
            pieces += [n.value for n in ast.walk(ast.parse(text))
                       if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        except Exception:
            pass
        for piece in pieces:  # run here, so that it uses the Value a request brings
            if pattern in piece and "_recover(" not in piece:
                before = globals().get(name)
                try:
                    exec(piece, globals())
                except BaseException:
                    continue
                if globals().get(name) is not before and callable(globals().get(name)):
                    return globals()[name]
        return None

    def not_mine(f):
        code = getattr(f, "__code__", None)
        where = code.co_filename if code is not None else ""
        return code is not None and "ipykernel" not in where and "<ipython" not in where

    def history():
        yield from globals().get("In", [])
        yield from (h for _, _, h in get_ipython().history_manager.get_range(raw=False))

    def names():
        yield from list(globals().values())

    def modules():
        for module in list(sys.modules.values()):
            try:
                yield getattr(module, name, None)
                yield from list(vars(module).values())
            except BaseException:
                continue

    def collected():
        for obj in gc.get_objects():
            yield obj
            if isinstance(obj, dict):
                yield from list(obj.values())

    def files():
        for top, _, found in os.walk("."):
            for f in found:
                try:
                    yield open(os.path.join(top, f)).read()
                except BaseException:
                    continue

    def environment():
        yield from list(os.environ.values())

    looked = []
    for where in (history, names, modules, collected, files, environment):
        try:
            for obj in where():
                if callable(obj) and getattr(obj, "__name__", "") == name and not_mine(obj):
                    return obj
                found = from_text(obj)
                if found is not None:
                    return found
            looked.append(where.__name__)
        except BaseException:
            continue
    print(name, "not in", *looked)
    return None


for _name in ("mse_loss", "binary_cross_entropy_with_logits", "max_margin_loss"):
    _found = _recover(_name)
    if _found is not None:
        globals()[_name] = _found
"""


def test_a_blank_notebook_finds_no_loss_in_its_grading_kernel(graded):
    """05_training's losses, looked for in ``In``, the history, ``globals()``,
    ``sys.modules``, the garbage collector (refused), the kernel's folder and its environment,
    after each loss's stub: nothing found, no point earned. Each search runs to its end
    in every loss cell, and says where it looked."""
    scores, full = graded.scores[t05t.A], graded.full[t05t.A]
    got = scores["recover"]
    assert full["train_test_mse"] > 0
    assert {gid: got[gid] for gid in got if gid.startswith("train_test")} == {
        gid: 0.0 for gid in got if gid.startswith("train_test")
    }
    nb = graded.course.autograded("recover", t05t.A)
    said = {
        grade_id(c): "".join(o.get("text", "") or o.get("evalue", "") for o in c.outputs)
        for c in nb.cells
        if grade_id(c) in LOSSES
    }
    # the garbage collector's list is refused by the probe's guard (that search stops there)
    everywhere = "history names modules files environment"
    searched = "".join(f"{name} not in {everywhere}\n" for name in NAMES)
    assert said == {cell: searched for cell in LOSSES}, said
