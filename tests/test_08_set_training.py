"""08_set_training (problem set 2, training for real): the hidden tests pass correct work,
written any way, and catch the classic slips, each in the cell that grades the broken
exercise and only there. The set is graded on the course's engine; in these tests the
engine cell loads the solved lessons (``engine("mine", ...)`` in source/).

The demonstration cells (tagged ``demo``) are skipped by grading and by
``failing_cells``; the solution runs them too (test_solution_passes_every_check).
"""

import matplotlib
import pytest
from catalogue import (
    assert_catches,
    assert_passes,
    broken,
    changes_of,
    find,
    flat,
    graded,
    hidden_message,
    ids,
)
from helpers import (
    NOTEBOOKS,
    SOURCE,
    assert_blank_fails_each,
    mutate,
    run_cells,
)

from autograder.verdicts import answers

matplotlib.use("Agg")  # the notebook draws figures; no window while testing

A = "08_set_training"
SGD, ADAM, FIT, DATA, CLASSIFY, IRIS = (
    "training_test_sgd",
    "training_test_adam",
    "training_test_fit",
    "training_test_data",
    "training_test_classify",
    "training_test_iris",
)
EXERCISES = {SGD, ADAM, FIT, DATA, CLASSIFY, IRIS}
# What a failing message of each test names: its function or class.
NAMES = {
    SGD: ("SGD(",),
    ADAM: ("Adam(",),
    FIT: ("sse_loss(", "fit("),
    DATA: ("fit_standardizer(", "standardize("),
    CLASSIFY: ("cross_entropy(", "accuracy("),
    IRIS: ("iris_setup(",),
}

SGD_INIT = """\
    def __init__(self, params, lr, momentum=0.0):
        ### BEGIN SOLUTION
        self.params = list(params)
        self.lr = lr
        self.momentum = momentum
        self.velocity = [0.0 for _ in self.params]
"""
SGD_UPDATE = """\
            self.velocity[i] = self.momentum * self.velocity[i] + p.grad
            p.data -= self.lr * self.velocity[i]
"""
ADAM_STEP = """\
        self.t += 1
        for i, p in enumerate(self.params):
            g = p.grad
            self.m[i] = self.beta1 * self.m[i] + (1 - self.beta1) * g
            self.v[i] = self.beta2 * self.v[i] + (1 - self.beta2) * g**2
            m_hat = self.m[i] / (1 - self.beta1**self.t)
            v_hat = self.v[i] / (1 - self.beta2**self.t)
            p.data -= self.lr * m_hat / (math.sqrt(v_hat) + self.eps)
"""
ZERO_GRAD = """\
        ### END SOLUTION

    def zero_grad(self):
        \"\"\"Set every parameter's grad to 0.0.\"\"\"
        ### BEGIN SOLUTION
"""
FIT_LOOP = """\
    for _ in range(steps):
        preds = [model(x) for x in xs]
        loss = loss_fn(preds, ys)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.data)
"""
CE = """\
    total = 0.0
    for z, label in zip(logits, labels):
        top = max(v.data for v in z)
        log_sum = sum((v - top).exp() for v in z).log() + top
        total = total + log_sum - z[label]
    return total / len(logits)
"""
RECIPE = """\
    model = MLP(4, [8, 3])
    optimizer = Adam(model.parameters(), lr=0.05)
    steps = 100
"""
SGD_CLASS = '''class SGD:
    """Gradient descent with momentum: v = momentum * v + grad, then p.data -= lr * v."""
'''
ADAM_CLASS = '''class Adam:
    """Adam with bias correction, as torch.optim.Adam computes it."""
'''
VELOCITY = "        self.velocity = [0.0 for _ in self.params]\n"
V_OF_I = "self.velocity[i] = self.momentum * self.velocity[i] + p.grad"

