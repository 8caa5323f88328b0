"""Hidden tests of lesson 04, a neural network on the given engine.

The student's modules get the weights of the reference network (refgrad.nn), copied in
``parameters()`` order, and must then agree with it: every output, and the gradient of
every parameter and input. The losses are compared with refgrad's on random batches
(binary cross-entropy on logits of +-1000 too). The training loop runs on models and
losses made here, so its check depends on nothing else the student wrote.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

from .common import GradingFailure, RefValue, close, describe_error, fail, hidden_check, num, ref_nn


def _vec(values: Sequence[float]) -> str:
    return "[" + ", ".join(num(float(v)) for v in values) + "]"


def _short(obj: object) -> str:
    text = repr(obj)
    return text if len(text) <= 30 else text[:27] + "..."


def _call(fn: Callable, what: str, *args, **kwargs):
    """``fn(*args, **kwargs)``; an error in the student's code becomes one line naming ``what``."""
    try:
        return fn(*args, **kwargs)
    except GradingFailure:
        raise
    except Exception as exc:
        fail(f"{what} raised {describe_error(exc)}")


def _parameters(module, what: str) -> list:
    params = _call(lambda: module.parameters(), f"{what}.parameters()")
    try:
        params = list(params)
    except TypeError:
        fail(f"{what}.parameters() should return a list, got {_short(params)}")
    for p in params:
        if not (hasattr(p, "data") and hasattr(p, "grad")):
            fail(f"{what}.parameters() should hold only Values, got {_short(p)}")
    if len({id(p) for p in params}) != len(params):
        fail(f"{what}.parameters() lists the same Value twice")
    return params


# ---- comparing a module with the reference, weights copied -----------------------------


def _outputs(got, want, what: str, x: Sequence[float]) -> list:
    """The student's outputs as a list, after checking they have the reference's shape."""
    where = f"{what}(x) at x={_vec(x)}"
    if isinstance(want, RefValue):
        if isinstance(got, (list, tuple)):
            fail(
                f"{where} returned a list of {len(got)}; with a single output it should "
                "return that Value itself, not a list"
            )
        if not hasattr(got, "data"):
            fail(f"{where} returned {_short(got)}, expected a Value")
        return [got]
    if not isinstance(got, (list, tuple)):
        values = "Value" if len(want) == 1 else "Values"
        fail(f"{where} should return a list of {len(want)} {values}, got {_short(got)}")
    if len(got) != len(want):
        fail(f"{where} returned {len(got)} outputs, expected {len(want)}")
    for o in got:
        if not hasattr(o, "data"):
            fail(f"{where} returned a list holding {_short(o)}, expected Values")
    return list(got)


def _compare_module(
    Value,
    mine,
    ref,
    what: str,
    nin: int,
    rng: random.Random,
    names: Sequence[str] | None = None,
    hint: Callable[[float, float], str] = lambda got, want: "",
    rounds: int = 4,
) -> None:
    """Copy ref's (randomized) weights into ``mine``; compare outputs and gradients."""
    params = _parameters(mine, what)
    ref_params = ref.parameters()
    if len(params) != len(ref_params):
        fail(f"{what}.parameters() gave {len(params)} Values, expected {len(ref_params)}")
    for q in ref_params:
        q.data = round(rng.uniform(-1.0, 1.0), 4)
    for p, q in zip(params, ref_params):
        p.data = q.data
    names = names or [f"parameters()[{j}]" for j in range(len(params))]
    for r in range(rounds):
        x = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(nin)]
        as_values = r % 2 == 0  # inputs as Values (their gradients are checked) or numbers
        first = ref([RefValue(v) for v in x])
        n_out = 1 if isinstance(first, RefValue) else len(first)
        for i in range(min(n_out, 3)):  # backward from each output, on a fresh graph
            xs = [Value(v) for v in x] if as_values else list(x)
            ref_xs = [RefValue(v) for v in x]
            got = _outputs(_call(mine, f"{what}(x) at x={_vec(x)}", xs), first, what, x)
            want = ref(ref_xs)
            want = [want] if isinstance(want, RefValue) else want
            out = f"output {i} of {what}" if n_out > 1 else what
            for k, (o, w) in enumerate(zip(got, want)):
                if not close(o.data, w.data):
                    label = f"output {k} of {what}" if n_out > 1 else what
                    fail(
                        f"{label} at x={_vec(x)}: expected {num(w.data)}, "
                        f"got {num(o.data)}{hint(o.data, w.data)}"
                    )
            for p in params:
                p.grad = 0.0
            for q in ref_params:
                q.grad = 0.0
            _call(got[i].backward, f"backward() from {out}")
            want[i].backward()
            for name, p, q in zip(names, params, ref_params):
                if not close(p.grad, q.grad):
                    fail(
                        f"{out} at x={_vec(x)}: d(out)/d{name} should be {num(q.grad)}, "
                        f"got {num(p.grad)}{hint(p.grad, q.grad)}"
                    )
            if as_values:
                for j, (xv, rv) in enumerate(zip(xs, ref_xs)):
                    if not close(xv.grad, rv.grad):
                        fail(
                            f"{out} at x={_vec(x)}: d(out)/dx[{j}] should be {num(rv.grad)}, "
                            f"got {num(xv.grad)}"
                        )


