"""Problem set 2 (08_set_training): its visible and hidden checks agree on what every
exercise requires (issue 42; tests/test_contracts.py does the same for lessons 1 to 3).

For each exercise, the ways a student can depart from its contract (a list of one's own
for the parameters, state kept on the instance, the names of the arguments, a Value
where the text asks for one, two lists, the inputs left alone, a model made from the
seed...) rather than from its arithmetic. Each departure must fail the exercise's visible
check, with a sentence naming what is required, exactly when its hidden test fails it:
no ✓ in the notebook followed by a hidden 0 for a reason the visible check could have
stated. And the other way round: each correct variant the hidden tests accept
(test_08_set_training.VARIANTS) passes the visible checks too.
"""

from __future__ import annotations

import pytest
import test_08_set_training as t08
from catalogue import assert_passes, changed, solution
from test_contracts import visible_and_hidden

A = t08.A
SGD, ADAM, FIT, DATA, CLASSIFY, IRIS = (
    t08.SGD,
    t08.ADAM,
    t08.FIT,
    t08.DATA,
    t08.CLASSIFY,
    t08.IRIS,
)


def bug(name: str) -> list[tuple[str, str]]:
    """The edits of test_08_set_training's slip ``name``."""
    (row,) = [row for row in t08.BUGS if row[0] == name]
    return [(row[1], row[2])] if isinstance(row[1], str) else list(row[1])


# (exercise's test cell, departure, [(old, new) in the solution cells], words the visible
#  and the hidden message must both contain)
DEPARTURES = [
    # ---- exercise 1: SGD
    (
        SGD,
        "params kept as given",
        bug("SGD keeps the caller's params (a generator is read once)"),
        "list(params)",
    ),
    (
        SGD,
        "velocities in a dict on the class",
        bug("SGD velocities in a dict on the class"),
        "state",
    ),
    (SGD, "velocities in a module global", bug("SGD velocities in a module global"), "state"),
    (
        SGD,
        "velocities put on the class by __init__",
        bug("SGD keeps its velocities on the class"),
        "state",
    ),
    (
        SGD,
        "velocities in a default argument",
        bug("SGD velocities in a shared default argument"),
        "state",
    ),
    (SGD, "no default for momentum", bug("SGD without a default momentum"), "momentum"),
    (SGD, "zero_grad() leaves the grads", bug("SGD.zero_grad does nothing"), "grad"),
    # ---- exercise 2: Adam
    (
        ADAM,
        "params kept as given",
        bug("Adam keeps the caller's params (a generator is read once)"),
        "list(params)",
    ),
    (ADAM, "t counted on the class", bug("Adam counts t on the class"), "state"),
    (ADAM, "beta1 and beta2 for betas", bug("Adam takes beta1 and beta2"), "betas"),
    (ADAM, "eps fixed at 1e-8", bug("Adam ignores its eps argument"), "eps"),
    (ADAM, "eps under the root", bug("Adam: eps inside the square root"), "eps"),
    (
        ADAM,
        "eps before the bias correction",
        bug("Adam: the paper's efficient form (eps before the correction)"),
        "eps",
    ),
    # arithmetic more than a contract: the worked example's numbers are off, and say so
    (ADAM, "eps added to v", bug("Adam adds eps to v"), ""),
    (ADAM, "zero_grad() leaves the grads", bug("Adam.zero_grad does nothing"), "grad"),
    # ---- exercise 3: sse_loss and fit
    (FIT, "sse_loss gives a float", bug("sse_loss returns a float"), "Value"),
    (FIT, "fit keeps the Values", bug("fit keeps Values"), "loss.data"),
    # ---- exercise 4: fit_standardizer and standardize
    (
        DATA,
        "fit_standardizer gives numpy arrays",
        bug("fit_standardizer returns numpy arrays"),
        "two lists",
    ),
    (
        DATA,
        "fit_standardizer writes into xs",
        [("    n = len(xs)\n", "    n = len(xs)\n    xs.sort()\n")],
        "leave xs as it is",
    ),
    (DATA, "standardize in place", bug("standardize in place"), "leave xs as it is"),
    # ---- exercise 5: cross_entropy and accuracy
    (CLASSIFY, "cross_entropy gives a float", bug("cross-entropy returns a float"), "Value"),
    (CLASSIFY, "accuracy compares Values", bug("accuracy compares the Values"), "Value"),
    # ---- exercise 6: the Iris recipe
    (IRIS, "no seed", bug("recipe not seeded"), "random.seed(seed)"),
    (IRIS, "a seed of its own", bug("recipe seeded with 0"), "seed with the argument"),
    (IRIS, "seeded after the model", bug("recipe seeded after the model"), "random.seed(seed)"),
    (IRIS, "(model, steps, optimizer)", bug("recipe in the wrong order"), "steps"),
    (IRIS, "one output", bug("recipe with one output"), "3 scores"),
    (IRIS, "over the step budget", bug("recipe over the step budget"), "1 to 200"),
    (
        IRIS,
        "over the parameter budget",
        bug("recipe over the parameter budget"),
        "at most 100 parameters",
    ),
]


@pytest.mark.parametrize(
    "exercise, departure, edits, words", DEPARTURES, ids=[f"{d[0]}: {d[1]}" for d in DEPARTURES]
)
def test_visible_and_hidden_checks_agree(exercise, departure, edits, words):
    nb = changed(solution(A), edits)
    seen, verdict = visible_and_hidden(nb, A, exercise)
    assert not verdict.passed, f"the hidden test passes {departure}"
    assert seen is not None, f"the visible check passes {departure}, the hidden test fails:\n"
    assert words in seen and words in verdict.message, (
        f"{departure}:\nvisible: {seen}\nhidden: {verdict.message}"
    )
    for line in seen.splitlines():
        assert len(line) < 90, line


def test_every_exercise_has_departures():
    assert {d[0] for d in DEPARTURES} == t08.EXERCISES


def test_the_departures_leave_the_solution_passing():
    """The harness itself: the unchanged solution passes each exercise both ways."""
    for exercise in t08.EXERCISES:
        seen, verdict = visible_and_hidden(solution(A), A, exercise)
        assert seen is None and verdict.passed, (exercise, seen, verdict.message)


@pytest.mark.parametrize("name, old, new", t08.VARIANTS, ids=[v[0] for v in t08.VARIANTS])
def test_what_the_hidden_tests_accept_the_visible_checks_accept(name, old, new):
    nb = changed(solution(A), [(old, new)])
    if "self.state" in new:  # the dict of velocities is made in __init__
        nb = changed(nb, [("self.velocity = [0.0 for _ in self.params]", "self.state = {}")])
    assert_passes(nb, A, visible=True)
