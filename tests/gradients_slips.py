"""Problem set 1 (07_set_gradients): the slips a student makes and the correct ways of
writing each exercise differently, as edits of the solution (tests/test_07_set_gradients.py
runs them). Each slip lists the test cells that must fail: exactly the cell of its
exercise."""

from __future__ import annotations

SOFTMAX, CE, CHECK, FAULTY = (
    "grads_test_softmax",
    "grads_test_cross_entropy",
    "grads_test_grad_check",
    "grads_test_faulty",
)
DERIVATIVE, ACCUMULATE, REFLECTED, PITFALLS = (
    "grads_test_fix_derivative",
    "grads_test_fix_accumulate",
    "grads_test_fix_reflected",
    "grads_test_pitfalls",
)
EXERCISES = {SOFTMAX, CE, CHECK, FAULTY, DERIVATIVE, ACCUMULATE, REFLECTED, PITFALLS}
# What a failing message of each test names: its function, answer or class.
NAMES = {
    SOFTMAX: ("softmax(",),
    CE: ("cross_entropy(",),
    CHECK: ("relative_error(", "grad_check("),
    FAULTY: ("faulty_ops",),
    DERIVATIVE: ("Fixed",),
    ACCUMULATE: ("Fixed",),
    REFLECTED: ("Fixed",),
    PITFALLS: ("predicted_", "train_one_weight(", "relu_step_grads("),
}
FIXES = {DERIVATIVE, ACCUMULATE, REFLECTED}


SOFTMAX_BODY = """\
    m = max(z.data for z in logits)
    exps = [(z - m).exp() for z in logits]
    total = sum(exps)
    return [e / total for e in exps]
"""
CE_LOOP = """\
    total = 0.0
    for zs, y in zip(logits, labels):
        m = max(z.data for z in zs)
        logsumexp = sum((z - m).exp() for z in zs).log() + m
        total = total + (logsumexp - zs[y])
    return total / len(logits)
"""
CHECK_BODY = """\
    values = [engine(x) for x in xs]
    f(*values).backward()
    worst = 0.0
    for i, v in enumerate(values):
        up, down = list(xs), list(xs)
        up[i] += h
        down[i] -= h
        slope = (f(*map(engine, up)).data - f(*map(engine, down)).data) / (2 * h)
        worst = max(worst, relative_error(v.grad, slope))
    return worst
"""
SLOPE = "slope = (f(*map(engine, up)).data - f(*map(engine, down)).data) / (2 * h)"
RELATIVE = "return abs(a - b) / max(abs(a), abs(b), 1e-12)"
MUL_GRADS = """\
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad
"""
MUL_NODE = """\
        out = type(self)(self.data * other.data, (self, other), "*")

        def _backward():
"""
TANH_GRAD = "self.grad += (1 - t**2) * out.grad"
RTRUEDIV = """\
    def __rtruediv__(self, other):
        return self._node(other) / self
"""
TANH_METHOD = """\
    def tanh(self):
        t = math.tanh(self.data)
        out = type(self)(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad

        out._backward = _backward
        return out
"""
ADD_BUGGY = """\

    def __add__(self, other):
        other = self._node(other)
        out = Buggy(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out
"""
KEY = 'faulty_ops = ["__mul__", "tanh", "__rtruediv__"]'
TRAIN_BODY = """\
    w = Value(w0)
    for _ in range(steps):
        if zero_grad:
            w.grad = 0.0
        d = w * x - y
        loss = d * d
        loss.backward()
        w.data -= lr * w.grad
    return w.data
"""
IN_PLACE_NUDGE = """\
        old = xs[i]
        xs[i] = old + h
        plus = f(*map(engine, xs)).data
        xs[i] = old - h
        minus = f(*map(engine, xs)).data
        slope = (plus - minus) / (2 * h)
"""
RELU_BRANCH = """\
    if in_place:
        h.data = max(h.data, 0.0)
    else:
        h = h.relu()
"""