# ---- exercise 1: Module and Neuron ------------------------------------------------------


def _module_base(Value, Module) -> None:
    base = _call(Module, "Module()")
    got = _call(lambda: list(base.parameters()), "Module().parameters()")
    if got != []:
        fail(f"Module().parameters() should be an empty list, got {_short(got)}")

    class Pair(Module):
        def __init__(self):
            self.a, self.b = Value(1.5), Value(-2.0)

        def parameters(self):
            return [self.a, self.b]

    pair = Pair()
    pair.a.grad, pair.b.grad = 3.0, -0.5
    _call(pair.zero_grad, "zero_grad()")
    if (pair.a.grad, pair.b.grad) != (0.0, 0.0):
        fail(
            "after zero_grad() every parameter's grad should be 0.0; a module with grads "
            f"3 and -0.5 still has {num(pair.a.grad)} and {num(pair.b.grad)}"
        )
    if (pair.a.data, pair.b.data) != (1.5, -2.0):
        fail("zero_grad() should change only the grads: it changed a parameter's data")


@hidden_check
def neuron(Value, Module, Neuron) -> None:
    """Module's defaults, then neurons of several sizes, relu or linear."""
    _module_base(Value, Module)
    rng = random.Random(4101)
    for nin, nonlin in [(3, True), (1, True), (2, False), (5, True), (4, False), (16, True)]:
        what = f"Neuron({nin})" if nonlin else f"Neuron({nin}, nonlin=False)"
        n = _call(lambda nin=nin, nonlin=nonlin: Neuron(nin, nonlin=nonlin), what)
        params = _parameters(n, what)
        if len(params) != nin + 1:
            fail(
                f"{what}.parameters() gave {len(params)} Values, expected {nin + 1}: "
                f"the {nin} weight{'s' if nin > 1 else ''} and the bias"
            )
        w, b = getattr(n, "w", None), getattr(n, "b", None)
        if (
            isinstance(w, list)
            and b is not None
            and [id(p) for p in params] != [id(p) for p in [*w, b]]
        ):
            fail(f"{what}.parameters() should list w[0], w[1], ... and then b, in that order")
        ref = ref_nn.Neuron(nin, nonlin=nonlin, rng=rng.randrange(10**6))
        names = [f"w[{j}]" for j in range(nin)] + ["b"]
        _compare_module(Value, n, ref, what, nin, rng, names=names, rounds=6)
        _call(n.zero_grad, f"{what}.zero_grad()")
        if any(p.grad != 0.0 for p in params):
            fail(f"after {what}.zero_grad() every parameter's grad should be 0.0")


# ---- exercise 2: Layer and MLP ----------------------------------------------------------

ORDER = "\n(weights are copied in parameters() order: neuron by neuron, each w, then b)"


def _order_hint(got: float, want: float) -> str:
    return ORDER


def _mlp_hint(got: float, want: float) -> str:
    if got == 0.0 and want < 0.0:
        return "\n(a negative output came out as 0: is the last layer linear?)"
    return ORDER


