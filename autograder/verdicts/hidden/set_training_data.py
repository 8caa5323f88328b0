"""Hidden tests of 08_set_training's exercises 4 to 6: the data, the classifier, Iris.

- ``data``: train_test_split on random labelled points (a partition that keeps each
  point with its label, round(fraction * count) of each class in the test set, the same
  split for the same seed and other splits for other seeds, the inputs left alone);
  fit_standardizer and standardize against plain arithmetic, a constant feature too.
- ``classify``: cross_entropy is problem set 1's exercise 2 and is checked by its test
  (sg_softmax.cross_entropy: refgrad, logits of +-1000 too); accuracy with a model that
  answers from the grader's table of scores.
- ``iris``: the student's recipe (model, optimizer, steps), trained in the kernel by the
  probe with the course's optimizers and loss on a fresh stratified split of Iris, must
  reach 85% on the held-out flowers (on a second split if the first falls short).

Registered in 08_set_training.py's TESTS.
"""

from __future__ import annotations

import csv
import math
import random
from collections import Counter

from .common import COURSE, Given, Kernel, close, fail, num
from .sg_softmax import cross_entropy as check_cross_entropy

IRIS = COURSE / "source" / "08_set_training" / "iris.csv"
OPTIM = (COURSE / "source" / ".reference" / "refgrad" / "optim.py").read_text()
OPTIMIZERS = (Given("SGD", "SGD", OPTIM), Given("Adam", "Adam", OPTIM))
MAX_STEPS, MAX_PARAMS = 200, 100
THRESHOLD = 0.85  # of the 45 held-out flowers: at least 39 right


def vec(values, width: int = 5) -> str:
    shown = ", ".join(num(v) for v in values[:width])
    return f"[{shown}{', ...' if len(values) > width else ''}]"


def shown(x) -> str:
    """A list of numbers as ``vec`` writes it, anything else as ``num`` does."""
    if isinstance(x, list) and all(_is_number(v) for v in x):
        return vec(x)
    return num(x)


def rows_text(xs: list[list[float]]) -> str:
    if len(xs) <= 2 and len(xs[0]) <= 3:
        return "[" + ", ".join(vec(row) for row in xs) + "]"
    return f"xs ({len(xs)} rows of {len(xs[0])} features)"


# ---- exercise 4: splitting and standardizing --------------------------------------------------


def data(kernel: Kernel) -> None:
    check_split(kernel)
    check_standardize(kernel)


def _split_case(rng: random.Random) -> tuple[list, list, float]:
    """Labelled points of 2 or 3 classes (5 to 12 each, shuffled), and a test fraction
    that no class's share puts near .5 (where round and int disagree on purpose)."""
    while True:
        fraction = rng.choice((0.2, 0.25, 0.3, 0.4))
        counts = [rng.randint(5, 12) for _ in range(rng.choice((2, 3)))]
        shares = [fraction * c for c in counts]
        if all(abs(s - math.floor(s) - 0.5) > 0.05 for s in shares) and any(
            s - math.floor(s) > 0.5 for s in shares
        ):
            break
    ys = [c for c, n in enumerate(counts) for _ in range(n)]
    rng.shuffle(ys)
    xs = [[round(rng.uniform(0, 10), 2), float(i)] for i in range(len(ys))]
    return xs, ys, fraction


def check_split(kernel: Kernel) -> None:
    rng = kernel.rng
    xs, ys, fraction = _split_case(rng)
    seeds = rng.sample(range(1000), 4)
    calls = [{"args": [xs, ys, fraction, s]} for s in [seeds[0], *seeds]]
    results = kernel.run("calls", function="train_test_split", calls=calls, what="train_test_split")
    what = f"train_test_split(xs, ys, {fraction}, seed)"
    tests = []
    for got in results:
        if "failed" in got:
            fail(f"{what} raised {got['error']}")
        if got["args"][0] != xs or got["args"][1] != ys:
            fail(f"{what} changed xs or ys: leave the caller's lists as they are")
        tests.append(_check_partition(what, xs, ys, fraction, got["result"]))
    if tests[0] != tests[1]:
        fail(f"{what} gave two different splits for the same seed: use random.Random(seed)")
    if all(t == tests[1] for t in tests[2:]):
        fail(f"{what} gave the same test set for 4 different seeds: shuffle with the seed")


