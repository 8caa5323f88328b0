"""Probe operations for problem set 08 (training for real): optimizers, the training loop,
the classifier's loss and score, and the Iris recipe (inside the kernel).

Every model, optimizer and loss that an operation needs besides the function under test
is made here, so that each check depends on nothing else the student wrote: the tanh
network of the course page, a plain gradient-descent step, a model that answers from a
table. None of them holds an expected value; the grader compares.

All probe files share one namespace in the kernel: every top-level name here starts with
``st_``.
"""

from __future__ import annotations

import itertools

from .runtime import OPERATIONS, data_of, failure, grad_of, lookup, plain, short_repr

# ---- optimizers -------------------------------------------------------------------------


def st_op_optimizer(ns, value: str, optimizer: str, runs: list[dict]) -> list:
    """Each run: one optimizer per group of parameters (Values with the grader's data),
    made with the run's keyword arguments, then ``len(grads)`` rounds. In each round, for
    each group in turn: its grads are set (mode "set": ``p.grad = g``; mode "accumulate":
    ``optimizer.zero_grad()`` first, then ``p.grad += g``) and its ``step()`` is called.
    Returns every group's data after each round, and its grads after a last zero_grad()."""
    Value, cls = lookup(ns, value), lookup(ns, optimizer)
    out = []
    for run in runs:
        out.append(st_optimizer_run(Value, cls, run))
    return out


def st_optimizer_run(Value, cls, run: dict) -> dict:
    groups = [[Value(d) for d in group["data"]] for group in run["groups"]]
    try:
        if run.get("params") == "generator":  # as torch's model.parameters() gives them
            optimizers = [cls((p for p in params), **run["kwargs"]) for params in groups]
        else:
            optimizers = [cls(list(params), **run["kwargs"]) for params in groups]
    except Exception as exc:
        return failure("build", exc)
    trajectory = [[] for _ in groups]
    for k in range(len(run["groups"][0]["grads"])):
        for g, (params, opt) in enumerate(zip(groups, optimizers)):
            grads = run["groups"][g]["grads"][k]
            try:
                if run["mode"] == "accumulate":
                    opt.zero_grad()
                    for p, grad in zip(params, grads):
                        p.grad = p.grad + grad
                else:
                    for p, grad in zip(params, grads):
                        p.grad = grad
                opt.step()
            except Exception as exc:
                return failure("call", exc, k)
            trajectory[g].append([data_of(p) for p in params])
    zeroed = []
    for params, opt in zip(groups, optimizers):
        for p in params:
            p.grad = 1.5
        try:
            opt.zero_grad()
        except Exception as exc:
            return {**failure("call", exc, None), "trajectory": trajectory}
        zeroed.append([grad_of(p) for p in params])
    return {"trajectory": trajectory, "zeroed": zeroed}


# ---- the training loop --------------------------------------------------------------------


class st_TanhNet:
    """The course page's network: every neuron tanh(w . x + b), the last layer too; one
    output is returned as the Value itself. Parameters neuron by neuron, w then b."""

    def __init__(self, Value, sizes: list[int], weights: list[float]) -> None:
        it = iter(weights)
        self.layers = [
            [([Value(next(it)) for _ in range(a)], Value(next(it))) for _ in range(b)]
            for a, b in itertools.pairwise(sizes)
        ]
        self.zero_calls = 0

    def __call__(self, x):
        for layer in self.layers:
            outs = []
            for w, b in layer:
                act = b
                for wi, xi in zip(w, x):
                    act = act + wi * xi
                outs.append(act.tanh())
            x = outs
        return x[0] if len(x) == 1 else x

    def parameters(self):
        return [p for layer in self.layers for w, b in layer for p in [*w, b]]

    def zero_grad(self) -> None:
        self.zero_calls += 1
        for p in self.parameters():
            p.grad = 0.0


class st_PlainStep:
    """Plain gradient descent (p.data -= lr * p.grad), counting its calls."""

    def __init__(self, params, lr: float) -> None:
        self.params, self.lr = list(params), lr
        self.steps = self.zero_calls = 0

    def step(self) -> None:
        self.steps += 1
        for p in self.params:
            p.data -= self.lr * p.grad

    def zero_grad(self) -> None:
        self.zero_calls += 1
        for p in self.params:
            p.grad = 0.0


def st_op_fit(ns, value: str, function: str, runs: list[dict]) -> list:
    """The student's fit(model, optimizer, loss_fn, xs, ys, steps) on the page's tanh
    network with the grader's weights, plain gradient descent and the sum of squared
    errors, all made here. Each run reports what fit returned, the parameters after, and
    how often the optimizer, the loss and zero_grad were called."""
    Value, fit = lookup(ns, value), lookup(ns, function)
    out = []
    for run in runs:
        model = st_TanhNet(Value, run["sizes"], run["weights"])
        opt = st_PlainStep(model.parameters(), run["lr"])
        seen = {"calls": 0, "sizes": []}

        def sse(preds, targets, seen=seen):
            seen["calls"] += 1
            seen["sizes"].append(len(preds))
            total = None
            for q, y in zip(preds, targets):
                term = (q - y) ** 2
                total = term if total is None else total + term
            return total

        try:
            result = fit(model, opt, sse, run["xs"], run["ys"], run["steps"])
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        out.append(
            {
                "returned": plain(result),
                "params": [data_of(p) for p in model.parameters()],
                "steps": opt.steps,
                "zeroed": opt.zero_calls + model.zero_calls,
                "loss_calls": seen["calls"],
                "sizes": seen["sizes"][:5],
            }
        )
    return out