@hidden_check
def mlp(Value, Layer, MLP) -> None:
    """Layers (one output: a Value; several: a list) and MLPs of several shapes."""
    rng = random.Random(4201)
    for nin, nout, nonlin in [
        (3, 4, True),
        (3, 1, True),
        (2, 3, False),
        (4, 1, False),
        (5, 2, True),
    ]:
        if nonlin:
            what = f"Layer({nin}, {nout})"
            layer = _call(lambda nin=nin, nout=nout: Layer(nin, nout), what)
        else:
            what = f"Layer({nin}, {nout}, nonlin=False)"
            layer = _call(lambda nin=nin, nout=nout: Layer(nin, nout, nonlin=False), what)
        count = len(_parameters(layer, what))
        if count != nout * (nin + 1):
            fail(f"{what}.parameters() gave {count} Values, expected {nout * (nin + 1)}")
        ref = ref_nn.Layer(nin, nout, rng=rng.randrange(10**6), nonlin=nonlin)
        _compare_module(Value, layer, ref, what, nin, rng, hint=_order_hint)
    for nin, nouts in [
        (3, [4, 4, 1]),
        (2, [16, 16, 1]),
        (3, [4, 2]),
        (2, [3]),
        (1, [5, 1]),
        (4, [6, 3, 1]),
    ]:
        what = f"MLP({nin}, {nouts})"
        model = _call(lambda nin=nin, nouts=nouts: MLP(nin, list(nouts)), what)
        ref = ref_nn.MLP(nin, nouts, rng=rng.randrange(10**6))
        count, want = len(_parameters(model, what)), len(ref.parameters())
        if count != want:
            fail(f"{what}.parameters() gave {count} Values, expected {want}")
        _compare_module(Value, model, ref, what, nin, rng, hint=_mlp_hint, rounds=6)


# ---- exercise 3: Linear and Sequential --------------------------------------------------


def _seq_cases():
    """(text, builder(Linear, ReLU, Tanh, Sequential), number of inputs)."""
    return [
        (
            "Sequential(Linear(3, 4), ReLU(), Linear(4, 2))",
            lambda L, R, T, S: S(L(3, 4), R(), L(4, 2)),
            3,
        ),
        (
            "Sequential(Linear(2, 5), Tanh(), Linear(5, 1))",
            lambda L, R, T, S: S(L(2, 5), T(), L(5, 1)),
            2,
        ),
        ("Sequential(Linear(2, 3))", lambda L, R, T, S: S(L(2, 3)), 2),
        (
            "Sequential(Linear(2, 4), ReLU(), Linear(4, 4), Tanh(), Linear(4, 1))",
            lambda L, R, T, S: S(L(2, 4), R(), L(4, 4), T(), L(4, 1)),
            2,
        ),
        (
            "Sequential(Sequential(Linear(2, 3), ReLU()), Linear(3, 2))",
            lambda L, R, T, S: S(S(L(2, 3), R()), L(3, 2)),
            2,
        ),
    ]


@hidden_check
def linear(Value, Linear, Sequential, ReLU, Tanh) -> None:
    """Linear layers (always a list out; weights row by row, then biases) and Sequential."""
    rng = random.Random(4301)
    for nin, nout in [(2, 3), (3, 1), (1, 4), (5, 2)]:
        what = f"Linear({nin}, {nout})"
        lin = _call(lambda nin=nin, nout=nout: Linear(nin, nout), what)
        params = _parameters(lin, what)
        if len(params) != nout * nin + nout:
            fail(
                f"{what}.parameters() gave {len(params)} Values, expected {nout * nin + nout}: "
                f"{nout * nin} weights and {nout} biases"
            )
        weight, bias = getattr(lin, "weight", None), getattr(lin, "bias", None)
        if isinstance(weight, list) and isinstance(bias, list):
            order = [w for row in weight for w in row] + bias
            if [id(p) for p in params] != [id(p) for p in order]:
                fail(
                    f"{what}.parameters() should list weight[0][0], weight[0][1], ... row "
                    "by row, then bias[0], bias[1], ..."
                )
        ref = ref_nn.Linear(nin, nout, rng=rng.randrange(10**6))
        _compare_module(Value, lin, ref, what, nin, rng)
    for what, build, nin in _seq_cases():
        seq = _call(lambda build=build: build(Linear, ReLU, Tanh, Sequential), what)
        r = random.Random(rng.randrange(10**6))

        def ref_linear(a, b, r=r):
            return ref_nn.Linear(a, b, rng=r)

        ref = build(ref_linear, ref_nn.ReLU, ref_nn.Tanh, ref_nn.Sequential)
        _compare_module(Value, seq, ref, what, nin, rng)


