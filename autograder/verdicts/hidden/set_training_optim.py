"""Hidden tests of problem set 2's exercises 1 and 2, the optimizers (08_set_training).

Optimizers run in the kernel on Values with the grader's data and gradients, and their
paths are compared here, step by step, with the reference optimizers (refgrad/optim.py);
when a path is off, the grader replays the classic slips (no bias correction, the step
climbing the gradient, the velocity used before its update, grads that pile up, ...) and
names the one that gives exactly the student's numbers.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Sequence

from .common import Kernel, close, fail, num

optim = importlib.import_module("_course_refgrad.optim")  # loaded by common


class Param:
    """A parameter for the reference optimizers: plain data and grad."""

    __slots__ = ("data", "grad")

    def __init__(self, data: float) -> None:
        self.data, self.grad = data, 0.0


def reference_path(cls, kwargs: dict, data: list[float], grads: list[list[float]]) -> list:
    """The data after each step of refgrad's optimizer ``cls``."""
    params = [Param(d) for d in data]
    opt = cls(params, **kwargs)
    path = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = g
        opt.step()
        path.append([p.data for p in params])
    return path


def piled_up(grads: list[list[float]]) -> list[list[float]]:
    """The grads an optimizer sees when zero_grad() resets nothing: running sums."""
    total, out = [0.0] * len(grads[0]), []
    for step_grads in grads:
        total = [t + g for t, g in zip(total, step_grads)]
        out.append(total)
    return out


def sgd_slip(slip: str, kwargs: dict, data: list[float], grads: list[list[float]]) -> list:
    """SGD with one classic slip, in plain floats."""
    lr, mu = kwargs["lr"], kwargs.get("momentum", 0.0)
    p, v, path = list(data), [0.0] * len(data), []
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            old = v[i]
            v[i] = {
                "ascent": mu * old + g,
                "old velocity": mu * old + g,
                "no momentum": g,
                "average": mu * old + (1 - mu) * g,
                "lr twice": mu * old + lr * g,
                "momentum sign": g - mu * old,
            }[slip]
            if slip == "ascent":
                p[i] += lr * v[i]
            elif slip == "old velocity":
                p[i] -= lr * old
            else:
                p[i] -= lr * v[i]
        path.append(list(p))
    return path


SGD_HINTS = {
    "ascent": "the parameters climb the gradient: p.data -= lr * v, with v = mu * v + grad",
    "old velocity": "the update uses the velocity from before this step: update v first",
    "no momentum": "momentum is ignored: v = momentum * v + grad, kept between steps",
    "average": "that is v = mu * v + (1 - mu) * grad; the exercise asks for v = mu * v + grad",
    "lr twice": "lr is applied twice: v = mu * v + grad, then p.data -= lr * v",
    "momentum sign": "the momentum term has the wrong sign: v = momentum * v + grad",
}


def adam_slip(slip: str, kwargs: dict, data: list[float], grads: list[list[float]]) -> list:
    """Adam with one classic slip, in plain floats."""
    lr = kwargs.get("lr", 0.001)
    b1, b2 = kwargs.get("betas", (0.9, 0.999))
    eps = 1e-8 if slip == "eps fixed" else kwargs.get("eps", 1e-8)
    if slip == "betas swapped":
        b1, b2 = b2, b1
    n = len(data)
    p, m, v, path = list(data), [0.0] * n, [0.0] * n, []
    for k, step_grads in enumerate(grads):
        for i, g in enumerate(step_grads):
            t = {"t stuck": 1, "t per parameter": k * n + i + 1}.get(slip, k + 1)
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * (g if slip == "v of g" else g * g)
            m_hat = (
                m[i] if slip in ("no bias correction", "no correction of m") else m[i] / (1 - b1**t)
            )
            v_hat = (
                v[i] if slip in ("no bias correction", "no correction of v") else v[i] / (1 - b2**t)
            )
            denom = {
                "no square root": v_hat + eps,
                "eps under the root": math.sqrt(v_hat + eps),
                "eps added to v": math.sqrt((v[i] + eps) / (1 - b2**t)),
                "eps before the correction": (math.sqrt(v[i]) + eps) / math.sqrt(1 - b2**t),
            }.get(slip, math.sqrt(v_hat) + eps)
            p[i] += (1 if slip == "ascent" else -1) * lr * m_hat / denom
        path.append(list(p))
    return path