def _check_partition(what: str, xs: list, ys: list, fraction: float, result) -> frozenset:
    """The test set (as indices) of a correct partition; fails on anything else."""
    n = len(xs)
    if not (
        isinstance(result, list) and len(result) == 4 and all(isinstance(r, list) for r in result)
    ):
        fail(f"{what} should return 4 lists (train_xs, train_ys, test_xs, test_ys)")
    train_xs, train_ys, test_xs, test_ys = result
    if len(train_xs) != len(train_ys) or len(test_xs) != len(test_ys):
        fail(f"{what}: each x list should be as long as its y list")
    label = {x[1]: y for x, y in zip(xs, ys)}
    seen = Counter()
    for x, y in [*zip(train_xs, train_ys), *zip(test_xs, test_ys)]:
        if not (isinstance(x, list) and len(x) == 2 and x[1] in label and xs[int(x[1])] == x):
            fail(f"{what} returned {num(x)}, which is not one of the points")
        if label[x[1]] != y:
            fail(f"{what} paired a point with another point's label: keep (x, y) together")
        seen[x[1]] += 1
    if any(c > 1 for c in seen.values()) or len(seen) != n:
        fail(f"{what}: every point should be in exactly one of the two sets")
    counts = Counter(ys)
    got = Counter(test_ys)
    for c in sorted(counts):
        want = round(fraction * counts[c])
        if got[c] != want:
            if len(test_xs) > len(train_xs) and fraction < 0.5:
                fail(f"{what}: the test set is the larger one: return train first, then test")
            hint = ""
            if got[c] == int(fraction * counts[c]):
                hint = f"\n(round({fraction} * {counts[c]}) is {want}: use round, not int)"
            elif sum(got.values()) == round(fraction * n):
                hint = "\n(take round(test_fraction * count) from each class separately)"
            fail(
                f"{what}: class {c} has {counts[c]} points, so {want} should be in the test "
                f"set, got {got[c]}{hint}"
            )
    return frozenset(x[1] for x in test_xs)


def _matrix(rng: random.Random, n: int, d: int) -> list[list[float]]:
    return [[round(rng.uniform(-5, 5), 2) for _ in range(d)] for _ in range(n)]


def _stats(xs: list[list[float]], raw: bool = False) -> tuple[list[float], list[float]]:
    """Each feature's mean and standard deviation over n (1.0 for a std of 0, unless
    ``raw``)."""
    n = len(xs)
    means = [math.fsum(col) / n for col in zip(*xs)]
    stds = [math.sqrt(math.fsum((v - m) ** 2 for v in col) / n) for col, m in zip(zip(*xs), means)]
    return means, stds if raw else [s if s > 1e-12 else 1.0 for s in stds]