# ---- the classifier's loss and score --------------------------------------------------------


class st_Table:
    """A model that answers from a table: model(x) is the list of Values of row x[0]."""

    def __init__(self, Value, rows: list[list[float]]) -> None:
        self.Value, self.rows = Value, rows

    def __call__(self, x):
        return [self.Value(v) for v in self.rows[int(x[0])]]

    def parameters(self):
        return []


def st_op_accuracy(ns, value: str, function: str, cases: list[dict]) -> list:
    """accuracy(model, xs, labels) with a model that answers from the case's table of
    scores (sample i is the input [i, 0.5]); what it returned."""
    Value, fn = lookup(ns, value), lookup(ns, function)
    out = []
    for case in cases:
        model = st_Table(Value, case["scores"])
        xs = [[float(i), 0.5] for i in range(len(case["scores"]))]
        try:
            result = fn(model, xs, list(case["labels"]))
        except Exception as exc:
            out.append(failure("call", exc))
            continue
        out.append({"result": plain(result)})
    return out


# ---- the Iris recipe ------------------------------------------------------------------------


def st_cross_entropy(rows, labels):
    """The mean softmax cross-entropy of lists of score Values (log-sum-exp, shifted)."""
    total = None
    for row, y in zip(rows, labels):
        top = max(v.data for v in row)
        exps = None
        for v in row:
            e = (v - top).exp()
            exps = e if exps is None else exps + e
        term = exps.log() + top - row[y]
        total = term if total is None else total + term
    return total * (1.0 / len(labels))


def st_op_iris(
    ns,
    function: str,
    seed: int,
    train_xs: list,
    train_ys: list,
    test_xs: list,
    max_steps: int,
    max_params: int,
) -> dict:
    """``model, optimizer, steps = function(seed)``; within the limits, train it here
    (full batch, mean cross-entropy, zero_grad, backward, step) on the grader's data and
    return each step's loss and the model's scores on the grader's test inputs."""
    recipe = lookup(ns, function)
    try:
        made = recipe(seed)
    except Exception as exc:
        return failure("call", exc)
    if not (isinstance(made, (tuple, list)) and len(made) == 3):
        return {"recipe": short_repr(made)}
    model, opt, steps = made
    try:
        params = list(model.parameters())
    except Exception as exc:
        return failure("call", exc)
    info = {"steps": plain(steps), "params": len(params), **st_reproducible(recipe, seed, params)}
    if not isinstance(steps, int) or isinstance(steps, bool) or not 0 < steps <= max_steps:
        return info
    if len(params) > max_params:
        return info
    try:
        return {**info, **st_train(model, opt, steps, train_xs, train_ys, test_xs)}
    except Exception as exc:
        return {**info, **failure("backprop", exc)}


def st_reproducible(recipe, seed: int, params: list) -> dict:
    """Whether the recipe, called again with ``seed`` (the random module's state moved on
    by the first call), builds a model of the same starting weights, and with ``seed + 1``
    one of other weights (None where a call raises or gives no model)."""
    first = [data_of(p) for p in params]
    out = {}
    for key, other in (("same_seed", seed), ("other_seed", seed + 1)):
        try:
            weights = [data_of(p) for p in recipe(other)[0].parameters()]
        except Exception:
            out[key] = None
            continue
        out[key] = weights == first
    return out


def st_train(model, opt, steps: int, xs: list, ys: list, test_xs: list) -> dict:
    """Train on (xs, ys) for ``steps`` full-batch steps; the losses and the test scores,
    or {"output": ...} when the model does not return a list of scores."""
    losses = []
    for _ in range(steps):
        rows = [model(x) for x in xs]
        bad = next((r for r in rows if not isinstance(r, (list, tuple))), None)
        if bad is not None:
            return {"output": short_repr(bad)}
        sizes = {len(r) for r in rows}
        if len(sizes) != 1 or min(sizes) < 2:
            return {"output": f"lists of {min(sizes)} scores"}
        loss = st_cross_entropy([list(r) for r in rows], ys)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(data_of(loss))
    scores = [[data_of(v) for v in model(x)] for x in test_xs]
    return {"losses": losses, "scores": scores}


OPERATIONS.update(
    {
        "st_optimizer": st_op_optimizer,
        "st_fit": st_op_fit,
        "st_accuracy": st_op_accuracy,
        "st_iris": st_op_iris,
    }
)