# (description, old text, new text, the test cells that must fail)
BUGS = [
    # ---- SGD
    (
        "SGD ignores momentum",
        "self.velocity[i] = self.momentum * self.velocity[i] + p.grad",
        "self.velocity[i] = p.grad",
        {SGD},
    ),
    (
        "SGD climbs the gradient",
        "p.data -= self.lr * self.velocity[i]",
        "p.data += self.lr * self.velocity[i]",
        {SGD},
    ),
    (
        "SGD steps with the old velocity",
        SGD_UPDATE,
        "            p.data -= self.lr * self.velocity[i]\n"
        "            self.velocity[i] = self.momentum * self.velocity[i] + p.grad\n",
        {SGD},
    ),
    (
        "SGD averages the gradient",
        "self.momentum * self.velocity[i] + p.grad",
        "self.momentum * self.velocity[i] + (1 - self.momentum) * p.grad",
        {SGD},
    ),
    (
        "SGD applies lr twice",
        "self.momentum * self.velocity[i] + p.grad",
        "self.momentum * self.velocity[i] + self.lr * p.grad",
        {SGD},
    ),
    (
        "SGD subtracts the momentum",
        "self.momentum * self.velocity[i] + p.grad",
        "p.grad - self.momentum * self.velocity[i]",
        {SGD},
    ),
    (
        "SGD mixes the two formulations",
        SGD_UPDATE,
        "            self.velocity[i] = self.momentum * self.velocity[i] - self.lr * p.grad\n"
        "            p.data -= self.velocity[i]\n",
        {SGD},
    ),
    (
        "SGD.zero_grad does nothing",
        SGD_UPDATE + ZERO_GRAD + "        for p in self.params:\n            p.grad = 0.0\n",
        SGD_UPDATE + ZERO_GRAD + "        pass\n",
        {SGD},
    ),
    (
        "SGD keeps its velocities on the class",
        "        self.velocity = [0.0 for _ in self.params]\n",
        "        SGD.velocity = [0.0 for _ in self.params]\n",
        {SGD},
    ),
    (
        "SGD velocities in a shared default argument",
        SGD_INIT,
        SGD_INIT.replace("momentum=0.0):", "momentum=0.0, velocity=[]):").replace(
            "self.velocity = [0.0 for _ in self.params]",
            "velocity.extend(0.0 for _ in self.params)\n        self.velocity = velocity",
        ),
        {SGD},
    ),
    (
        "SGD keeps the caller's params (a generator is read once)",
        "        self.params = list(params)\n        self.lr = lr\n        self.momentum",
        "        self.params = params\n        self.lr = lr\n        self.momentum",
        {SGD},
    ),
    (
        "SGD velocities in a dict on the class",
        [
            (VELOCITY, ""),
            (SGD_CLASS, SGD_CLASS + "\n    velocity = {}\n"),
            (V_OF_I, V_OF_I.replace("self.velocity[i] +", "self.velocity.get(i, 0.0) +")),
        ],
        {SGD},
    ),
    (
        "SGD velocities in a module global",
        [
            (VELOCITY, ""),
            (SGD_CLASS, "VELOCITY = {}\n\n\n" + SGD_CLASS),
            (
                V_OF_I + "\n            p.data -= self.lr * self.velocity[i]",
                "VELOCITY[i] = self.momentum * VELOCITY.get(i, 0.0) + p.grad\n"
                "            p.data -= self.lr * VELOCITY[i]",
            ),
        ],
        {SGD},
    ),
    (
        "SGD makes three velocities",
        VELOCITY,
        "        self.velocity = [0.0, 0.0, 0.0]\n",
        {SGD},
    ),
    (
        "SGD without a default momentum",
        "def __init__(self, params, lr, momentum=0.0):",
        "def __init__(self, params, lr, momentum):",
        {SGD},
    ),
    # ---- Adam
    (
        "Adam keeps the caller's params (a generator is read once)",
        "        self.params = list(params)\n        self.lr = lr\n        self.beta1",
        "        self.params = params\n        self.lr = lr\n        self.beta1",
        {ADAM},
    ),
    (
        "Adam counts t on the class",
        [
            (ADAM_CLASS, ADAM_CLASS + "\n    t = 0\n"),
            (
                "        self.v = [0.0 for _ in self.params]\n        self.t = 0\n",
                "        self.v = [0.0 for _ in self.params]\n",
            ),
            ("        self.t += 1\n        for i, p", "        Adam.t += 1\n        for i, p"),
        ],
        {ADAM},
    ),
    (
        "Adam takes beta1 and beta2",
        [
            ("betas=(0.9, 0.999), eps=1e-8):", "beta1=0.9, beta2=0.999, eps=1e-8):"),
            ("self.beta1, self.beta2 = betas", "self.beta1, self.beta2 = beta1, beta2"),
        ],
        {ADAM},
    ),
    (
        "Adam ignores its eps argument",
        "(math.sqrt(v_hat) + self.eps)",
        "(math.sqrt(v_hat) + 1e-8)",
        {ADAM},
    ),
    (
        "Adam adds eps to v",
        [
            ("v_hat = self.v[i] / (1", "v_hat = (self.v[i] + self.eps) / (1"),
            ("(math.sqrt(v_hat) + self.eps)", "math.sqrt(v_hat)"),
        ],
        {ADAM},
    ),
    (
        "Adam: eps inside the square root",
        "(math.sqrt(v_hat) + self.eps)",
        "math.sqrt(v_hat + self.eps)",
        {ADAM},
    ),
    (
        "Adam: the paper's efficient form (eps before the correction)",
        "            m_hat = self.m[i] / (1 - self.beta1**self.t)\n"
        "            v_hat = self.v[i] / (1 - self.beta2**self.t)\n"
        "            p.data -= self.lr * m_hat / (math.sqrt(v_hat) + self.eps)\n",
        "            rate = self.lr * math.sqrt(1 - self.beta2**self.t)\n"
        "            rate /= 1 - self.beta1**self.t\n"
        "            p.data -= rate * self.m[i] / (math.sqrt(self.v[i]) + self.eps)\n",
        {ADAM},
    ),
    (
        "Adam without bias correction",
        "            m_hat = self.m[i] / (1 - self.beta1**self.t)\n"
        "            v_hat = self.v[i] / (1 - self.beta2**self.t)\n",
        "            m_hat = self.m[i]\n            v_hat = self.v[i]\n",
        {ADAM},
    ),
    (
        "Adam corrects m only",
        "v_hat = self.v[i] / (1 - self.beta2**self.t)",
        "v_hat = self.v[i]",
        {ADAM},
    ),
    (
        "Adam's t never grows",
        "        self.t += 1\n        for i, p",
        "        self.t = 1\n        for i, p",
        {ADAM},
    ),
    (
        "Adam counts t per parameter",
        "        self.t += 1\n        for i, p in enumerate(self.params):\n"
        "            g = p.grad\n",
        "        for i, p in enumerate(self.params):\n            self.t += 1\n"
        "            g = p.grad\n",
        {ADAM},
    ),
    (
        "Adam's t starts at 0",
        "        self.t += 1\n        for i, p",
        "        for i, p",
        {ADAM},
    ),
    (
        "Adam swaps the betas",
        "        self.beta1, self.beta2 = betas\n",
        "        self.beta2, self.beta1 = betas\n",
        {ADAM},
    ),
    (
        "Adam averages g, not g squared",
        "(1 - self.beta2) * g**2",
        "(1 - self.beta2) * g",
        {ADAM},
    ),
    ("Adam without eps", "(math.sqrt(v_hat) + self.eps)", "math.sqrt(v_hat)", {ADAM}),
    ("Adam without the square root", "(math.sqrt(v_hat) + self.eps)", "(v_hat + self.eps)", {ADAM}),
    (
        "Adam climbs the gradient",
        "p.data -= self.lr * m_hat",
        "p.data += self.lr * m_hat",
        {ADAM},
    ),
    (
        "Adam.zero_grad does nothing",
        ADAM_STEP + ZERO_GRAD + "        for p in self.params:\n            p.grad = 0.0\n",
        ADAM_STEP + ZERO_GRAD + "        pass\n",
        {ADAM},
    ),
    # ---- sse_loss and fit
    (
        "sse_loss takes the mean",
        "return sum((p - t) ** 2 for p, t in zip(preds, targets))",
        "return sum((p - t) ** 2 for p, t in zip(preds, targets)) / len(preds)",
        {FIT},
    ),
    (
        "sse_loss without the square",
        "return sum((p - t) ** 2 for p, t in zip(preds, targets))",
        "return sum((p - t) for p, t in zip(preds, targets))",
        {FIT},
    ),
    (
        "fit without zero_grad",
        "        optimizer.zero_grad()\n        loss.backward()",
        "        loss.backward()",
        {FIT},
    ),
    (
        "fit zeroes the gradients after backward",
        "        optimizer.zero_grad()\n        loss.backward()\n",
        "        loss.backward()\n        optimizer.zero_grad()\n",
        {FIT},
    ),
    ("fit keeps Values", "losses.append(loss.data)", "losses.append(loss)", {FIT}),
    (
        "sse_loss returns a float",
        "return sum((p - t) ** 2 for p, t in zip(preds, targets))",
        "return sum((p - t) ** 2 for p, t in zip(preds, targets)).data",
        {FIT},
    ),
    (
        "fit records the loss after the update",
        "        losses.append(loss.data)\n",
        "        losses.append(loss_fn([model(x) for x in xs], ys).data)\n",
        {FIT},
    ),
    (
        "fit takes one step too few",
        "for _ in range(steps):\n        preds",
        "for _ in range(steps - 1):\n        preds",
        {FIT},
    ),
    (
        "fit leaves out the last sample",
        "preds = [model(x) for x in xs]\n        loss = loss_fn(preds, ys)",
        "preds = [model(x) for x in xs[:-1]]\n        loss = loss_fn(preds, ys[:-1])",
        {FIT},
    ),
    # ---- data
    (
        "fit_standardizer returns numpy arrays",
        "    return means, stds\n",
        "    import numpy as np\n\n    return np.array(means), np.array(stds)\n",
        {DATA},
    ),
    (
        "std over n - 1",
        "std = math.sqrt(sum((v - m) ** 2 for v in column) / n)",
        "std = math.sqrt(sum((v - m) ** 2 for v in column) / (n - 1))",
        {DATA},
    ),
    (
        "variance instead of std",
        "std = math.sqrt(sum((v - m) ** 2 for v in column) / n)",
        "std = sum((v - m) ** 2 for v in column) / n",
        {DATA},
    ),
    (
        "a constant feature keeps std 0",
        "stds.append(std if std > 0 else 1.0)",
        "stds.append(std)",
        {DATA},
    ),
    (
        "standardize in place",
        "    return [[(v - m) / s for v, m, s in zip(x, means, stds)] for x in xs]\n",
        "    for x in xs:\n        for j in range(len(x)):\n"
        "            x[j] = (x[j] - means[j]) / stds[j]\n    return xs\n",
        {DATA},
    ),
    (
        "standardize multiplies by the std",
        "(v - m) / s for v, m, s",
        "(v - m) * s for v, m, s",
        {DATA},
    ),
    # ---- classify
    (
        "cross-entropy without the shift",
        CE,
        "    total = 0.0\n    for z, label in zip(logits, labels):\n"
        "        total = total + sum(v.exp() for v in z).log() - z[label]\n"
        "    return total / len(logits)\n",
        {CLASSIFY},
    ),
    (
        "cross-entropy without the mean",
        "    return total / len(logits)\n",
        "    return total\n",
        {CLASSIFY},
    ),
    (
        "cross-entropy forgets to add the shift back",
        "log_sum = sum((v - top).exp() for v in z).log() + top",
        "log_sum = sum((v - top).exp() for v in z).log()",
        {CLASSIFY},
    ),
    (
        "cross-entropy adds the label's score",
        "log_sum - z[label]",
        "log_sum + z[label]",
        {CLASSIFY},
    ),
    ("accuracy counts", "    return right / len(xs)\n", "    return right\n", {CLASSIFY}),
    (
        "cross-entropy returns a float",
        "    return total / len(logits)\n",
        "    return (total / len(logits)).data\n",
        {CLASSIFY},
    ),
    (
        "accuracy compares the Values",
        "scores = [s.data for s in model(x)]",
        "scores = model(x)",
        {CLASSIFY},
    ),
    (
        "accuracy takes the smallest score",
        "right += scores.index(max(scores))",
        "right += scores.index(min(scores))",
        {CLASSIFY},
    ),
    # ---- the recipe
    ("recipe over the step budget", "steps = 100", "steps = 500", {IRIS}),
    ("recipe over the parameter budget", "MLP(4, [8, 3])", "MLP(4, [16, 16, 3])", {IRIS}),
    ("recipe with one output", "MLP(4, [8, 3])", "MLP(4, [8, 1])", {IRIS}),
    ("recipe with too few steps", "steps = 100", "steps = 2", {IRIS}),
    ("recipe not seeded", "    random.seed(seed)\n    model", "    model", {IRIS}),
    (
        "recipe seeded with 0",
        "    random.seed(seed)\n    model",
        "    random.seed(0)\n    model",
        {IRIS},
    ),
    (
        "recipe seeded after the model",
        "    random.seed(seed)\n    model = MLP(4, [8, 3])\n",
        "    model = MLP(4, [8, 3])\n    random.seed(seed)\n",
        {IRIS},
    ),
    (
        "recipe with a huge learning rate",
        "optimizer = Adam(model.parameters(), lr=0.05)",
        "optimizer = SGD(model.parameters(), lr=50.0)",
        {IRIS},
    ),
    (
        "recipe in the wrong order",
        "    return model, optimizer, steps",
        "    return model, steps, optimizer",
        {IRIS},
    ),
]
# Correct, but not written the way the solution is: every one must keep full marks.
VARIANTS = [
    (
        "SGD: v = mu*v - lr*g, p += v",
        SGD_UPDATE,
        "            self.velocity[i] = self.momentum * self.velocity[i] - self.lr * p.grad\n"
        "            p.data += self.velocity[i]\n",
    ),
    (
        "SGD: v = mu*v - g, p += lr*v",
        SGD_UPDATE,
        "            self.velocity[i] = self.momentum * self.velocity[i] - p.grad\n"
        "            p.data = p.data + self.lr * self.velocity[i]\n",
    ),
    (
        "SGD: velocities in a dict, zipped loop",
        "        for i, p in enumerate(self.params):\n" + SGD_UPDATE,
        "        for p in self.params:\n"
        "            v = self.momentum * self.state.get(id(p), 0.0) + p.grad\n"
        "            self.state[id(p)] = v\n"
        "            p.data = p.data - self.lr * v\n",
    ),
    (
        "Adam: state by parameter, t counted before the loop, g * g",
        ADAM_STEP,
        "        self.t = self.t + 1\n"
        "        b1, b2 = self.beta1, self.beta2\n"
        "        for k in range(len(self.params)):\n"
        "            p = self.params[k]\n"
        "            self.m[k] = b1 * self.m[k] + (1 - b1) * p.grad\n"
        "            self.v[k] = b2 * self.v[k] + (1 - b2) * p.grad * p.grad\n"
        "            denom = (self.v[k] / (1 - b2**self.t)) ** 0.5 + self.eps\n"
        "            p.data = p.data - self.lr * self.m[k] / (1 - b1**self.t) / denom\n",
    ),
    (
        "sse_loss with a loop, target minus prediction",
        "    return sum((p - t) ** 2 for p, t in zip(preds, targets))\n",
        "    total = 0\n    for p, t in zip(preds, targets):\n"
        "        total = total + (t - p) * (t - p)\n    return total\n",
    ),
    (
        "fit: model.zero_grad, zero after the step",
        FIT_LOOP,
        "    model.zero_grad()\n"
        "    for k in range(steps):\n"
        "        loss = loss_fn([model(x) for x in xs], ys)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        model.zero_grad()\n"
        "        losses.append(float(loss.data))\n",
    ),
    (
        "fit: a while loop",
        FIT_LOOP,
        "    k = 0\n    while k < steps:\n"
        "        optimizer.zero_grad()\n"
        "        loss = loss_fn(list(map(model, xs)), ys)\n"
        "        loss.backward()\n"
        "        optimizer.step()\n"
        "        losses += [loss.data]\n"
        "        k += 1\n",
    ),
    (
        "standardize with numpy, back to lists",
        "    n = len(xs)\n    means = [sum(column) / n for column in zip(*xs)]\n",
        "    import numpy as np\n\n"
        "    n = len(xs)\n    means = np.array(xs).mean(axis=0).tolist()\n",
    ),
    (
        "fit_standardizer: a tolerance for a constant feature",
        "stds.append(std if std > 0 else 1.0)",
        "stds.append(1.0 if std < 1e-12 else std)",
    ),
    (
        "cross-entropy: the shift as a Value, multiplied by 1/n",
        CE,
        "    losses = []\n"
        "    for z, label in zip(logits, labels):\n"
        "        top = max(z, key=lambda v: v.data)\n"
        "        shifted = [v - top for v in z]\n"
        "        losses.append(sum(s.exp() for s in shifted).log() - shifted[label])\n"
        "    return sum(losses) * (1.0 / len(losses))\n",
    ),
    (
        "accuracy with a comprehension",
        "    right = 0\n    for x, label in zip(xs, labels):\n"
        "        scores = [s.data for s in model(x)]\n"
        "        right += scores.index(max(scores)) == label\n    return right / len(xs)\n",
        "    hits = [max(range(len(out)), key=lambda c: out[c].data) == label\n"
        "            for out, label in ((model(x), label) for x, label in zip(xs, labels))]\n"
        "    return sum(hits) / len(hits)\n",
    ),
    (
        "recipe: SGD with momentum",
        RECIPE,
        "    model = MLP(4, [6, 3])\n"
        "    optimizer = SGD(model.parameters(), lr=0.1, momentum=0.9)\n"
        "    steps = 150\n",
    ),
    (
        "recipe: a linear model",
        RECIPE,
        "    model = MLP(4, [3])\n"
        "    optimizer = Adam(model.parameters(), lr=0.1)\n    steps = 80\n",
    ),
]


