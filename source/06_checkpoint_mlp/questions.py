"""The questions of the checkpoint quiz on networks and training, one function each.

Each function draws one variant of its question from ``pick`` (``coursekit.Pick``): its
numbers, its wording and the order of its options. Your variant is drawn from your
student id; practice variants from practice seeds. What decides an answer (wordings,
option sets, statements) comes in two pools, ``pick.pool(graded, practice)``, and numbers
in two halves (coursekit.quiz_variant), so that no practice variant shows what a graded
one does. What a variant shows is all here. Its answer is not: the course works that out
with its own engine when it grades (and, for the practice round, beforehand).
"""

ASSIGNMENT = "06_checkpoint_mlp"

# Each question's points: written here only. `python -m autograder generate` writes them
# into the quiz notebook (its test cells' nbgrader points, the headings, the totals line).
POINTS = {
    "q1": 1, "q2": 1, "q3": 1, "q4": 1, "q5": 2, "q6": 2, "q7": 1, "q8": 1, "q9": 1,
    "q10": 1, "q11": 1, "q12": 1, "q13": 1, "q14": 1, "q15": 1, "q16": 1, "q17": 1,
}  # fmt: skip


def q1(pick):
    nin = pick.one([2, 3, 4, 5, 6])
    sizes = [pick.one([2, 3, 4, 5, 6, 8]), pick.one([2, 3, 4, 5, 6, 8]), pick.one([1, 1, 2])]
    model = f"MLP({nin}, {sizes})"
    return {
        "kind": "number",
        "code": f"model = {model}\n",
        "asks": "len(model.parameters())",
        "text": f"How many parameters (weights and biases) does `{model}` have, that is, "
        f"`len({model}.parameters())`?",
        "values": {"nin": nin, "sizes": sizes},
    }


def q2(pick):
    a, b = pick.one([2, 3, 4, 5, 6, 7]), pick.one([2, 3, 4, 5, 6, 8, 10])
    c = pick.one([1, 2, 3, 4, 5])
    model = f"Sequential(Linear({a}, {b}), ReLU(), Linear({b}, {c}))"
    return {
        "kind": "number",
        "code": f"model = {model}\n",
        "asks": "len(model.parameters())",
        "text": f"How many parameters does `{model}` have?",
        "values": {"a": a, "b": b, "c": c},
    }


def q3(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "Every call `model(x)` builds a new graph, with fresh copies of the "
                "model's weights as its leaves.",
            ),
            (
                "s2",
                "Every call `model(x)` builds a new graph whose leaves include the very "
                "weight Values stored in the model.",
            ),
        ],
        [
            (
                "s3",
                "Once `model(x)` has built its graph, changing `p.data` for a parameter "
                "`p` of the model has no effect on what the next call `model(x)` returns.",
            ),
            (
                "s4",
                "After `p.data` of a parameter `p` of the model changes, the next call "
                "`model(x)` computes with the new value: the graph's leaves are the model's "
                "own parameter Values.",
            ),
        ],
    )
    return {"kind": "truth", "stem": stem, "text": text}