# ---- exercises 4 to 6: losses -----------------------------------------------------------


def _compare_loss(
    Value, fn, text: str, preds, targets, ref_fn, params=(), alpha=None, hint: str = ""
) -> None:
    """fn(preds, targets[, params, alpha]) against ref_fn: value, and gradients of the
    predictions and parameters."""
    mine_preds = [Value(v) for v in preds]
    mine_params = [Value(v) for v in params]
    ref_preds = [RefValue(v) for v in preds]
    ref_params = [RefValue(v) for v in params]
    extra = () if alpha is None else (mine_params, alpha)
    ref_extra = () if alpha is None else (ref_params, alpha)
    got = _call(fn, text, mine_preds, list(targets), *extra)
    want = ref_fn(ref_preds, list(targets), *ref_extra)
    if not hasattr(got, "data") or not hasattr(got, "backward"):
        fail(f"{text} should return a Value, got {_short(got)}")
    if not close(got.data, want.data):
        fail(f"{text}: expected {num(want.data)}, got {num(got.data)}{hint}")
    _call(got.backward, f"backward() from {text}")
    want.backward()
    for i, (p, q) in enumerate(zip(mine_preds, ref_preds)):
        if not close(p.grad, q.grad):
            fail(f"{text}: d(loss)/d(input {i}) should be {num(q.grad)}, got {num(p.grad)}{hint}")
    for i, (p, q) in enumerate(zip(mine_params, ref_params)):
        if not close(p.grad, q.grad):
            fail(f"{text}: d(loss)/d(parameter {i}) should be {num(q.grad)}, got {num(p.grad)}")


@hidden_check
def mse(Value, mse_loss) -> None:
    """Mean squared error on random batches of 1 to 5, targets as floats or ints."""
    rng = random.Random(4401)
    for trial in range(40):
        n = 2 + trial % 4 if trial < 30 else 1
        preds = [round(rng.uniform(-3.0, 3.0), 3) for _ in range(n)]
        targets = [
            rng.randint(-2, 2) if rng.random() < 0.3 else round(rng.uniform(-3.0, 3.0), 2)
            for _ in range(n)
        ]
        text = f"mse_loss({_vec(preds)}, {_vec(targets)})"
        _compare_loss(Value, mse_loss, text, preds, targets, ref_nn.mse_loss)


LARGE_LOGITS = [
    ([1000.0], [0]),
    ([-1000.0], [1]),
    ([1000.0], [1]),
    ([-1000.0], [0]),
    ([50.0, -800.0, 3.0], [0, 0, 1]),
    ([-750.0, 710.0], [1.0, 0.0]),
]
LARGE_HINT = "\nlogits of +-1000 must work: exp() overflows above 709, and log(0) fails"


@hidden_check
def bce(Value, binary_cross_entropy_with_logits) -> None:
    """Cross-entropy on random logits and labels, then on logits up to +-1000."""
    fn = binary_cross_entropy_with_logits
    rng = random.Random(4501)
    for trial in range(40):
        n = 1 + trial % 4
        logits = [round(rng.choice((-1, 1)) * rng.uniform(0.05, 4.0), 3) for _ in range(n)]
        labels = [rng.randint(0, 1) for _ in range(n)]
        if trial % 5 == 4:
            labels = [float(y) for y in labels]
        text = f"binary_cross_entropy_with_logits({_vec(logits)}, {_vec(labels)})"
        _compare_loss(Value, fn, text, logits, labels, ref_nn.binary_cross_entropy_with_logits)
    for logits, labels in LARGE_LOGITS:
        text = f"binary_cross_entropy_with_logits({_vec(logits)}, {_vec(labels)})"
        try:
            _compare_loss(
                Value,
                fn,
                text,
                logits,
                labels,
                ref_nn.binary_cross_entropy_with_logits,
                hint=LARGE_HINT,
            )
        except GradingFailure as exc:
            message = str(exc)
            if "raised" in message and LARGE_HINT not in message:
                fail(message + LARGE_HINT)
            raise


