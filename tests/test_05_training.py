"""05_training (lesson 5b: losses and the training loop, on lesson 5's network): the hidden
tests pass correct work, written any way, and catch the classic bugs, each in the cell
that grades the broken exercise and only there. No exercise builds on another: the
losses need only Value, and train() is checked on models and losses made by the probe.

The lesson loads lesson 5's network in its cell tagged ``engine`` (in these tests, the
solved source/05_mlp), as a problem set does, and grading runs the course's instead, so
a slip in lesson 5 costs nothing here. The demonstrations (training runs and plots) are
tagged ``demo``: grading and ``failing_cells`` skip them.
"""

import matplotlib
import pytest
from catalogue import (
    assert_catches,
    assert_passes,
    assert_visible_and_hidden_fail,
    assert_visible_fails,
    changed,
    find,
    flat,
    graded,
    hidden_message,
    ids,
    without_demos,
)
from helpers import (
    assert_blank_fails_each,
    grade_id,
    mutate,
    run_cells,
    verdict_of,
)

from autograder.verdicts import answers
from autograder.verdicts import api as verdicts

matplotlib.use("Agg")  # the notebook draws figures; no window while testing

A = "05_training"
MSE, BCE, MM, TRAIN = (
    "train_test_mse",
    "train_test_bce",
    "train_test_max_margin",
    "train_test_loop",
)
EXERCISES = {MSE, BCE, MM, TRAIN}

SOLUTION_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        if z.data >= 0:
            total = total + (1 - y) * z + (1 + (-z).exp()).log()
        else:
            total = total - y * z + (1 + z.exp()).log()
    return total / len(logits)
"""
NAIVE_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        s = z.sigmoid()
        total = total - (y * s.log() + (1 - y) * (1 - s).log())
    return total / len(logits)
"""
ONE_SIDED_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        total = total + (1 - y) * z + (1 + (-z).exp()).log()
    return total / len(logits)
"""
SOFTPLUS_BCE = """\
    def softplus(v):  # log(1 + e^v), computed without overflow
        return v + (1 + (-v).exp()).log() if v.data > 0 else (1 + v.exp()).log()

    total = 0.0
    for z, y in zip(logits, targets):
        total = total + y * softplus(-z) + (1 - y) * softplus(z)
    return total / len(logits)
"""
MAX_ZERO_BCE = """\
    losses = []
    for z, y in zip(logits, targets):
        if z.data > 0:
            positive, size = z, z
        else:
            positive, size = 0.0, -z
        losses.append(positive - z * y + (1 + (-size).exp()).log())
    return sum(losses) * (1.0 / len(losses))
"""
SOLUTION_BATCH = "rng.sample(everything, batch_size)"
TRAIN_LOOP = """\
    params = model.parameters()
    everything = list(range(len(xs)))
    for k in range(steps):
        batch = everything if batch_size is None else rng.sample(everything, batch_size)
        preds = [model(xs[i]) for i in batch]
        loss = loss_fn(preds, [ys[i] for i in batch])
        model.zero_grad()
        loss.backward()
        rate = lr * (1 - lr_decay * k / steps)
        for p in params:
            p.data -= rate * p.grad
        losses.append(loss.data)
        if print_every and (k % print_every == 0 or k == steps - 1):
            print(f"step {k + 1:4d}/{steps}   loss {loss.data:.4f}   lr {rate:.3f}")
"""
EPOCH_TRAIN = """\
    order = []
    for k in range(steps):
        if batch_size is None:
            batch = range(len(xs))
        else:
            if len(order) < batch_size:  # a new epoch: every sample once, shuffled
                order = list(range(len(xs)))
                rng.shuffle(order)
            batch, order = order[:batch_size], order[batch_size:]
        batch_xs = [xs[i] for i in batch]
        batch_ys = [ys[i] for i in batch]
        loss = loss_fn([model(x) for x in batch_xs], batch_ys)
        loss.backward()
        rate = lr * (1 - lr_decay * k / steps)
        for p in model.parameters():
            p.data = p.data - rate * p.grad
            p.grad = 0  # zeroed after the update, ready for the next step
        losses.append(loss.data)
        if print_every > 0 and (k % print_every == 0 or k + 1 == steps):
            print(k, loss.data)