ADAM_HINTS = {
    "no bias correction": "no bias correction: use m / (1 - beta1**t) and v / (1 - beta2**t)",
    "no correction of m": "m is not bias-corrected: m_hat = m / (1 - beta1**t)",
    "no correction of v": "v is not bias-corrected: v_hat = v / (1 - beta2**t)",
    "t stuck": "t never grows: count the steps (t = 1 at the first step, then 2, ...)",
    "t per parameter": "t grows once per parameter; it should grow once per step()",
    "betas swapped": "the betas are swapped: beta1 (0.9) is for m, beta2 (0.999) for v",
    "no square root": "the step divides by v_hat + eps: it is sqrt(v_hat) + eps",
    "ascent": "the parameters climb the gradient: p.data -= lr * m_hat / (...)",
    "v of g": "v is the running mean of grad**2, not of grad",
    "eps fixed": "eps is Adam's argument: use self.eps, not 1e-8",
    "eps under the root": "eps goes outside the root: lr * m_hat / (sqrt(v_hat) + eps)",
    "eps added to v": "eps is added to sqrt(v_hat), not to v: lr * m_hat / (sqrt(v_hat) + eps)",
    "eps before the correction": "eps is added after the bias correction, to sqrt(v_hat):\n"
    "lr * m_hat / (sqrt(v_hat) + eps), as the text and torch.optim.Adam have it",
}
# When no slip explains a wrong path: what to compare it with.
FORMULAS = {
    "SGD": "v = momentum * v + grad, then p.data -= lr * v, one v per parameter from 0.0",
    "Adam": "m, v, then m_hat = m / (1 - beta1**t), v_hat = v / (1 - beta2**t),\n"
    "then p.data -= lr * m_hat / (sqrt(v_hat) + eps), with t = 1 at the first step",
}
STATE = {"SGD": "self.velocity", "Adam": "self.m, self.v, self.t"}


def same_path(got: list, want: list, rel: float = 1e-6) -> bool:
    return len(got) == len(want) and all(
        len(g) == len(w) and all(close(a, b, rel, 1e-8) for a, b in zip(g, w))
        for g, w in zip(got, want)
    )


def call_text(name: str, kwargs: dict) -> str:
    args = "".join(f", {k}={num(v) if not isinstance(v, tuple) else v}" for k, v in kwargs.items())
    return f"{name}(params{args})"


def check_optimizer(
    kernel: Kernel,
    name: str,
    runs: list[dict],
    slips: dict[str, str],
    replay: Callable[[str, dict, list, list], list],
) -> None:
    """Run ``runs`` with the student's optimizer class ``name``; compare each group's
    path with the reference's, and say which slip explains a difference: the one whose
    replay gives the student's numbers on every run with one optimizer. The first two
    runs are the same run twice: if their paths differ, a new optimizer started with an
    old one's state, and that is what the message says."""
    cls = getattr(optim, name)
    results = kernel.run("st_optimizer", value="Value", optimizer=name, runs=runs, what=name)
    evidence = Evidence(runs, results, slips, replay, cls)
    leaked = _leaked(results[0], results[1])
    for run, got in zip(runs, results):
        what = call_text(name, run["kwargs"])
        if leaked:
            hint = LEAKED.format(name=name, state=STATE[name])
        elif len(run["groups"]) > 1:
            hint = SHARED.format(name=name, state=STATE[name])
        elif run.get("params") == "generator":
            hint = GENERATOR.format(name=name)
        else:
            hint = ""
        if got.get("failed") == "build":
            not_written(what, got)
            fail(
                f"{what} should make an optimizer, but raised {got['error']}"
                + (hint or _build_hint(name, got))
            )
        if "trajectory" not in got:
            if got["step"] is None:
                not_written(f"{name}.zero_grad()", got)
                fail(
                    f"{name}.zero_grad() should set every grad to 0.0, but raised "
                    f"{got['error']}\n(loop over the parameters kept in __init__: p.grad = 0.0)"
                )
            not_written(what, got)
            fail(
                f"{what}: step {got['step'] + 1} should move every parameter, but raised "
                f"{got['error']}" + (hint or _error_hint(name, run, got))
            )
        for g, group in enumerate(run["groups"]):
            want = reference_path(cls, run["kwargs"], group["data"], group["grads"])
            wrong = _first_difference(got["trajectory"][g], want)
            if wrong is None:
                continue
            k, i = wrong
            grads = ", ".join(num(s[i]) for s in group["grads"][: k + 1])
            fail(
                f"{what}: after step {k + 1} parameter {i} should be {num(want[k][i])}, got "
                f"{num(got['trajectory'][g][k][i])}\n"
                f"parameter {i} started at {num(group['data'][i])}; its grads: {grads}"
                + (hint or evidence.hint() or f"\n(compare with the formulas: {FORMULAS[name]})")
            )
        if any(x != 0.0 for zeroed in got["zeroed"] for x in zeroed):
            fail(
                f"after {name}.zero_grad() every grad should be 0.0, got "
                f"{num(got['zeroed'][0][0])}\n(zero_grad() sets p.grad = 0.0 for every "
                "parameter it keeps)"
            )