def q4(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "`Module` is the base class of `Neuron`, `Layer`, `MLP`, `Linear` and "
                "`Sequential`. What must each of them provide, so that `zero_grad()` and the "
                "training loop work on any model?",
            ),
            (
                "s2",
                "`zero_grad()` and the update step of the training loop are written once, "
                "in `Module` and in `train`, and work for every model. What do they rely on "
                "each model to have?",
            ),
        ],
        [
            (
                "s3",
                "A new model class subclasses `Module` and should work with `zero_grad()` and "
                "the training loop's update as they are. Which method must it define?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "a `backward()` method of its own"),
                ("o2", "its own learning rate"),
                ("o3", "a `__repr__` that lists its layers"),
                ("o4", "`parameters()`, returning every weight and bias Value it holds"),
            ]
        ],
        [
            [
                ("o1", "`backward()`, to push the gradients through its layers"),
                ("o2", "`learning_rate()`, the size of its own steps"),
                ("o3", "`__len__()`, the number of its layers"),
                ("o4", "`parameters()`, a list of all the Values it trains"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def q5(pick):
    n = pick.one([2, 2, 3])
    values = [pick.one([-1.5, -1.0, -0.5, 0.0, 0.5, 1.5, 2.0, 2.5]) for _ in range(n)]
    targets = [pick.one([-1.0, 0.0, 1.0, 2.0]) for _ in range(n)]
    i = pick.one(range(n))
    preds = ", ".join(f"Value({v!r})" for v in values)
    return {
        "kind": "number",
        "code": f"preds = [{preds}]\ntargets = {targets!r}\n"
        "loss = sum((p - t) ** 2 for p, t in zip(preds, targets)) / len(preds)\n"
        "loss.backward()\n",
        "asks": f"preds[{i}].grad",
        "text": f"What is `preds[{i}].grad` after this code?",
        "values": {"preds": values, "targets": targets, "i": i},
    }


def q6(pick):
    margin = pick.one([0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 0.25, 1.25, 1.75, 4.0])
    weight = pick.one([1.0, 2.0, 0.5, 3.0, 1.5])
    scale = "" if weight == 1 else f"{weight:g} * "
    return {
        "kind": "function",
        "name": "hinge_grad",
        "calls": [(0.1, 1), (-0.6, -1)],
        "text": f"A max-margin (hinge) loss of one example with label `y` (1 or -1) and "
        f"score `s` is `{scale}relu({margin:g} - y * s)`: it is 0 once the score is on the "
        f"right side by a margin of {margin:g}. Write `hinge_grad(score, y)`: the derivative "
        "of this loss with respect to `score`, at plain numbers. It is checked at many random "
        f"points (never exactly at the kink, `{margin:g} - y * score == 0`), to within a "
        "relative 1e-6.",
        "values": {"margin": margin, "weight": weight},
    }


def q7(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "Here are the four parts of one training step, scrambled. The gradients "
                "still hold the previous step's values.",
            ),
            (
                "s2",
                "A training step has these four parts, listed here in no particular "
                "order. Before the step, every `grad` holds what the previous step left.",
            ),
        ],
        [
            (
                "s3",
                "These are the four parts of a training step, shuffled. Every `grad` still "
                "holds what the step before left in it.",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "`loss.backward()`"),
                ("o2", "compute the predictions and the loss: `loss = ...`"),
                ("o3", "`model.zero_grad()`"),
                ("o4", "`for p in model.parameters(): p.data -= lr * p.grad`"),
            ]
        ],
        [
            [
                ("o1", "backpropagate from the loss"),
                ("o2", "run the model on the inputs and work out the loss"),
                ("o3", "set every parameter's `grad` to 0"),
                ("o4", "move every parameter a small step against its `grad`"),
            ]
        ],
    )
    shown = pick.shuffled(options)
    letters = "abcd"
    return {
        "kind": "order",
        "stem": stem,
        "options": shown,
        "items": list(letters),
        "text": text + " List the four letters in an order that makes a correct training "
        "step, as a list of strings. More than one order is correct: any correct one "
        "counts.",
    }