@hidden_check
def max_margin(Value, max_margin_loss) -> None:
    """Max-margin on random scores and labels, with and without the L2 term."""
    rng = random.Random(4601)
    alphas = (0.5, 0.1, 1e-4, 0.0)
    for trial in range(40):
        n = 1 + trial % 4
        labels = [rng.choice((-1, 1)) for _ in range(n)]
        if trial % 5 == 3:
            labels = [float(y) for y in labels]
        scores = []
        for y in labels:
            s = round(rng.uniform(-2.5, 2.5), 3)
            while abs(1 - y * s) < 0.01:  # keep away from relu's kink
                s = round(rng.uniform(-2.5, 2.5), 3)
            scores.append(s)
        params = [round(rng.uniform(-2.0, 2.0), 3) for _ in range(1 + trial % 3)]
        alpha = alphas[trial % 4]
        text = (
            f"max_margin_loss({_vec(scores)}, {_vec(labels)}, "
            f"parameters={_vec(params)}, alpha={num(alpha)})"
        )
        _compare_loss(
            Value,
            max_margin_loss,
            text,
            scores,
            labels,
            ref_nn.max_margin_loss,
            params=params,
            alpha=alpha,
        )
        if trial % 8 == 0:  # parameters and alpha left at their defaults
            text = f"max_margin_loss({_vec(scores)}, {_vec(labels)})"
            _compare_loss(Value, max_margin_loss, text, scores, labels, ref_nn.max_margin_loss)


# ---- exercise 7: the training loop -------------------------------------------------------


class _Probe:
    """A model with one parameter p: model(x) = p * x[0]."""

    def __init__(self, Value, p0: float) -> None:
        self.p = Value(p0)

    def __call__(self, x):
        return self.p * x[0]

    def parameters(self):
        return [self.p]

    def zero_grad(self) -> None:
        self.p.grad = 0.0


class _Net:
    """A small MLP made here from the given Value: relu hidden layers, a linear output."""

    def __init__(self, Value, sizes: Sequence[int], seed: int) -> None:
        r = random.Random(seed)
        self.layers = [
            [([Value(r.uniform(-1.0, 1.0)) for _ in range(nin)], Value(0.0)) for _ in range(nout)]
            for nin, nout in itertools.pairwise(sizes)
        ]

    def __call__(self, x):
        last = len(self.layers) - 1
        for i, layer in enumerate(self.layers):
            outs = []
            for ws, b in layer:
                act = b
                for w, xi in zip(ws, x):
                    act = act + w * xi
                outs.append(act if i == last else act.relu())
            x = outs
        return x[0]

    def parameters(self):
        return [p for layer in self.layers for ws, b in layer for p in (*ws, b)]

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = 0.0


def _mean(preds):
    total = preds[0]
    for q in preds[1:]:
        total = total + q
    return total * (1.0 / len(preds))


def _hinge(preds, targets):
    return _mean([(1 - y * s).relu() for s, y in zip(preds, targets)])


def _losses(result, steps: int, what: str) -> list[float]:
    if not isinstance(result, (list, tuple)) or len(result) != steps:
        fail(f"{what} should return a list of {steps} losses, got {_short(result)}")
    for v in result:
        if hasattr(v, "data"):
            fail(f"{what} should return plain numbers (loss.data), got a Value")
        if not isinstance(v, (int, float)):
            fail(f"{what} should return a list of numbers, got one {_short(v)}")
    return [float(v) for v in result]


def _update_rule(Value, train) -> None:
    """One parameter, a loss whose gradient is always 1: the parameter's path is known."""
    steps, lr, decay = 8, 0.3, 0.5
    model = _Probe(Value, 0.0)
    sizes: list[int] = []

    def loss_fn(preds, targets):
        sizes.append(len(preds))
        return _mean(preds)

    what = f"train(model, xs, ys, loss_fn, steps={steps}, lr={lr}, lr_decay={decay})"
    result = _call(
        train, what, model, [[1.0]] * 6, [0.0] * 6, loss_fn, steps=steps, lr=lr, lr_decay=decay
    )
    losses = _losses(result, steps, what)
    wrong = next((n for n in sizes if n != 6), None)
    if wrong is not None:
        fail(
            f"with batch_size=None each step's loss should use all 6 samples; loss_fn got "
            f"{wrong} predictions"
        )
    if len(sizes) < steps:
        fail(f"{what} called loss_fn {len(sizes)} times: once per step expected")
    rates = [lr * (1 - decay * k / steps) for k in range(steps)]
    want = -sum(rates)
    got = model.p.data
    if not close(got, want):
        hint = ""
        if close(got, -sum(r * (k + 1) for k, r in enumerate(rates))):
            hint = "\n(the gradients pile up from step to step: zero them before backward)"
        elif close(got, sum(rates)):
            hint = "\n(each step climbs the gradient: p.data -= rate * p.grad)"
        elif close(got, -lr * steps):
            hint = "\n(the rate never decays: at step k use lr * (1 - lr_decay * k / steps))"
        fail(
            f"{what} on a model whose loss always has gradient 1: its parameter should "
            f"go from 0 to {num(want)}, but ended at {num(got)}{hint}"
        )
    p = 0.0
    for k, (loss, rate) in enumerate(zip(losses, rates)):
        if not close(loss, p):
            fail(
                f"{what}: the loss returned for step {k} should be {num(p)}, got {num(loss)} "
                "(the loss of that step's batch, before its update)"
            )
        p -= rate