SHARED = "\n(two {name}s share their state: keep it on self ({state}), made in __init__)"
LEAKED = (
    "\n(a new {name} started with an earlier one's state: keep the state on the instance\n"
    "({state}, made in __init__), not on the class, a default argument or a global)"
)
GENERATOR = (
    "\n({name} got its parameters as a generator (model.parameters() may be one), which\n"
    "can be read only once: keep a list of your own, self.params = list(params))"
)


def _leaked(first: dict, second: dict) -> bool:
    """Whether the same run, made twice with new optimizers, went two different ways."""
    paths = [got.get("trajectory") for got in (first, second)]
    if None in paths:
        return (paths[0] is None) != (paths[1] is None)
    return not all(same_path(a, b, 1e-9) for a, b in zip(*paths))


def _build_hint(name: str, got: dict) -> str:
    if got["type"] == "TypeError":
        signature = {
            "SGD": "SGD(params, lr, momentum=0.0)",
            "Adam": "Adam(params, lr=0.001, betas=(0.9, 0.999), eps=1e-8)",
        }[name]
        return f"\n(the grader passes the arguments by name: keep {signature})"
    return f"\n({name}.__init__ should only store its arguments and zeros, one per parameter)"


def _error_hint(name: str, run: dict, got: dict) -> str:
    """Why a step may raise: Adam dividing by zero, a square root of a negative number, a
    list of states shorter than the parameters."""
    if got["type"] == "ZeroDivisionError":
        zero = any(0.0 in group["grads"][got["step"]] for group in run["groups"])
        if zero:
            return "\n(a gradient of 0 gives m = v = 0: add eps to the denominator)"
        return "\n(1 - beta**t is 0 when t is 0: t counts from 1 at the first step)"
    if got["type"] == "ValueError" and "domain" in got["message"]:
        return "\n(a square root of a negative number: v averages grad**2, never negative)"
    if got["type"] == "IndexError":
        return "\n(one state per parameter: make the lists in __init__ from self.params)"
    if got["type"] == "OverflowError":
        return "\n(a number grew past a float: the step is lr * ..., not ... ** t)"
    return f"\n(step() loops over the parameters: {FORMULAS[name]})"


def _first_difference(got: list, want: list) -> tuple[int, int] | None:
    """(step, parameter) of the first value off the reference's path."""
    for k, (row, ref_row) in enumerate(zip(got, want)):
        for i, (x, w) in enumerate(zip(row, ref_row)):
            if not close(x, w, 1e-6, 1e-8):
                return k, i
    return None


class Evidence:
    """What the paths of the runs with one optimizer say about a slip."""

    def __init__(self, runs, results, slips, replay, cls) -> None:
        self.cases = [
            (run, got["trajectory"][0])
            for run, got in zip(runs, results)
            if len(run["groups"]) == 1 and "trajectory" in got and "params" not in run
        ]
        self.slips, self.replay, self.cls = slips, replay, cls

    def hint(self) -> str:
        for _, path in self.cases:
            if path and path[0] and isinstance(path[0][0], dict):
                return f"\n(the data became a {path[0][0].get('type', '?')}, not a float)"
        for slip, hint in self.slips.items():
            if self.cases and all(self._explains(slip, run, path) for run, path in self.cases):
                return f"\n({hint})"
        piled = [(run, path) for run, path in self.cases if run["mode"] == "accumulate"]
        if piled and all(self._explains(None, run, path) for run, path in piled):
            return "\n(the grads pile up: zero_grad() must set every grad to 0.0)"
        return ""

    def _explains(self, slip: str | None, run: dict, path: list) -> bool:
        group = run["groups"][0]
        try:
            if slip is None:
                grads = piled_up(group["grads"])
                want = reference_path(self.cls, run["kwargs"], group["data"], grads)
            else:
                want = self.replay(slip, run["kwargs"], group["data"], group["grads"])
        except (ArithmeticError, ValueError):  # the slip itself breaks on these inputs
            return False
        return same_path(path, want, 1e-5)


def _grad(rng) -> float:
    """A gradient of any size from 1e-9 to 1000, either sign, sometimes 0: where Adam's
    eps matters (a gradient near 1e-8) the text's formula is the only one that agrees."""
    if rng.random() < 0.08:
        return 0.0
    return float(f"{rng.choice((-1, 1)) * 10 ** rng.uniform(-9.0, 3.0):.3g}")