def q8(pick):
    stem, text = pick.pool(
        [
            ("s1", "Which update moves a parameter `p` so that the loss goes *down*?"),
            (
                "s2",
                "`p.grad` holds `dloss/dp`. Which line takes a step of gradient descent on `p`?",
            ),
        ],
        [("s3", "After `loss.backward()`, which line moves `p` one step downhill on the loss?")],
    )
    options = pick.pool(
        [
            [
                ("o1", "`p.data += lr * p.grad`"),
                ("o2", "`p.data -= lr * p.grad`"),
                ("o3", "`p.grad -= lr * p.data`"),
                ("o4", "`p.data = lr * p.grad`"),
            ]
        ],
        [
            [
                ("o1", "`p.data = p.data + lr * p.grad`"),
                ("o2", "`p.data = p.data - lr * p.grad`"),
                ("o3", "`p.grad = p.grad - lr * p.data`"),
                ("o4", "`p.data = -lr * p.grad`"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def _loop(values: dict, reset: bool) -> str:
    lines = [
        f"p = Value({values['p0']!r})",
        "for step in range(2):",
        f"    loss = ({values['a']} * p {'-' if values['b'] > 0 else '+'} {abs(values['b'])}) ** 2",
        *(["    p.grad = 0.0"] if reset else []),
        "    loss.backward()",
        f"    p.data -= {values['lr']!r} * p.grad",
    ]
    return "\n".join(lines) + "\n"


def q9(pick):
    values = {
        "a": pick.one([2, 3, 4, 5]),
        "b": pick.one([1, 2, 3, -1, -2]),
        "p0": pick.one([0.5, 1.0, -0.5, 1.5, 0.0, 2.0]),
        "lr": pick.one([0.1, 0.05, 0.02, 0.01]),
    }
    while values["a"] * values["p0"] == values["b"]:  # not at the minimum: p must move
        values["p0"] += 0.5
    return {
        "kind": "number",
        "code": _loop(values, reset=True),
        "asks": "p.data",
        "text": "What is `p.data` after the loop?",
        "values": values,
    }


def q10(pick):
    drawn = q9(pick)
    return {
        **drawn,
        "code": _loop(drawn["values"], reset=False),
        "text": "The same loop as in question 9, but **without** the line `p.grad = 0.0`. "
        "What is `p.data` after the loop now?",
    }


q10.same_numbers_as = "q9"  # question 10 asks about question 9's loop


def q11(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "`zero_grad()` is needed because `backward()` adds to `.grad` (with "
                "`+=`): without it, every step's gradient would also contain the gradients of "
                "all earlier steps.",
            ),
            (
                "s2",
                "`zero_grad()` only saves time: `backward()` sets every `.grad` afresh, "
                "so a stale gradient is overwritten anyway.",
            ),
        ],
        [
            (
                "s3",
                "Without `model.zero_grad()`, the gradient the update uses in step 3 is the "
                "sum of the gradients of steps 1, 2 and 3.",
            ),
            (
                "s4",
                "`loss.backward()` replaces each parameter's old `grad` with the new "
                "gradient, so zeroing the gradients first changes nothing.",
            ),
        ],
    )
    return {"kind": "truth", "stem": stem, "text": text}


def q12(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "The right place for `model.zero_grad()` is between `loss.backward()` and "
                "the update.",
            ),
            (
                "s2",
                "`model.zero_grad()` can go anywhere in a training step before "
                "`loss.backward()`, for instance at its very start.",
            ),
        ],
        [
            (
                "s3",
                "The right place for `model.zero_grad()` is right after "
                "`loss.backward()`, so that the update sees clean gradients.",
            ),
            (
                "s4",
                "Calling `model.zero_grad()` first thing in each training step, before the "
                "forward pass, is a correct place for it.",
            ),
        ],
    )
    return {"kind": "truth", "stem": stem, "text": text}