def _batches(Value, train) -> None:
    """Random batches of the right size, each x paired with its own y, every sample used."""
    n, batch, steps = 12, 4, 40
    model = _Probe(Value, 1.0)  # with lr = 0 it stays 1, so sample i predicts i + 1
    xs = [[float(i + 1)] for i in range(n)]
    ys = [float(i) for i in range(n)]
    sizes: list[int] = []
    mismatched: list[tuple[float, float]] = []
    used: set[float] = set()

    def loss_fn(preds, targets):
        sizes.append(len(preds))
        for s, t in zip(preds, targets):
            if s.data != t + 1:
                mismatched.append((s.data, t))
            used.add(t)
        return _mean(preds)

    what = f"train(..., steps={steps}, lr=0, batch_size={batch})"
    result = _call(train, what, model, xs, ys, loss_fn, steps=steps, lr=0.0, batch_size=batch)
    _losses(result, steps, what)
    wrong = next((size for size in sizes if size != batch), None)
    if wrong is not None:
        fail(
            f"with batch_size={batch}, every step's loss should use {batch} samples; "
            f"loss_fn got {wrong} predictions"
        )
    if len(sizes) < steps:
        fail(f"{what} called loss_fn {len(sizes)} times: once per step expected")
    if mismatched:
        fail(
            "train should pass loss_fn the ys of the same samples as the xs: a batch "
            "paired an x with another sample's y"
        )
    if len(used) < n:
        fail(
            f"{what} on {n} samples used only {len(used)} of them: draw a new random "
            "batch at every step"
        )


XOR_POINTS = [(-1.0, -1.0, -1.0), (-1.0, 1.0, 1.0), (1.0, -1.0, 1.0), (1.0, 1.0, -1.0)]


def _xor_clusters() -> tuple[list[list[float]], list[float]]:
    r = random.Random(4701)
    xs, ys = [], []
    for cx, cy, label in XOR_POINTS:
        for _ in range(5):
            xs.append([round(cx + r.uniform(-0.4, 0.4), 3), round(cy + r.uniform(-0.4, 0.4), 3)])
            ys.append(label)
    return xs, ys


def _learns(Value, train) -> None:
    """A 2-8-1 network on 20 XOR-like points: full batch, then mini-batches."""
    xs, ys = _xor_clusters()
    runs = [
        ("train(model, xs, ys, hinge, steps=60, lr=0.2)", 60, {"lr": 0.2}),
        (
            "train(model, xs, ys, hinge, steps=100, lr=0.2, batch_size=5, lr_decay=0.5)",
            100,
            {"lr": 0.2, "batch_size": 5, "lr_decay": 0.5},
        ),
    ]
    for what, steps, options in runs:
        model = _Net(Value, [2, 8, 1], seed=4702)
        result = _call(train, what, model, xs, ys, _hinge, steps=steps, **options)
        losses = _losses(result, steps, what)
        first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
        right = sum((model(x).data > 0) == (y > 0) for x, y in zip(xs, ys))
        if not last < 0.5 * first or right < len(ys):
            fail(
                f"{what} on 20 XOR-like points, with a 2-8-1 network made by the grader: "
                f"the loss went from {num(first)} to {num(last)} (mean of 5 steps), and "
                f"{right} of 20 points are right; expected less than half the loss and all 20"
            )


@hidden_check
def training(Value, train) -> None:
    """The update rule, zeroing, decay, mini-batches, and learning on a small problem."""
    _update_rule(Value, train)
    _batches(Value, train)
    _learns(Value, train)