"""
CHOICES_TRAIN = """\
    import random as r
    for k in range(steps):
        if batch_size:
            pairs = r.choices(list(zip(xs, ys)), k=batch_size)
        else:
            pairs = list(zip(xs, ys))
        for p in model.parameters():
            p.grad = 0.0
        loss = loss_fn([model(x) for x, _ in pairs], [y for _, y in pairs])
        loss.backward()
        for p in model.parameters():
            p.data -= lr * (1.0 - lr_decay * k / steps) * p.grad
        losses.append(float(loss.data))
        if print_every and (k % print_every == 0 or k + 1 == steps):
            print("step", k + 1, "of", steps, "loss", round(loss.data, 5))
"""


# (description, old text, new text, the test cells that must fail)
BUGS = [
    ("MSE without the square", "sum((p - t) ** 2 for p, t", "sum((p - t) for p, t", {MSE}),
    (
        "MSE without the mean",
        "for p, t in zip(preds, targets)) / len(preds)",
        "for p, t in zip(preds, targets))",
        {MSE},
    ),
    (
        "MSE target minus prediction cubed",
        "sum((p - t) ** 2 for p, t",
        "sum((t - p) ** 3 for p, t",
        {MSE},
    ),
    (
        "BCE computed naively",
        SOLUTION_BCE,
        NAIVE_BCE,
        {BCE},
    ),
    (
        "BCE safe for z >= 0 only",
        SOLUTION_BCE,
        ONE_SIDED_BCE,
        {BCE},
    ),
    ("BCE without the mean", "    return total / len(logits)", "    return total", {BCE}),
    (
        "BCE with the label's sign flipped",
        "total = total - y * z + (1 + z.exp()).log()",
        "total = total + y * z + (1 + z.exp()).log()",
        {BCE},
    ),
    (
        "max-margin without L2",
        "penalty = alpha * sum(p * p for p in parameters)",
        "penalty = 0.0",
        {MM},
    ),
    (
        "max-margin with L2 on p, not p**2",
        "penalty = alpha * sum(p * p for p in parameters)",
        "penalty = alpha * sum(parameters)",
        {MM},
    ),
    ("max-margin with the wrong sign", "(1 - y * s).relu()", "(1 + y * s).relu()", {MM}),
    ("max-margin without relu", "(1 - y * s).relu()", "(1 - y * s)", {MM}),
    (
        "max-margin without the mean",
        "for s, y in zip(scores, ys)) / len(scores)",
        "for s, y in zip(scores, ys))",
        {MM},
    ),
    ("training without zero_grad", "        model.zero_grad()\n", "", {TRAIN}),
    (
        "zero_grad between backward and update",
        "        model.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        model.zero_grad()\n",
        {TRAIN},
    ),
    (
        "update with += instead of -=",
        "p.data -= rate * p.grad\n",
        "p.data += rate * p.grad\n",
        {TRAIN},
    ),
    (
        "train prints nothing (print_every ignored)",
        "        if print_every and (k % print_every == 0 or k == steps - 1):\n",
        "        if False:\n",
        {TRAIN},
    ),
    ("learning rate never decays", "rate = lr * (1 - lr_decay * k / steps)", "rate = lr", {TRAIN}),
    (
        "learning rate grows",
        "rate = lr * (1 - lr_decay * k / steps)",
        "rate = lr * (1 + lr_decay * k / steps)",
        {TRAIN},
    ),
    (
        "batch_size ignored",
        "batch = everything if batch_size is None else " + SOLUTION_BATCH,
        "batch = everything",
        {TRAIN},
    ),
    ("the same batch at every step", SOLUTION_BATCH, "everything[:batch_size]", {TRAIN}),
    (
        "ys not taken from the batch",
        "loss = loss_fn(preds, [ys[i] for i in batch])",
        "loss = loss_fn(preds, ys[: len(batch)])",
        {TRAIN},
    ),
    ("losses as Values", "losses.append(loss.data)", "losses.append(loss)", {TRAIN}),
    (
        "loss recorded after the update",
        "        losses.append(loss.data)\n",
        "        after = [model(xs[i]) for i in batch]\n"
        "        losses.append(loss_fn(after, [ys[i] for i in batch]).data)\n",
        {TRAIN},
    ),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "MSE with a loop",
        "    return sum((p - t) ** 2 for p, t in zip(preds, targets)) / len(preds)\n",
        "    total = 0\n    for p, t in zip(preds, targets):\n        d = p - t\n"
        "        total = total + d * d\n    return total * (1 / len(preds))\n",
    ),
    (
        "BCE through softplus",
        SOLUTION_BCE,
        SOFTPLUS_BCE,
    ),
    (
        "BCE as max(z, 0) - z*y + log(1 + exp(-|z|))",
        SOLUTION_BCE,
        MAX_ZERO_BCE,
    ),
    (
        "max-margin with a loop and p**2",
        "    data_loss = sum((1 - y * s).relu() for s, y in zip(scores, ys)) / len(scores)\n"
        "    penalty = alpha * sum(p * p for p in parameters)\n    return data_loss + penalty\n",
        "    loss = 0.0\n    for s, y in zip(scores, ys):\n"
        "        loss = loss + (-s * y + 1).relu() / len(scores)\n"
        "    for p in parameters:\n        loss = loss + alpha * p**2\n    return loss\n",
    ),
    ("train: shuffled epochs, zero_grad after the update", TRAIN_LOOP, EPOCH_TRAIN),
    ("train: random.choices with replacement", TRAIN_LOOP, CHOICES_TRAIN),
    (
        "train: parameters fetched at every step",
        "        for p in params:\n",
        "        for p in model.parameters():\n",
    ),
]


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS = {
    "train_bce line 6: 0 + 1": "which stable formula serves 0 <= z < 1: both are exact there",
    "train_bce line 6: GtE -> Gt": "which stable formula serves z = 0: both give log 2",
}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A)


@pytest.mark.parametrize("name, old, new, cells", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, name, old, new, cells):
    """Each bug fails its exercise's hidden test and nothing else, and its visible check."""
    nb = mutate(solution, old, new)
    assert_catches(nb, A, cells)
    assert_visible_fails(without_demos(nb), A, cells)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    """Full marks, and every visible check passes."""
    assert_passes(without_demos(mutate(solution, old, new)), A, visible=True)