def _group(rng, n: int, steps: int) -> dict:
    """Random data, and gradients of every size (``_grad``)."""
    return {
        "data": [round(rng.uniform(-2.0, 2.0), 3) for _ in range(n)],
        "grads": [[_grad(rng) for _ in range(n)] for _ in range(steps)],
    }


def _runs(rng, name: str, fixed: list[dict], kwargs_list: list[dict]) -> list[dict]:
    """The fixed runs (the first one twice, to see whether a new optimizer starts afresh),
    random runs with each of ``kwargs_list`` (grads set, then accumulated after zero_grad;
    1 to 5 parameters, once 20; once the parameters as a generator), and two optimizers
    stepping in turn."""
    runs = [fixed[0], fixed[0], *fixed[1:]]
    for j, kwargs in enumerate(kwargs_list):
        runs.append(
            {
                "optimizer": name,
                "kwargs": kwargs,
                "mode": "set" if j % 2 == 0 else "accumulate",
                "groups": [_group(rng, 20 if j == 1 else rng.randint(1, 5), rng.randint(4, 8))],
            }
        )
    runs[-1] = {**runs[-1], "params": "generator"}
    steps = rng.randint(3, 6)
    runs.append(
        {
            "optimizer": name,
            "kwargs": kwargs_list[0],
            "mode": "accumulate",
            "groups": [_group(rng, 3, steps), _group(rng, 2, steps)],
        }
    )
    return runs


def sgd(kernel: Kernel) -> None:
    """SGD on the visible check's path, with momentum 0, omitted and random, on random
    data and gradients, grads set or accumulated after zero_grad, two at a time."""
    rng = kernel.rng
    fixed = [
        {
            "optimizer": "SGD",
            "kwargs": {"lr": 0.1, "momentum": 0.9},
            "mode": "accumulate",
            "groups": [{"data": [1.0, -0.5], "grads": [[0.5, -0.25]] * 3}],
        },
        {
            "optimizer": "SGD",
            "kwargs": {"lr": 0.5},
            "mode": "set",
            "groups": [_group(rng, 3, 4)],
        },
    ]
    kwargs_list = [
        {"lr": rng.choice((0.01, 0.05, 0.1, 0.3)), "momentum": rng.choice((0.5, 0.8, 0.9, 0.95))}
        for _ in range(5)
    ]
    kwargs_list.insert(2, {"lr": 0.2, "momentum": 0.0})
    check_optimizer(kernel, "SGD", _runs(rng, "SGD", fixed, kwargs_list), SGD_HINTS, sgd_slip)


def adam(kernel: Kernel) -> None:
    """Adam on the visible check's path, with its defaults and random betas and eps, on
    random data and gradients (1e-9 to 1000 in size, and 0), grads set or accumulated
    after zero_grad, two at a time."""
    rng = kernel.rng
    sizes = [1000.0, -1.0, 0.05, -250.0, 0.0, 1e-8, -3e-9]
    fixed = [
        {
            "optimizer": "Adam",
            "kwargs": {"lr": 0.1},
            "mode": "accumulate",
            "groups": [{"data": [1.0, -0.5], "grads": [[0.5, -0.25]] * 3}],
        },
        {  # the first step is about lr, whatever the gradient's size; a 0 gradient: no step
            "optimizer": "Adam",
            "kwargs": {"lr": 0.05},
            "mode": "set",
            "groups": [{"data": [0.5] * 7, "grads": [sizes, [g / 2 for g in sizes]]}],
        },
        {
            "optimizer": "Adam",
            "kwargs": {},
            "mode": "set",
            "groups": [_group(rng, 3, 5)],
        },
    ]
    kwargs_list = []
    for j in range(5):
        kwargs = {
            "lr": rng.choice((0.01, 0.05, 0.1)),
            "betas": rng.choice(((0.9, 0.999), (0.8, 0.99), (0.5, 0.9))),
        }
        if j % 2:  # eps as an argument too, large enough to matter
            kwargs["eps"] = rng.choice((1e-6, 1e-4, 0.01))
        kwargs_list.append(kwargs)
    check_optimizer(kernel, "Adam", _runs(rng, "Adam", fixed, kwargs_list), ADAM_HINTS, adam_slip)


def not_written(what: str, got: dict) -> None:
    """A stub raised NotImplementedError: one line, as for every exercise not written yet."""
    if got.get("type") == "NotImplementedError":
        fail(f"{what} raised NotImplementedError (not written yet)")


def vec(values: Sequence[float]) -> str:
    return "[" + ", ".join(num(float(v)) for v in values) + "]"