# Mutants of the solutions (tests/test_mutants.py) that no test can tell from it.
EQUIVALENT_MUTANTS = {
    "training_iris line 6: 8 + 1": "a recipe's hyperparameters: MLP(4, [9, 3]) passes too",
    "training_iris line 7: 0.05 + 1": "a recipe's hyperparameters: Adam with lr 1.05 passes too",
    "training_iris line 8: 100 + 1": "a recipe's hyperparameters: 101 steps pass too",
}


def test_solution_passes_every_check(solution):
    assert_passes(solution, A, visible=True)


@pytest.mark.mutation  # generate runs them too, and a stale solutions/ fails test_pipeline
def test_solution_runs_its_demonstrations(solution):
    run_cells(solution, A)


@pytest.mark.parametrize("row", BUGS, ids=ids(BUGS))
def test_hidden_tests_catch_bug(solution, row):
    assert_catches(broken(solution, BUGS, name=row[0]), A, row[-1], names=NAMES)


@pytest.mark.parametrize("name, old, new", VARIANTS, ids=ids(VARIANTS))
def test_hidden_tests_accept_correct_variant(solution, name, old, new):
    nb = mutate(solution, old, new)
    if "self.state" in new:  # the dict of velocities is made in __init__
        nb = mutate(nb, "self.velocity = [0.0 for _ in self.params]", "self.state = {}")
    assert_passes(nb, A)