LABEL_INDEXED_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        if z.data >= 0:
            both = [z + (1 + (-z).exp()).log(), (1 + (-z).exp()).log()]
        else:
            both = [(1 + z.exp()).log(), -z + (1 + z.exp()).log()]
        total = total + both[y]  # the label as an index: 0 or 1
    return total / len(logits)
"""
LABEL_CASED_BCE = """\
    total = 0.0
    for z, y in zip(logits, targets):
        if y == 1:
            total = total + (1 + (-z).exp()).log()
        else:
            total = total + z + (1 + (-z).exp()).log()
    return total / len(logits)
"""
SIGNATURE = "def train(model, xs, ys, loss_fn, steps, lr, batch_size=None,"
PRINT = "        if print_every and (k % print_every == 0 or k == steps - 1):\n"

# Contract departures a student can make, code pasted from elsewhere among them: what the
# hidden test of the exercise requires, the visible check must require too (both fail).
# (description, [(old text, new text), ...], the exercise's test cell)
DEPARTURES = [
    (
        "mse_loss returns a number",
        [
            ("    return sum((p - t) ** 2", "    return (sum((p - t) ** 2"),
            ("/ len(preds)\n    ### END", "/ len(preds)).data\n    ### END"),
        ],
        MSE,
    ),
    ("BCE uses the label as an index", [(SOLUTION_BCE, LABEL_INDEXED_BCE)], BCE),
    ("BCE picks its formula by the label", [(SOLUTION_BCE, LABEL_CASED_BCE)], BCE),
    (
        "BCE clamps logits to 50",
        [
            (
                "    for z, y in zip(logits, targets):\n        if z.data >= 0:",
                "    for z, y in zip(logits, targets):\n        if abs(z.data) > 50:\n"
                "            z = z * (50 / abs(z.data))\n        if z.data >= 0:",
            )
        ],
        BCE,
    ),
    (
        "max_margin_loss without defaults",
        [("parameters=(), alpha=0.0):", "parameters, alpha):")],
        MM,
    ),
    (
        "max_margin_loss returns a number",
        [("return data_loss + penalty", "return (data_loss + penalty).data")],
        MM,
    ),
    (
        "train names steps and lr otherwise",
        [
            (SIGNATURE, "def train(model, xs, ys, loss_fn, n_steps, rate0, batch_size=None,"),
            ("    losses = []\n", "    losses = []\n    steps, lr = n_steps, rate0\n"),
        ],
        TRAIN,
    ),
    (
        "train prints at every step when print_every=0",
        [(PRINT, "        if not print_every or k % print_every == 0 or k == steps - 1:\n")],
        TRAIN,
    ),
    (
        "train prints no line for the last step",
        [(PRINT, "        if print_every and k % print_every == 0:\n")],
        TRAIN,
    ),
    (
        "train prints all but the last step",
        [(PRINT, "        if print_every and (k % print_every == 0 or k != steps - 1):\n")],
        TRAIN,
    ),
    (
        "train prints the loss only",
        [
            (
                'print(f"step {k + 1:4d}/{steps}   loss {loss.data:.4f}   lr {rate:.3f}")',
                'print(f"loss {loss.data:.4f}")',
            )
        ],
        TRAIN,
    ),
]


@pytest.mark.parametrize("name, changes, cell", DEPARTURES, ids=ids(DEPARTURES))
def test_visible_and_hidden_agree_on_each_departure(solution, name, changes, cell):
    """The visible check fails the exercise (its message short), and so does its hidden
    test, on the notebook's own definitions."""
    assert_visible_and_hidden_fail(without_demos(changed(solution, changes)), A, cell)