# (description, old text, new text, the test cells that must fail)
BUGS = [
    # softmax
    (
        "softmax without the shift",
        "exps = [(z - m).exp() for z in logits]",
        "exps = [z.exp() for z in logits]",
        {SOFTMAX},
    ),
    (
        "softmax shifted by the smallest logit",
        "m = max(z.data for z in logits)",
        "m = min(z.data for z in logits)",
        {SOFTMAX},
    ),
    (
        "softmax shifted by the mean",
        "m = max(z.data for z in logits)",
        "m = sum(z.data for z in logits) / len(logits)",
        {SOFTMAX},
    ),
    (
        "softmax with a plain-number denominator",
        "    total = sum(exps)\n    return [e / total",
        "    total = sum(e.data for e in exps)\n    return [e / total",
        {SOFTMAX},
    ),
    ("softmax not normalized", "return [e / total for e in exps]", "return exps", {SOFTMAX}),
    (
        "softmax returns numbers",
        "return [e / total for e in exps]",
        "return [(e / total).data for e in exps]",
        {SOFTMAX},
    ),
    # cross_entropy
    (
        "cross-entropy computed naively",
        "logsumexp = sum((z - m).exp() for z in zs).log() + m",
        "logsumexp = sum(z.exp() for z in zs).log()",
        {CE},
    ),
    (
        "cross-entropy as -log of a stable softmax",
        "        total = total + (logsumexp - zs[y])\n",
        "        p = [(z - m).exp() for z in zs]\n        total = total - (p[y] / sum(p)).log()\n",
        {CE},
    ),
    ("cross-entropy not averaged", "    return total / len(logits)", "    return total", {CE}),
    (
        "cross-entropy averaged over the classes",
        "    return total / len(logits)",
        "    return total / len(logits[0])",
        {CE},
    ),
    (
        "cross-entropy with the sign flipped",
        "total = total + (logsumexp - zs[y])",
        "total = total + (zs[y] - logsumexp)",
        {CE},
    ),
    (
        "cross-entropy forgets to add the max back",
        "logsumexp = sum((z - m).exp() for z in zs).log() + m",
        "logsumexp = sum((z - m).exp() for z in zs).log()",
        {CE},
    ),
    (
        "cross-entropy's log-sum-exp from numbers",
        "logsumexp = sum((z - m).exp() for z in zs).log() + m",
        "logsumexp = m + math.log(sum(math.exp(z.data - m) for z in zs))",
        {CE},
    ),
    (
        "cross-entropy's label logit as a number",
        "total = total + (logsumexp - zs[y])",
        "total = total + (logsumexp - zs[y].data)",
        {CE},
    ),
    (
        "cross-entropy takes the wrong label's logit",
        "total = total + (logsumexp - zs[y])",
        "total = total + (logsumexp - zs[y - 1])",
        {CE},
    ),
    # relative_error and grad_check
    (
        "relative error relative to b",
        RELATIVE,
        "return abs(a - b) / max(abs(b), 1e-12)",
        {CHECK},
    ),
    ("relative error absolute", RELATIVE, "return abs(a - b)", {CHECK}),
    (
        "relative error without abs",
        RELATIVE,
        "return (a - b) / max(abs(a), abs(b), 1e-12)",
        {CHECK},
    ),
    (
        "relative error divides 0 by 0",
        RELATIVE,
        "return abs(a - b) / max(abs(a), abs(b))",
        {CHECK},
    ),
    (
        "relative error over the sum",
        RELATIVE,
        "return abs(a - b) / max(abs(a) + abs(b), 1e-12)",
        {CHECK},
    ),
    (
        "grad_check with one-sided differences",
        CHECK_BODY,
        CHECK_BODY.replace(
            SLOPE, "slope = (f(*map(engine, up)).data - f(*map(engine, xs)).data) / h"
        ),
        {CHECK},
    ),
    (
        "grad_check ignores its engine",
        CHECK_BODY,
        CHECK_BODY.replace("values = [engine(x) for x in xs]", "values = [Value(x) for x in xs]"),
        {CHECK},
    ),
    (
        "grad_check ignores h",
        CHECK_BODY,
        CHECK_BODY.replace("up[i] += h", "up[i] += 1e-6")
        .replace("down[i] -= h", "down[i] -= 1e-6")
        .replace("(2 * h)", "2e-6"),
        {CHECK},
    ),
    (
        "grad_check changes xs",
        CHECK_BODY,
        CHECK_BODY.replace("up, down = list(xs), list(xs)", "up, down = xs, list(xs)"),
        {CHECK},
    ),
    (
        "grad_check returns every error",
        CHECK_BODY,
        CHECK_BODY.replace("    worst = 0.0\n", "    worst = []\n").replace(
            "worst = max(worst, relative_error(v.grad, slope))",
            "worst.append(relative_error(v.grad, slope))",
        ),
        {CHECK},
    ),
    (
        "grad_check returns the mean error",
        "worst = max(worst, relative_error(v.grad, slope))",
        "worst = worst + relative_error(v.grad, slope) / len(xs)",
        {CHECK},
    ),
    (
        "grad_check returns the absolute difference",
        "worst = max(worst, relative_error(v.grad, slope))",
        "worst = max(worst, abs(v.grad - slope))",
        {CHECK},
    ),
    (
        "relative error relative to a",
        RELATIVE,
        "return abs(a - b) / max(abs(a), 1e-12)",
        {CHECK},
    ),
    (
        "relative error without abs in the denominator",
        RELATIVE,
        "return abs(a - b) / max(a, b, 1e-12)",
        {CHECK},
    ),
    (
        "relative error with too large a guard",
        RELATIVE,
        "return abs(a - b) / max(abs(a), abs(b), 1e-6)",
        {CHECK},
    ),
    (
        "grad_check nudges xs in place and never puts it back",
        CHECK_BODY,
        CHECK_BODY.replace(
            "        up, down = list(xs), list(xs)\n        up[i] += h\n        down[i] -= h\n"
            "        " + SLOPE + "\n",
            IN_PLACE_NUDGE,
        ),
        {CHECK},
    ),
    (
        "grad_check divides by h, not 2h",
        SLOPE,
        SLOPE.replace("(2 * h)", "h"),
        {CHECK},
    ),
    # naming the faults
    (
        "names the operation built on the faulty one",
        KEY,
        'faulty_ops = ["__sub__", "tanh", "__rtruediv__"]',
        {FAULTY},
    ),
    (
        "names the division instead of the missing reflected one",
        KEY,
        'faulty_ops = ["__mul__", "tanh", "__truediv__"]',
        {FAULTY},
    ),
    ("names only two", KEY, 'faulty_ops = ["__mul__", "tanh"]', {FAULTY}),
    ("names one twice", KEY, 'faulty_ops = ["__mul__", "tanh", "tanh"]', {FAULTY}),
    ("names an operator symbol", KEY, 'faulty_ops = ["*", "tanh", "__rtruediv__"]', {FAULTY}),
    ("answers with one string", KEY, 'faulty_ops = "__mul__, tanh, __rtruediv__"', {FAULTY}),
    # the fixes
    (
        "tanh 'fixed' with the input again",
        TANH_GRAD,
        "self.grad += (1 - self.data**2) * out.grad",
        {DERIVATIVE},
    ),
    ("tanh fixed but sets its grad", TANH_GRAD, "self.grad = (1 - t**2) * out.grad", {DERIVATIVE}),
    ("tanh left unfixed", TANH_METHOD, "", {DERIVATIVE}),
    (
        "product fixed on one operand only",
        MUL_GRADS,
        "            self.grad += other.data * out.grad\n"
        "            other.grad = self.data * out.grad\n",
        {ACCUMULATE},
    ),
    (
        "product makes Buggy nodes",
        MUL_NODE + MUL_GRADS,
        MUL_NODE.replace("type(self)(", "Buggy(") + MUL_GRADS,
        {ACCUMULATE},
    ),
    (
        "reflected division the wrong way round",
        "return self._node(other) / self",
        "return self / self._node(other)",
        {REFLECTED},
    ),
    ("reflected division left out", RTRUEDIV, "", {REFLECTED}),
    # the pitfalls
    ("predicts the right loop's w", "predicted_w = 1.875", "predicted_w = 0.875", {PITFALLS}),
    ("predicts relu's gradient", "predicted_grad = -4.0", "predicted_grad = 0.0", {PITFALLS}),
    ("prediction in quotes", "predicted_grad = -4.0", 'predicted_grad = "-4"', {PITFALLS}),
    (
        "train_one_weight always zeroes",
        "        if zero_grad:\n            w.grad = 0.0\n",
        "        w.grad = 0.0\n",
        {PITFALLS},
    ),
    (
        "train_one_weight never zeroes",
        "        if zero_grad:\n            w.grad = 0.0\n",
        "",
        {PITFALLS},
    ),
    (
        "train_one_weight climbs the gradient",
        "w.data -= lr * w.grad",
        "w.data += lr * w.grad",
        {PITFALLS},
    ),
    (
        "relu_step_grads ignores in_place",
        RELU_BRANCH,
        "    h = h.relu()\n",
        {PITFALLS},
    ),
    (
        "relu_step_grads returns w.grad only",
        "return [w.grad, b.grad]",
        "return w.grad",
        {PITFALLS},
    ),
    (
        "softmax takes the largest Value",
        "m = max(z.data for z in logits)",
        "m = max(logits).data",
        {SOFTMAX},
    ),
    (
        "cross-entropy returns a number",
        "    return total / len(logits)",
        "    return (total / len(logits)).data",
        {CE},
    ),
    (
        "cross-entropy takes the first sample's label",
        "total = total + (logsumexp - zs[y])",
        "total = total + (logsumexp - zs[labels[0]])",
        {CE},
    ),
    (
        "tanh fixed but makes a Buggy node",
        'out = type(self)(t, (self,), "tanh")',
        'out = Buggy(t, (self,), "tanh")',
        {DERIVATIVE},
    ),
    (
        "reflected division makes Buggy nodes",
        "return self._node(other) / self",
        "return Buggy(other) / self",
        {REFLECTED},
    ),
    (
        "sum overridden with Buggy nodes",
        RTRUEDIV,
        RTRUEDIV + ADD_BUGGY,
        {DERIVATIVE, ACCUMULATE, REFLECTED},
    ),
    (
        "train_one_weight ignores x",
        "        d = w * x - y\n",
        "        d = w - y\n",
        {PITFALLS},
    ),
    (
        "train_one_weight always takes 3 steps",
        "    for _ in range(steps):\n        if zero_grad:",
        "    for _ in range(3):\n        if zero_grad:",
        {PITFALLS},
    ),
    (
        "train_one_weight with the notebook's learning rate",
        "w.data -= lr * w.grad",
        "w.data -= 0.25 * w.grad",
        {PITFALLS},
    ),
    (
        "relu_step_grads returns [b.grad, w.grad]",
        "return [w.grad, b.grad]",
        "return [b.grad, w.grad]",
        {PITFALLS},
    ),
    (
        "relu_step_grads ignores y",
        "    d = h - y\n",
        "    d = h - 1.0\n",
        {PITFALLS},
    ),
]

# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "softmax shifted by the largest logit as a Value",
        SOFTMAX_BODY,
        "    top = max(logits, key=lambda z: z.data)\n"
        "    exps = [(z - top).exp() for z in logits]\n"
        "    total = exps[0]\n"
        "    for e in exps[1:]:\n"
        "        total = total + e\n"
        "    return [e / total for e in exps]\n",
    ),
    (
        "softmax times the reciprocal of the sum",
        SOFTMAX_BODY,
        "    m = max(z.data for z in logits)\n"
        "    exps = [(z + (-m)).exp() for z in logits]\n"
        "    inverse = sum(exps, Value(0.0)) ** -1\n"
        "    return [inverse * e for e in exps]\n",
    ),
    (
        "cross-entropy with the max as a Value",
        CE_LOOP,
        "    losses = []\n"
        "    for zs, y in zip(logits, labels):\n"
        "        top = max(zs, key=lambda z: z.data)\n"
        "        s = sum((z - top).exp() for z in zs)\n"
        "        losses.append(top + s.log() - zs[y])\n"
        "    return sum(losses) * (1 / len(losses))\n",
    ),
    (
        "cross-entropy as -(z[y] - m - log sum)",
        CE_LOOP,
        "    n = len(labels)\n"
        "    loss = Value(0.0)\n"
        "    for zs, y in zip(logits, labels):\n"
        "        m = max(z.data for z in zs)\n"
        "        shifted = [z - m for z in zs]\n"
        "        log_sum = sum(s.exp() for s in shifted).log()\n"
        "        loss = loss - (shifted[y] - log_sum) / n\n"
        "    return loss\n",
    ),
    (
        "relative error with an explicit zero case",
        RELATIVE,
        "return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))",
    ),
    (
        "relative error guarded by adding 1e-12",
        RELATIVE,
        "return abs(a - b) / (max(abs(a), abs(b)) + 1e-12)",
    ),
    (
        "relative error with math.fabs",
        RELATIVE,
        "return math.fabs(a - b) / max(math.fabs(a), math.fabs(b), 1e-12)",
    ),
    (
        "relative error with a test for two zeros",
        RELATIVE,
        "if a == 0 and b == 0:\n        return 0.0\n    return abs(a - b) / max(abs(a), abs(b))",
    ),
    (
        "relative error guarded with or",
        RELATIVE,
        "return abs(a - b) / (max(abs(a), abs(b)) or 1e-12)",
    ),
    (
        "relative error with a smaller guard",
        RELATIVE,
        "return abs(a - b) / (max(abs(a), abs(b)) + 1e-15)",
    ),
    (
        "relative error with a conditional denominator",
        RELATIVE,
        "size = abs(a) if abs(a) > abs(b) else abs(b)\n"
        "    return abs(a - b) / size if size > 0 else 0.0",
    ),
    (
        "grad_check nudges xs in place and puts it back",
        CHECK_BODY,
        CHECK_BODY.replace(
            "        up, down = list(xs), list(xs)\n        up[i] += h\n        down[i] -= h\n"
            "        " + SLOPE + "\n",
            IN_PLACE_NUDGE + "        xs[i] = old\n",
        ),
    ),
    (
        "grad_check with h before engine",
        "def grad_check(f, xs, engine=Value, h=1e-6):",
        "def grad_check(f, xs, h=1e-6, engine=Value):",
    ),
    (
        "grad_check collects numerical gradients first",
        CHECK_BODY,
        "    values = [engine(x) for x in xs]\n"
        "    f(*values).backward()\n"
        "    numeric = []\n"
        "    for i in range(len(xs)):\n"
        "        step = [0.0] * len(xs)\n"
        "        step[i] = h\n"
        "        plus = f(*[engine(x + s) for x, s in zip(xs, step)])\n"
        "        minus = f(*[engine(x - s) for x, s in zip(xs, step)])\n"
        "        numeric.append((plus.data - minus.data) / (2 * h))\n"
        "    return max(relative_error(v.grad, n) for v, n in zip(values, numeric))\n",
    ),
    (
        "grad_check subtracts Values",
        CHECK_BODY,
        CHECK_BODY.replace(
            SLOPE, "slope = (f(*map(engine, up)) - f(*map(engine, down))).data / h / 2"
        ),
    ),
    ("faulty_ops as a tuple, reordered", KEY, 'faulty_ops = ("tanh", "__rtruediv__", "__mul__")'),
    ("faulty_ops as a set", KEY, 'faulty_ops = {"__rtruediv__", "__mul__", "tanh"}'),
    ("faulty_ops with spaces", KEY, 'faulty_ops = [" __mul__", "tanh ", "__rtruediv__"]'),
    (
        "reflected division by a power",
        "return self._node(other) / self",
        "return other * self**-1",
    ),
    (
        "reflected division as a node of its own",
        RTRUEDIV,
        "    def __rtruediv__(self, other):\n"
        "        out = Fixed(other / self.data, (self,), 'r/')\n"
        "\n"
        "        def _backward():\n"
        "            self.grad += -other / self.data**2 * out.grad\n"
        "\n"
        "        out._backward = _backward\n"
        "        return out\n",
    ),
    (
        "tanh from exp of a negative number",
        TANH_METHOD,
        TANH_METHOD.replace(
            "t = math.tanh(self.data)",
            "e = math.exp(-2 * abs(self.data))\n"
            "        t = math.copysign((1 - e) / (1 + e), self.data)",
        ),
    ),
    ("predictions as fractions", "predicted_w = 1.875", "predicted_w = 15 / 8"),
    ("prediction as an int", "predicted_grad = -4.0", "predicted_grad = -4"),
    ("train_one_weight zeroes with an int", "            w.grad = 0.0", "            w.grad = 0"),
    (
        "train_one_weight squares with **",
        "        d = w * x - y\n        loss = d * d\n",
        "        loss = (x * w - y) ** 2\n",
    ),
    (
        "relu_step_grads edits h.data with an if",
        "        h.data = max(h.data, 0.0)\n",
        "        if h.data < 0:\n            h.data = 0.0\n",
    ),
    ("relu_step_grads returns a tuple", "return [w.grad, b.grad]", "return w.grad, b.grad"),
]