def bug(name: str) -> tuple[str, str]:
    (change,) = changes_of(find(BUGS, name))
    return change


MESSAGES = [
    ("SGD ignores momentum", SGD, "momentum is ignored"),
    ("SGD climbs the gradient", SGD, "climb the gradient"),
    ("SGD mixes the two formulations", SGD, "climb the gradient"),
    ("SGD steps with the old velocity", SGD, "velocity from before this step"),
    ("SGD averages the gradient", SGD, "(1 - mu) * grad"),
    ("SGD applies lr twice", SGD, "lr is applied twice"),
    ("SGD subtracts the momentum", SGD, "wrong sign"),
    ("SGD.zero_grad does nothing", SGD, "grads pile up"),
    ("SGD keeps its velocities on the class", SGD, "share their state"),
    ("SGD velocities in a shared default argument", SGD, "an earlier one's state"),
    ("SGD velocities in a dict on the class", SGD, "not on the class, a default argument"),
    ("SGD velocities in a module global", SGD, "a default argument or a global"),
    ("SGD keeps the caller's params (a generator is read once)", SGD, "list(params)"),
    ("SGD makes three velocities", SGD, "one state per parameter"),
    ("SGD without a default momentum", SGD, "keep SGD(params, lr, momentum=0.0)"),
    ("Adam keeps the caller's params (a generator is read once)", ADAM, "list(params)"),
    ("Adam counts t on the class", ADAM, "self.m, self.v, self.t, made in __init__"),
    ("Adam takes beta1 and beta2", ADAM, "betas=(0.9, 0.999)"),
    ("Adam ignores its eps argument", ADAM, "use self.eps"),
    ("Adam adds eps to v", ADAM, "not to v"),
    ("Adam: eps inside the square root", ADAM, "outside the root"),
    ("Adam: the paper's efficient form (eps before the correction)", ADAM, "after the bias"),
    ("Adam without bias correction", ADAM, "no bias correction"),
    ("Adam corrects m only", ADAM, "v is not bias-corrected"),
    ("Adam's t never grows", ADAM, "t never grows"),
    ("Adam counts t per parameter", ADAM, "once per step()"),
    ("Adam's t starts at 0", ADAM, "t counts from 1"),
    ("Adam averages g, not g squared", ADAM, "v averages grad**2"),
    ("Adam swaps the betas", ADAM, "betas are swapped"),
    ("Adam without eps", ADAM, "add eps to the denominator"),
    ("fit zeroes the gradients after backward", FIT, "not after"),
    ("Adam without the square root", ADAM, "sqrt(v_hat) + eps"),
    ("Adam.zero_grad does nothing", ADAM, "grads pile up"),
    ("sse_loss takes the mean", FIT, "that is the mean"),
    ("fit without zero_grad", FIT, "pile up"),
    ("fit keeps Values", FIT, "append loss.data"),
    ("sse_loss returns a float", FIT, "should return a Value"),
    ("fit records the loss after the update", FIT, "call loss_fn once per step"),
    ("fit takes one step too few", FIT, "losses, got 5 of them"),
    ("fit leaves out the last sample", FIT, "one prediction per sample"),
    ("std over n - 1", DATA, "divides by n - 1"),
    ("variance instead of std", DATA, "take the square root"),
    ("a constant feature keeps std 0", DATA, "give 1.0 instead"),
    ("standardize in place", DATA, "leave xs as it is"),
    ("fit_standardizer returns numpy arrays", DATA, "two lists, got (ndarray, ndarray)"),
    ("cross-entropy without the shift", CLASSIFY, "use log-sum-exp"),
    ("cross-entropy without the mean", CLASSIFY, "the loss is the MEAN over the batch"),
    ("accuracy counts", CLASSIFY, "that is the count"),
    ("accuracy takes the smallest score", CLASSIFY, "the largest score"),
    ("cross-entropy returns a float", CLASSIFY, "build the loss from the logit Values"),
    ("accuracy compares the Values", CLASSIFY, "compare their .data"),
    ("recipe over the step budget", IRIS, "from 1 to 200, got 500"),
    ("recipe over the parameter budget", IRIS, "at most 100 parameters, got 403"),
    ("recipe with one output", IRIS, "a list of 3 scores"),
    ("recipe with too few steps", IRIS, "the loss hardly fell"),
    ("recipe with a huge learning rate", IRIS, "at least 39 of 45"),
    ("recipe not seeded", IRIS, "call random.seed(seed) first"),
    ("recipe seeded with 0", IRIS, "should build different models"),
    ("recipe seeded after the model", IRIS, "should build the same model"),
]