def check_standardize(kernel: Kernel) -> None:
    rng = kernel.rng
    cases = [[[1.0, 10.0], [3.0, 10.0]]]  # the visible check's: a constant feature too
    for _ in range(6):
        cases.append(_matrix(rng, rng.randint(3, 8), rng.randint(1, 4)))
    constant = _matrix(rng, 5, 3)
    for row in constant:
        row[1] = 2.5
    cases += [constant, [[4.0, -1.5]]]
    results = kernel.run(
        "calls",
        function="fit_standardizer",
        calls=[{"args": [xs]} for xs in cases],
        what="fit_standardizer",
    )
    for xs, got in zip(cases, results):
        _check_fitted(xs, got)
    calls = []
    for xs in cases[1:4]:
        means, stds = _stats(xs)
        others = _matrix(rng, 3, len(xs[0]))
        calls.append({"args": [others, means, stds]})
    results = kernel.run("calls", function="standardize", calls=calls, what="standardize")
    for call, got in zip(calls, results):
        others, means, stds = call["args"]
        what = f"standardize(xs, means={vec(means, 3)}, stds={vec(stds, 3)})"
        if "failed" in got:
            fail(f"{what} raised {got['error']}")
        if got["args"][0] != others:
            fail(f"{what} changed xs: return new lists, leave the caller's as they are")
        want = [[(v - m) / s for v, m, s in zip(x, means, stds)] for x in others]
        result = got["result"]
        if not (isinstance(result, list) and len(result) == len(want)):
            fail(f"{what} should return a list of {len(want)} rows, got {num(result)}")
        for x, row, w in zip(others, result, want):
            if not (isinstance(row, list) and len(row) == len(w)) or not all(
                close(a, b) for a, b in zip(row, w)
            ):
                fail(f"{what}: the row {vec(x)} should become {vec(w)}, got {shown(row)}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _check_fitted(xs: list, got: dict) -> None:
    what = f"fit_standardizer({rows_text(xs)})"
    if "failed" in got:
        fail(f"{what} raised {got['error']}")
    if got["args"][0] != xs:
        fail(f"{what} changed xs: leave the caller's lists as they are")
    result = got["result"]
    if not (
        isinstance(result, list) and len(result) == 2 and all(isinstance(r, list) for r in result)
    ):
        fail(f"{what} should return (means, stds), two lists, got {num(result)}")
    means, stds = _stats(xs)
    got_means, got_stds = result
    if len(got_means) != len(means) or not all(close(a, b) for a, b in zip(got_means, means)):
        fail(f"{what}: the means should be {vec(means)}, got {shown(got_means)}")
    if len(got_stds) == len(stds) and all(close(a, b) for a, b in zip(got_stds, stds)):
        return
    n = len(xs)
    hint = ""
    raw = _stats(xs, raw=True)[1]
    pairs = [(a, b) for a, b, r in zip(got_stds, stds, raw) if r > 1e-12 and _is_number(a)]
    if any(r <= 1e-12 and a == 0.0 for a, r in zip(got_stds, raw)):
        hint = "\n(a constant feature has std 0: give 1.0 instead, so it is only centred)"
    elif pairs and n > 1 and all(close(a, b * math.sqrt(n / (n - 1))) for a, b in pairs):
        hint = "\n(that divides by n - 1: the exercise asks for the mean over n samples)"
    elif any(not close(b, 1.0) for _, b in pairs) and all(close(a, b * b) for a, b in pairs):
        hint = "\n(those are variances: take the square root)"
    fail(f"{what}: the stds should be {vec(stds)}, got {shown(got_stds)}{hint}")


# ---- exercise 5: the classifier's loss and score ----------------------------------------------


def classify(kernel: Kernel) -> None:
    """cross_entropy is problem set 1's exercise 2, checked as there; then accuracy."""
    check_cross_entropy(kernel)
    check_accuracy(kernel)


def check_accuracy(kernel: Kernel) -> None:
    rng = kernel.rng
    cases = []
    for trial in range(8):
        n, classes = rng.randint(4, 12), rng.randint(2, 4)
        scores = [
            rng.sample([round(rng.uniform(-3, 3), 3) for _ in range(9)], classes) for _ in range(n)
        ]
        scores = [
            row if len(set(row)) == classes else [float(c) for c in range(classes)]
            for row in scores
        ]
        labels = [rng.randrange(classes) for _ in range(n)]
        if trial == 6:
            labels = [row.index(max(row)) for row in scores]  # all right
        if trial == 7:
            labels = [row.index(min(row)) for row in scores]  # all wrong
        cases.append({"scores": scores, "labels": labels})
    results = kernel.run(
        "st_accuracy", value="Value", function="accuracy", cases=cases, what="accuracy"
    )
    for case, got in zip(cases, results):
        scores, labels = case["scores"], case["labels"]
        text = f"accuracy(model, xs, labels) on {len(labels)} samples"
        if "failed" in got:
            fail(f"{text} raised {got['error']}")
        right = sum(row.index(max(row)) == y for row, y in zip(scores, labels))
        want = right / len(labels)
        result = got["result"]
        if close(result, want):
            continue
        hint = ""
        if close(result, right) and right:
            hint = "\n(that is the count: divide by the number of samples)"
        elif close(
            result, sum(row.index(min(row)) == y for row, y in zip(scores, labels)) / len(labels)
        ):
            hint = "\n(the predicted class is the one with the largest score)"
        fail(
            f"{text}, {right} of them right (the largest score is the label's): should "
            f"return {num(want)}, got {num(result)}{hint}"
        )


# ---- exercise 6: the Iris recipe -------------------------------------------------------------


def load_iris() -> tuple[list[list[float]], list[int]]:
    with IRIS.open(newline="") as f:
        rows = list(csv.DictReader(f))
    species = list(dict.fromkeys(row["species"] for row in rows))
    names = [name for name in rows[0] if name != "species"]
    return [[float(row[k]) for k in names] for row in rows], [
        species.index(r["species"]) for r in rows
    ]


def iris_split(rng: random.Random, xs: list, ys: list, per_class: int = 15) -> dict:
    """A stratified split (``per_class`` test flowers of each species), standardized with
    the training set's means and standard deviations."""
    train, test = [], []
    for c in sorted(set(ys)):
        members = [i for i, y in enumerate(ys) if y == c]
        rng.shuffle(members)
        test += members[:per_class]
        train += members[per_class:]
    rng.shuffle(train)
    means, stds = _stats([xs[i] for i in train])

    def scaled(i: int) -> list[float]:
        return [round((v - m) / s, 6) for v, m, s in zip(xs[i], means, stds)]

    return {
        "train_xs": [scaled(i) for i in train],
        "train_ys": [ys[i] for i in train],
        "test_xs": [scaled(i) for i in test],
        "test_ys": [ys[i] for i in test],
    }


def iris(kernel: Kernel) -> None:
    """The recipe, trained by the probe with the course's optimizers on a fresh split."""
    xs, ys = load_iris()
    rng = kernel.rng
    seed = rng.randrange(10**6)
    tried = []
    for _ in range(2):
        split = iris_split(rng, xs, ys)
        got = kernel.run(
            "st_iris",
            given=OPTIMIZERS,
            function="iris_setup",
            seed=seed,
            train_xs=split["train_xs"],
            train_ys=split["train_ys"],
            test_xs=split["test_xs"],
            max_steps=MAX_STEPS,
            max_params=MAX_PARAMS,
            what=f"iris_setup({seed})",
        )
        right = _iris_right(seed, got, split["test_ys"])
        tried.append((right, got["losses"]))
        if right >= THRESHOLD * len(split["test_ys"]):
            return
    n = len(split["test_ys"])
    (first, losses), (second, _) = tried
    fail(
        f"iris_setup({seed}), trained on 105 flowers, got {first} and {second} of {n} "
        f"held-out flowers right on two splits; at least {math.ceil(THRESHOLD * n)} needed\n"
        f"the loss went from {num(losses[0])} to {num(losses[-1])}" + _iris_hint(losses)
    )


def _iris_right(seed: int, got: dict, test_ys: list[int]) -> int:
    what = f"iris_setup({seed})"
    if got.get("failed") == "call":
        fail(f"{what} raised {got['error']}")
    if "recipe" in got:
        fail(f"{what} should return (model, optimizer, steps), got {got['recipe']}")
    steps = got["steps"]
    if isinstance(steps, dict):
        fail(
            f"{what} should return (model, optimizer, steps) in this order; its third item "
            f"is of type {steps['type']}"
        )
    if not isinstance(steps, int) or isinstance(steps, bool) or not 0 < steps <= MAX_STEPS:
        fail(f"{what}: steps should be a whole number from 1 to {MAX_STEPS}, got {num(steps)}")
    if got["params"] > MAX_PARAMS:
        fail(f"{what}: the model has {got['params']} parameters; at most {MAX_PARAMS}")
    if "output" in got:
        output = got["output"]
        if output.startswith("Value("):
            output = "one Value (a network with one output?)"
        fail(f"{what}: model(x) should return a list of 3 scores, one per species; got {output}")
    if got.get("failed") == "backprop":
        fail(f"training the model of {what} raised {got['error']}")
    scores = got["scores"]
    if not all(isinstance(row, list) and len(row) == 3 for row in scores):
        fail(f"{what}: model(x) should return a list of 3 scores, one per species")
    right = 0
    for row, y in zip(scores, test_ys):
        if all(isinstance(v, (int, float)) and math.isfinite(v) for v in row):
            right += row.index(max(row)) == y
    return right


def _iris_hint(losses: list[float]) -> str:
    first, last = losses[0], losses[-1]
    if not math.isfinite(last) or last > first:
        return "\n(the loss grew: try a smaller learning rate)"
    if last > 0.5 * first:
        return "\n(the loss hardly fell: more steps, or a larger learning rate)"
    return ""
