"""Hidden tests of 08_set_training's exercises 4 to 6: the data, the classifier, Iris.

- ``data``: fit_standardizer and standardize against plain arithmetic, a constant
  feature too, each for its share of the points (train_test_split is given).
- ``classify``: cross_entropy is problem set 1's exercise 2 and is checked by its test
  (sg_softmax.cross_entropy: refgrad, logits of +-1000 too); accuracy with a model that
  answers from the grader's table of scores; each for its share.
- ``iris``: the student's recipe (model, optimizer, steps): the same seed must build the
  same model and another seed another one; trained in the kernel by the probe with the
  course's optimizers and loss on a fresh stratified split of Iris, it must reach 85% on
  the held-out flowers (on a second split if the first falls short).

Registered in 08_set_training.py's TESTS.
"""

from __future__ import annotations

import csv
import math
import random

from .common import COURSE, Given, GradingFailure, Kernel, Part, close, fail, num, shares
from .sg_softmax import cross_entropy as check_cross_entropy

IRIS = COURSE / "source" / "08_set_training" / "iris.csv"
OPTIM = (COURSE / "source" / ".reference" / "refgrad" / "optim.py").read_text()
OPTIMIZERS = (Given("SGD", "SGD", OPTIM), Given("Adam", "Adam", OPTIM))
MAX_STEPS, MAX_PARAMS = 200, 100
THRESHOLD = 0.85  # of the 45 held-out flowers: at least 39 right


def not_written(what: str, got: dict) -> None:
    """A stub raised NotImplementedError: one line, as for every exercise not written yet."""
    if got.get("type") == "NotImplementedError":
        fail(f"{what} raised NotImplementedError (not written yet)")


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


# ---- exercise 4: standardizing ----------------------------------------------------------------


def data(kernel: Kernel) -> None:
    """fit_standardizer, then standardize (on the grader's statistics): each its share."""
    shares(
        kernel,
        [
            Part("`fit_standardizer`", ("fit_standardizer",), lambda: check_fitted(kernel)),
            Part("`standardize`", ("standardize",), lambda: check_standardize(kernel)),
        ],
    )


def _matrix(rng: random.Random, n: int, d: int) -> list[list[float]]:
    return [[round(rng.uniform(-5, 5), 2) for _ in range(d)] for _ in range(n)]


def _stats(xs: list[list[float]], raw: bool = False) -> tuple[list[float], list[float]]:
    """Each feature's mean and standard deviation over n (1.0 for a std of 0, unless
    ``raw``)."""
    n = len(xs)
    means = [math.fsum(col) / n for col in zip(*xs)]
    stds = [math.sqrt(math.fsum((v - m) ** 2 for v in col) / n) for col, m in zip(zip(*xs), means)]
    return means, stds if raw else [s if s > 1e-12 else 1.0 for s in stds]


def _cases(rng: random.Random) -> list[list[list[float]]]:
    cases = [[[3.0, 10.0], [1.0, 10.0]]]  # the visible check's: a constant feature too
    for _ in range(6):
        cases.append(_matrix(rng, rng.randint(3, 8), rng.randint(1, 4)))
    constant = _matrix(rng, 5, 3)
    for row in constant:
        row[1] = 2.5
    return [*cases, constant, [[4.0, -1.5]]]


def check_fitted(kernel: Kernel) -> None:
    cases = _cases(random.Random(kernel.rng.random()))
    results = kernel.run(
        "calls",
        function="fit_standardizer",
        calls=[{"args": [xs]} for xs in cases],
        what="fit_standardizer",
    )
    for xs, got in zip(cases, results):
        _check_fitted(xs, got)


STANDARDIZE = "\n(a new row per row of xs: (x - mean) / std, feature by feature)"