@pytest.mark.parametrize("name, cell, words", MESSAGES, ids=ids(MESSAGES))
def test_hidden_messages_say_what_is_wrong(solution, name, cell, words):
    message = hidden_message(broken(solution, BUGS, name=name), A, cell)
    assert words in flat(message), message


def missing_parts(cell: str, message: str) -> list[str]:
    """What a hidden test's message lacks of the four a student needs: the function's
    name, what was expected ("should ..."), what came instead ("got ...", or what was
    raised) and a hint (a line in parentheses)."""
    needs = {
        "the function": any(name in message for name in NAMES[cell]),
        "expected": "should" in message,
        "got": "got" in message or "raised" in message,
        "a hint": any(line.startswith("(") for line in message.splitlines()),
    }
    return [part for part, present in needs.items() if not present]


@pytest.mark.parametrize("row", BUGS, ids=ids(BUGS))
def test_every_slip_s_message_names_the_function_expected_got_and_a_hint(solution, row):
    """Every slip of the catalogue, old and new (issue 42)."""
    failed = graded(broken(solution, BUGS, name=row[0]), A)
    assert failed
    for cell, message in failed.items():
        assert missing_parts(cell, message) == [], message


def test_blank_notebook_fails_each_check_with_one_line():
    assert_blank_fails_each(A, EXERCISES)