def bug(name: str) -> tuple[str, str]:
    return find(BUGS, name)[1:3]


def broken(solution, name: str):
    """The solution with the bug or departure ``name``, as its own test grades it."""
    if any(b[0] == name for b in BUGS):
        return mutate(solution, *bug(name))
    return without_demos(changed(solution, find(DEPARTURES, name)[1]))


MESSAGES = [
    ("training without zero_grad", TRAIN, "zero them before backward"),
    ("update with += instead of -=", TRAIN, "climbs the gradient"),
    ("learning rate never decays", TRAIN, "lr * (1 - lr_decay * k / steps)"),
    ("batch_size ignored", TRAIN, "should use 4 samples"),
    ("the same batch at every step", TRAIN, "new random batch"),
    ("ys not taken from the batch", TRAIN, "another sample's y"),
    ("losses as Values", TRAIN, "plain numbers (loss.data)"),
    ("BCE safe for z >= 0 only", BCE, "OverflowError"),
    ("max-margin without L2", MM, "alpha="),
    ("MSE without the mean", MSE, "mse_loss(["),
]


@pytest.mark.parametrize("name, cell, words", MESSAGES, ids=ids(MESSAGES))
def test_hidden_messages_say_what_is_wrong(solution, name, cell, words):
    message = hidden_message(broken(solution, name), A, cell)
    assert words in flat(message), message


NO_DECAY = "the rate never decays"
PILE_UP = "the gradients pile up"
CLIMBS = "climbs the gradient"
OVERFLOW = "exp() overflows"
# Each hint is said on its evidence, by the visible check and the hidden test alike (the
# overflow hint by the hidden test only: the visible check shows the error itself), and
# stays silent for another bug with the same symptom:
# (bug or departure, its cell, words its messages say, words they must not say, visible)
HINTS = [
    ("learning rate never decays", TRAIN, [NO_DECAY], [PILE_UP, CLIMBS], True),
    ("training without zero_grad", TRAIN, [PILE_UP], [NO_DECAY, CLIMBS], True),
    ("update with += instead of -=", TRAIN, [CLIMBS], [NO_DECAY, PILE_UP], True),
    ("learning rate grows", TRAIN, [], [NO_DECAY, PILE_UP, CLIMBS], True),
    ("zero_grad between backward and update", TRAIN, [], [NO_DECAY, PILE_UP, CLIMBS], True),
    ("BCE safe for z >= 0 only", BCE, [OVERFLOW, "OverflowError"], [], False),
    ("BCE clamps logits to 50", BCE, [], [OVERFLOW], False),
]


@pytest.mark.parametrize("name, cell, said, unsaid, visible", HINTS, ids=ids(HINTS))
def test_hints_stand_on_their_evidence(solution, name, cell, said, unsaid, visible):
    nb = broken(solution, name)
    messages = [hidden_message(nb, A, cell)]
    if visible:
        messages.append(graded(without_demos(nb), A, visible=True)[cell])
    for message in messages:
        text = flat(message)
        assert all(words in text for words in said), message
        assert not any(words in text for words in unsaid), message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


# ---- lesson 5's network: the student's in the notebook, the course's when graded ----------

ENGINE_LINE = 'Value, Module, MLP = engine("mine", "Value", "Module", "MLP")'


def test_the_lesson_is_graded_on_the_course_network(solution):
    """The cell tagged ``engine`` loads the names the hidden module's ENGINE gives, and
    grading runs the course's code in its place (as in the problem sets)."""
    from autograder.preprocessors.execute import ENGINE_TAG

    hidden = verdicts._hidden(A)
    assert hidden.ENGINE.names == ("Value", "Module", "MLP")
    assert set(hidden.TESTS) == EXERCISES
    assert verdicts.engine_code(A) == hidden.ENGINE.code
    (cell,) = [c for c in solution.cells if ENGINE_TAG in c.metadata.get("tags", [])]
    assert ENGINE_LINE in cell.source.splitlines()
    assert grade_id(cell) is None  # the student's to edit ("mine" or "course")