def check_standardize(kernel: Kernel) -> None:
    rng = random.Random(kernel.rng.random())
    calls = []
    for xs in _cases(rng)[1:4]:
        means, stds = _stats(xs)
        others = _matrix(rng, 3, len(xs[0]))
        calls.append({"args": [others, means, stds]})
    results = kernel.run("calls", function="standardize", calls=calls, what="standardize")
    for call, got in zip(calls, results):
        others, means, stds = call["args"]
        what = f"standardize(xs, means={vec(means, 3)}, stds={vec(stds, 3)})"
        if "failed" in got:
            not_written(what, got)
            fail(f"{what} should return new rows, but raised {got['error']}{STANDARDIZE}")
        if got["args"][0] != others:
            fail(
                f"{what} should leave xs as it is, got it changed\n(return new lists, "
                "[[...] for x in xs], and leave the caller's as they are)"
            )
        want = [[(v - m) / s for v, m, s in zip(x, means, stds)] for x in others]
        result = got["result"]
        if not (isinstance(result, list) and len(result) == len(want)):
            fail(f"{what} should return a list of {len(want)} rows, got {num(result)}{STANDARDIZE}")
        for x, row, w in zip(others, result, want):
            if not (isinstance(row, list) and len(row) == len(w)) or not all(
                close(a, b) for a, b in zip(row, w)
            ):
                hint = STANDARDIZE
                times = [(v - m) * s for v, m, s in zip(x, means, stds)]
                if isinstance(row, list) and all(close(a, b) for a, b in zip(row, times)):
                    hint = "\n(that multiplies by the std: divide by it)"
                fail(f"{what}: the row {vec(x)} should become {vec(w)}, got {shown(row)}{hint}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def kinds(x) -> str:
    """What came back, by type: ``(ndarray, ndarray)`` for a pair of arrays."""
    if isinstance(x, list):
        return (
            "(" + ", ".join(v["type"] if isinstance(v, dict) else type(v).__name__ for v in x) + ")"
        )
    return num(x)


COLUMNS = "\n(one mean and one std per feature: zip(*xs) gives the columns)"


def _check_fitted(xs: list, got: dict) -> None:
    what = f"fit_standardizer({rows_text(xs)})"
    if "failed" in got:
        not_written(what, got)
        fail(f"{what} should return (means, stds), but raised {got['error']}{COLUMNS}")
    if got["args"][0] != xs:
        fail(
            f"{what} should leave xs as it is, got it changed\n(compute the statistics "
            "from the values; assign nothing into xs)"
        )
    result = got["result"]
    if not (
        isinstance(result, list) and len(result) == 2 and all(isinstance(r, list) for r in result)
    ):
        fail(f"{what} should return (means, stds), two lists, got {kinds(result)}{COLUMNS}")
    means, stds = _stats(xs)
    got_means, got_stds = result
    if len(got_means) != len(means) or not all(close(a, b) for a, b in zip(got_means, means)):
        fail(f"{what}: the means should be {vec(means)}, got {shown(got_means)}{COLUMNS}")
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
    else:
        hint = "\n(std = sqrt(sum((x - mean)**2) / n) for each column, 1.0 where it is 0)"
    fail(f"{what}: the stds should be {vec(stds)}, got {shown(got_stds)}{hint}")


# ---- exercise 5: the classifier's loss and score ----------------------------------------------


def classify(kernel: Kernel) -> None:
    """cross_entropy is problem set 1's exercise 2, checked as there; then accuracy: each
    for its share of the points."""
    shares(
        kernel,
        [
            Part("`cross_entropy`", ("cross_entropy",), lambda: cross_entropy(kernel)),
            Part("`accuracy`", ("accuracy",), lambda: check_accuracy(kernel)),
        ],
    )


LSE = "(loss = m + log(sum(exp(z - m))) - z[y] with m = max(z), the mean over the batch)"


def cross_entropy(kernel: Kernel) -> None:
    """Problem set 1's check of cross_entropy, its message completed for this set: what
    was expected where it says only what was raised, and a hint where it gives none."""
    try:
        check_cross_entropy(kernel)
    except GradingFailure as exc:
        text = str(exc)
        if "should" not in text:
            text = text.replace("\nraised ", "\nshould give the mean loss, but raised ", 1)
        if not any(line.startswith("(") for line in text.splitlines()):
            if "should return a Value" in text:
                text += "\n(build the loss from the score Values, so that backward() reaches them)"
            else:
                text += "\n" + LSE
        raise GradingFailure(text, exc.credit) from None


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
            not_written(text, got)
            fail(
                f"{text} should return a fraction, but raised {got['error']}\n(model(x) "
                "gives a list of score Values: compare their .data)"
            )
        right = sum(row.index(max(row)) == y for row, y in zip(scores, labels))
        want = right / len(labels)
        result = got["result"]
        if close(result, want):
            continue
        hint = "\n(count the samples whose largest score is at their label; divide by n)"
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
    hint = _iris_hint(losses) or "\n(Adam with lr from 0.01 to 0.1 and 100 to 200 steps works)"
    fail(
        f"iris_setup({seed}), trained on 105 flowers, should get at least "
        f"{math.ceil(THRESHOLD * n)} of {n} held-out flowers right, got {first} and {second} "
        f"on two splits\nthe loss went from {num(losses[0])} to {num(losses[-1])}" + hint
    )


RECIPE = (
    "\n(random.seed(seed), then model = MLP(4, [..., 3]), an optimizer over its\n"
    "parameters and a number of steps: return model, optimizer, steps)"
)
OUTPUTS = "\n(the last layer has 3 outputs: MLP(4, [..., 3]))"


def _iris_right(seed: int, got: dict, test_ys: list[int]) -> int:
    what = f"iris_setup({seed})"
    if got.get("failed") == "call":
        not_written(what, got)
        fail(f"{what} should return (model, optimizer, steps), but raised {got['error']}{RECIPE}")
    if "recipe" in got:
        fail(f"{what} should return (model, optimizer, steps), got {got['recipe']}{RECIPE}")
    steps = got["steps"]
    if isinstance(steps, dict):
        fail(
            f"{what} should return (model, optimizer, steps) in this order, got a third item "
            f"of type {steps['type']}\n(return model, optimizer, steps)"
        )
    if not isinstance(steps, int) or isinstance(steps, bool) or not 0 < steps <= MAX_STEPS:
        fail(
            f"{what}: steps should be a whole number from 1 to {MAX_STEPS}, got {num(steps)}\n"
            "(an int such as 100: the grader trains that many full-batch steps)"
        )
    if got["params"] > MAX_PARAMS:
        fail(
            f"{what} should build a model of at most {MAX_PARAMS} parameters, got "
            f"{got['params']}\n(a smaller network: MLP(4, [8, 3]) has 67)"
        )
    if got["same_seed"] is False:
        fail(
            f"{what}, called twice, should build the same model both times, got two with "
            "different starting weights\n(call random.seed(seed) first, then make the model)"
        )
    if got["other_seed"] is True:
        fail(
            f"{what} and iris_setup({seed + 1}) should build different models, got the same "
            "starting weights\n(seed with the argument: random.seed(seed), not a number of "
            "your own)"
        )
    if "output" in got:
        output = got["output"]
        if output.startswith("Value("):
            output = "one Value (a network with one output?)"
        fail(
            f"{what}: model(x) should return a list of 3 scores, one per species; got {output}"
            f"{OUTPUTS}"
        )
    if got.get("failed") == "backprop":
        not_written(what, got)
        fail(
            f"{what}: training should run, but raised {got['error']}\n(make the optimizer "
            "over model.parameters(), with your SGD or Adam)"
        )
    scores = got["scores"]
    if not all(isinstance(row, list) and len(row) == 3 for row in scores):
        sizes = sorted({len(row) for row in scores if isinstance(row, list)})
        fail(
            f"{what}: model(x) should return a list of 3 scores, one per species; got "
            f"{' or '.join(map(str, sizes)) or 'no'} scores{OUTPUTS}"
        )
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