def q13(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "During training, the loss jumps up and down and, over the epochs, grows "
                "larger and larger. What is the most likely fix?",
            ),
            (
                "s2",
                "Your loss curve zigzags, and each zigzag is bigger than the last: after a "
                "few hundred steps the loss is far above where it started. What do you try "
                "first?",
            ),
        ],
        [
            (
                "s3",
                "Training diverges: the loss swings between ever higher values, and soon it "
                "is `inf` or `nan`. What do you change first?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "lower the learning rate"),
                ("o2", "raise the learning rate"),
                ("o3", "remove `model.zero_grad()`"),
                ("o4", "train for more epochs"),
            ]
        ],
        [
            [
                ("o1", "a smaller learning rate"),
                ("o2", "a larger learning rate"),
                ("o3", "no more `model.zero_grad()` calls"),
                ("o4", "more training steps"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def q14(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "In PyTorch, which call does the loop `for p in model.parameters(): "
                "p.data -= lr * p.grad` correspond to?",
            ),
            (
                "s2",
                "In PyTorch, which call does our `model.zero_grad()` (every parameter's "
                "`grad` set to 0) correspond to?",
            ),
        ],
        [
            (
                "s3",
                "In PyTorch, which call fills every parameter's `.grad` with the gradient of "
                "the loss, as our `loss.backward()` does?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "`loss.backward()`"),
                ("o2", "`optimizer.zero_grad()`"),
                ("o3", "`optimizer.step()`"),
                ("o4", "`model.eval()`"),
            ]
        ],
        [
            [
                ("o1", "`loss.backward()`"),
                ("o2", "`optimizer.zero_grad()`"),
                ("o3", "`optimizer.step()`"),
                ("o4", "`torch.no_grad()`"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


def q15(pick):
    nin, nout = pick.several([2, 3, 4, 5, 6, 7, 8], 2)
    options = [
        ("o1", f"`({nin}, {nout})`"),
        ("o2", f"`({nout}, {nin})`"),
        ("o3", f"`({nin * nout},)`"),
        ("o4", f"`({nin}, {nin})`"),
    ]
    stem, text = pick.one(
        [
            (
                "s1",
                f"In PyTorch, `torch.nn.Linear({nin}, {nout})` maps {nin} inputs to {nout} "
                "outputs. What is the shape of its `weight`?",
            ),
            (
                "s2",
                f"`layer = torch.nn.Linear({nin}, {nout})` takes vectors of {nin} numbers "
                f"and gives {nout}. What does `layer.weight.shape` say?",
            ),
        ]
    )
    return {
        "kind": "choice",
        "stem": stem,
        "text": text,
        "options": pick.shuffled(options),
        "values": {"nin": nin, "nout": nout},
    }


def q16(pick):
    nin, nout = pick.one([2, 3, 4, 5, 6, 7]), pick.one([2, 3, 4, 5])
    i, j = pick.one(range(nout)), pick.one(range(nin))
    bias = pick.one([False, True])
    asked = f"layer.bias[{i}]" if bias else f"layer.weight[{i}][{j}]"
    return {
        "kind": "number",
        "code": f"layer = Linear({nin}, {nout})\n",
        "asks": f"[id(p) for p in layer.parameters()].index(id({asked}))",
        "text": f"`layer = Linear({nin}, {nout})`. At which index of `layer.parameters()` is "
        f"`{asked}`? (Indexes start at 0; lesson 5 says in which order `Linear` lists its "
        "weights and biases.)",
        "values": {"nin": nin, "nout": nout, "i": i, "j": j, "bias": bias},
    }


def q17(pick):
    stem, text = pick.pool(
        [
            (
                "s1",
                "The loss goes down smoothly at every step, but so slowly that after 1000 "
                "steps it has barely moved. What do you try first?",
            ),
            (
                "s2",
                "Training is stable, the loss never jumps, yet it creeps down by a tiny "
                "amount per epoch. Which change is most likely to help?",
            ),
        ],
        [
            (
                "s3",
                "Each step lowers the loss by a hair, and it never jumps; after thousands "
                "of steps it is still far from low. What do you try first?",
            ),
        ],
    )
    options = pick.pool(
        [
            [
                ("o1", "lower the learning rate"),
                ("o2", "raise the learning rate"),
                ("o3", "call `model.zero_grad()` twice per step"),
                ("o4", "stop calling `model.zero_grad()`"),
            ]
        ],
        [
            [
                ("o1", "a smaller learning rate"),
                ("o2", "a larger learning rate"),
                ("o3", "a second `model.zero_grad()` in each step"),
                ("o4", "no `model.zero_grad()` at all"),
            ]
        ],
    )
    return {"kind": "choice", "stem": stem, "text": text, "options": pick.shuffled(options)}


QUESTIONS = {name: fn for name, fn in globals().items() if name[0] == "q" and name[1:].isdigit()}