BROKEN_NETWORK = """
class Module:  # lesson 5 left broken
    def parameters(self):
        raise NotImplementedError()


MLP = Value = None  # and no engine at all
"""


def test_a_broken_lesson_5_costs_nothing_here(solution):
    """The hidden tests use the course's engine and network, whatever the engine cell
    loaded (the visible checks fail here; grading runs the course's engine in that cell)."""
    nb = mutate(solution, ENGINE_LINE, ENGINE_LINE + "\n" + BROKEN_NETWORK)
    assert graded(nb, A) == {}


SHAPES = [  # the probe's answer to "loss" and "train", each missing a part
    (
        "loss",
        {"cases": [{"preds": [1.0, 2.0], "targets": [1, 0]}]},
        [{"data": 0.5, "is_value": True, "grads": [0.1, 0.2]}],
    ),
    (
        "loss",
        {"cases": [{"preds": [1.0, 2.0], "targets": [1, 0]}]},
        [{"data": 0.5, "is_value": True, "grads": [0.1], "param_grads": []}],
    ),
    (
        "loss",
        {"cases": [{"preds": [1.0], "targets": [1]}, {"preds": [2.0], "targets": [0]}]},
        [{"data": 0.5, "is_value": True, "grads": [0.1], "param_grads": []}],
    ),
    (
        "train",
        {"runs": [{"model": "features"}]},
        [
            {
                "returned": [1.0],
                "params": [0.5],
                "sizes": [4],
                "mismatched": 0,
                "used": 4,
                "printed": [],
            }
        ],
    ),
    (
        "train",
        {"runs": [{"model": "scale"}]},
        [
            {
                "returned": [1.0],
                "params": [0.5],
                "sizes": [True],
                "mismatched": 0,
                "used": 4,
                "printed": [],
            }
        ],
    ),
]
WHOLE = {
    "loss": [{"data": 0.5, "is_value": True, "grads": [0.1, 0.2], "param_grads": []}],
    "train": [
        {
            "returned": [1.0],
            "params": [0.5],
            "sizes": [4],
            "mismatched": 0,
            "used": 4,
            "printed": [],
        }
    ],
}


@pytest.mark.parametrize("op, args, result", SHAPES)
def test_incomplete_answers_of_the_lessons_operations_are_refused(op, args, result):
    assert answers.problem(op, args, result) is not None


def test_a_whole_answer_of_each_operation_is_accepted():
    args = {"loss": SHAPES[0][1], "train": SHAPES[4][1]}
    for op, result in WHOLE.items():
        assert answers.problem(op, args[op], result) is None, op


def test_honest_answers_pass_their_shapes(solution):
    """Every hidden test of the lesson, on the solution, without a flag (the probe's own
    answers pass the shape checks)."""
    ns = run_cells(without_demos(solution), A, tests=False)
    for cell in sorted(EXERCISES):
        result = verdict_of(ns, A, cell)
        assert result.passed and not result.flag, (cell, result)


# train's points in three shares, the parts its text names (issue 42): a loop right in
# every way but one part earns the other two; the message names the part at fault and
# those credited. (bug or departure, the share earned, the part's words in its message)
UPDATES, BATCHES, PROGRESS = (
    "`train`'s updates",
    "`train`'s mini-batches",
    "`train`'s progress lines",
)
TRAIN_SHARES = [
    ("train prints no line for the last step", [UPDATES, BATCHES], "should print"),
    ("train prints the loss only", [UPDATES, BATCHES], "should print steps"),
    ("train prints nothing (print_every ignored)", [UPDATES, BATCHES], "should print"),
    ("batch_size ignored", [UPDATES, PROGRESS], "should use 4 samples"),
    ("ys not taken from the batch", [UPDATES, PROGRESS], "another sample's y"),
    ("training without zero_grad", [BATCHES, PROGRESS], "zero them before backward"),
    ("learning rate never decays", [BATCHES, PROGRESS], "lr * (1 - lr_decay * k / steps)"),
]


@pytest.mark.parametrize("name, credited, words", TRAIN_SHARES, ids=ids(TRAIN_SHARES))
def test_a_training_loop_earns_the_shares_of_its_right_parts(solution, name, credited, words):
    nb = without_demos(broken(solution, name))
    verdict = verdict_of(run_cells(nb, A, tests=False), A, TRAIN)
    assert not verdict.passed and verdict.credit == pytest.approx(2 / 3), verdict
    text = flat(verdict.message)
    assert words in text, verdict.message
    assert f"credited: {', '.join(credited)} (2 of 3 shares of the points)" in text, text
    assert all(len(line) < 90 for line in verdict.message.splitlines()), verdict.message