def test_the_iris_file_is_released_with_the_notebook():
    """iris.csv: 150 flowers, 50 of each species, with a header, beside both notebooks."""
    for folder in (SOURCE, NOTEBOOKS):
        lines = (folder / A / "iris.csv").read_text().splitlines()
        assert lines[0] == "sepal_length_cm,sepal_width_cm,petal_length_cm,petal_width_cm,species"
        species = [line.rsplit(",", 1)[1] for line in lines[1:]]
        assert {s: species.count(s) for s in set(species)} == {
            "setosa": 50,
            "versicolor": 50,
            "virginica": 50,
        }


# ---- the new operations' answers: a wrong shape is refused ----------------------------------

OPTIMIZER_ARGS = {
    "runs": [{"kwargs": {}, "mode": "set", "groups": [{"data": [1.0, 2.0], "grads": [[0.1, 0.2]]}]}]
}
SEEDED = {"params": 67, "same_seed": True, "other_seed": False}
IRIS_ARGS = {"test_xs": [[0.0] * 4] * 2, "max_steps": 200, "max_params": 100}


@pytest.mark.parametrize(
    "op, args, good, bad",
    [
        (
            "st_optimizer",
            OPTIMIZER_ARGS,
            [{"trajectory": [[[0.9, 1.8]]], "zeroed": [[0.0, 0.0]]}],
            [{"trajectory": [[[0.9]]], "zeroed": [[0.0, 0.0]]}],
        ),
        (
            "st_optimizer",
            OPTIMIZER_ARGS,
            [{"trajectory": [[[0.9, 1.8]]], "zeroed": [[0.0, 0.0]]}],
            [{"trajectory": [[]], "zeroed": [[0.0, 0.0]]}],
        ),
        (
            "st_fit",
            {"runs": [{"weights": [0.1, 0.2]}]},
            [
                {
                    "returned": [1.0],
                    "params": [0.1, 0.2],
                    "steps": 1,
                    "zeroed": 1,
                    "loss_calls": 1,
                    "sizes": [4],
                }
            ],
            [
                {
                    "returned": [1.0],
                    "params": [0.1],
                    "steps": 1,
                    "zeroed": 1,
                    "loss_calls": 1,
                    "sizes": [4],
                }
            ],
        ),
        (
            "st_accuracy",
            {"cases": [{"scores": [[1.0, 0.0]], "labels": [0]}]},
            [{"result": 1.0}],
            [],
        ),
        (
            "st_iris",
            IRIS_ARGS,
            {**SEEDED, "steps": 3, "losses": [1.0, 0.9, 0.8], "scores": [[1.0, 0, 0]] * 2},
            {**SEEDED, "steps": 3, "losses": [1.0, 0.9], "scores": [[1.0, 0, 0]] * 2},
        ),
        (
            "st_iris",
            IRIS_ARGS,
            {**SEEDED, "steps": 500},
            {**SEEDED, "steps": 5},  # within the budget, yet not trained
        ),
    ],
)
def test_answers_of_the_wrong_shape_are_refused(op, args, good, bad):
    assert answers.problem(op, args, good) is None
    assert answers.problem(op, args, bad) is not None
