"""The kernel's answers are untrusted input (issue 20, classes 1 to 3).

1. An answer counts only when the probe signed it and it is complete: an unsigned,
   replayed, doubled or wrongly signed answer scores 0 and flags the submission; a
   signed answer with anything missing, extra or of the wrong type is a wrong answer.
   The probe binds what it uses when it is loaded, so later patches do not reach it.
2. The course's code for an exercise never reaches the kernel before that exercise's own
   check has run, whatever the order of the student's cells.
3. What the probe establishes in the student's process is behaviour the grader controls:
   orders are checked against the graph the grader built, depth against a recursion limit
   the probe sets, borrowing by traps on the course's walks (and any copy of them).

Fast tests run the probe in a forked copy of this process (``verdicts.local_ask``); the
kernel tests run GuardedExecute on a real, unsandboxed kernel (tests/test_sandbox.py and
tests/test_attacks.py cover the sandbox and the whole pipeline).
"""

from __future__ import annotations

import functools
import inspect
import json

import nbformat
import pytest
from helpers import (
    SOLUTIONS,
    SOURCE,
    course_notebook,
    grade_id,
    grade_in_kernel,
    is_test_cell,
    lesson_path,
    read,
    run_cells,
)

from autograder.preprocessors.execute import RUNS
from autograder.verdicts import answers, region
from autograder.verdicts import api as verdicts
from autograder.verdicts.probe import runtime

A, B = "01_value", "02_backward"


# ---- 1. signed and complete --------------------------------------------------------------


KEY = b"q" * 32  # the key a kernel's probe sent (these tests' 'kernels' share it)


def reply_for(request: dict, result) -> dict:
    text = json.dumps({"result": result})
    sent = answers.request_text(KEY, request)
    return {"answer": text, "tag": answers.sign(KEY, request["nonce"], sent, text)}


def kernel_answering(make, pending=set) -> verdicts.Kernel:
    """A Kernel whose 'kernel' answers each request with ``make(request)``, opened with
    the probe's key as execute.py opens a real kernel's replies."""

    def ask(request):
        replies, error = make(request)
        sent = answers.request_text(KEY, request)
        return answers.open_reply(KEY, request["nonce"], sent, replies, error)

    return verdicts.Kernel(ask, seed=1, pending=pending)


ARGS = {"value": "Value", "programs": [{"leaves": [1.0, 2.0], "steps": [["+", [0, 1]]]}]}
SEEN = {"reached": [True, True, True], "prev": "set"}  # what the graph walk saw
GOOD = [{"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], **SEEN}]


@pytest.mark.parametrize(
    "name, make",
    [
        ("unsigned", lambda r: ([{"result": GOOD}], None)),
        (
            "signed with another key",
            lambda r: (
                [
                    {
                        "answer": json.dumps({"result": GOOD}),
                        "tag": answers.sign(
                            b"k" * 32,
                            r["nonce"],
                            answers.request_text(b"k" * 32, r),
                            json.dumps({"result": GOOD}),
                        ),
                    }
                ],
                None,
            ),
        ),
        ("replayed for another nonce", lambda r: ([reply_for({"nonce": "old"}, GOOD)], None)),
        (
            "the probe's answer to another request with this nonce",
            lambda r: ([reply_for({**r, "args": {**r["args"], "value": "Forger"}}, GOOD)], None),
        ),
        ("two answers", lambda r: ([reply_for(r, GOOD), reply_for(r, GOOD)], None)),
        (
            "signed text changed",
            lambda r: (
                [
                    {
                        **reply_for(r, GOOD),
                        "answer": json.dumps({"result": GOOD * 1}).replace("3.0", "3.00"),
                    }
                ],
                None,
            ),
        ),
        ("a bare list", lambda r: ([[1, 2]], None)),
    ],
)
def test_an_answer_the_probe_did_not_sign_scores_nothing_and_is_flagged(name, make):
    kernel = kernel_answering(make)
    with pytest.raises(verdicts.GradingFailure, match="did not come from the grading code"):
        kernel.run("graphs", **ARGS)
    assert kernel.flags and answers.NOT_THE_PROBES in kernel.flags[0]


def test_a_signed_complete_answer_is_believed():
    kernel = kernel_answering(lambda r: ([reply_for(r, GOOD)], None))
    assert kernel.run("graphs", **ARGS) == GOOD
    assert kernel.flags == []


def test_failures_may_come_unsigned_since_they_score_nothing():
    for reply, words in [({"timeout": 5.0}, "did not finish"), ({"crashed": "boom"}, "boom")]:
        kernel = kernel_answering(lambda r, reply=reply: ([reply], None))
        with pytest.raises(verdicts.GradingFailure, match=words):
            kernel.run("graphs", **ARGS)
        assert kernel.flags == []


INCOMPLETE = {
    "no gradients": [{"data": [1.0, 2.0, 3.0], "grads": [], **SEEN}],
    "a gradient short": [{"data": [1.0, 2.0, 3.0], "grads": [1.0], **SEEN}],
    "no entries": [],
    "data short": [{"data": [3.0], "grads": [1.0, 1.0], **SEEN}],
    "an extra key": [{"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], "ok": True, **SEEN}],
    "grads missing": [{"data": [1.0, 2.0, 3.0], **SEEN}],
    "grads not a list": [{"data": [1.0, 2.0, 3.0], "grads": True, **SEEN}],
    "an object that is no repr": [{"data": [1.0, 2.0, {"value": 3}], "grads": [1.0, 1.0], **SEEN}],
    "not a list": {"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], **SEEN},
    "what the walk saw missing": [{"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0]}],
    "a node the walk saw short": [
        {"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], "reached": [True], "prev": "set"}
    ],
    "the walk saw a number": [
        {"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], "reached": [1, 1, 1], "prev": "set"}
    ],
    "a _prev type too long": [
        {"data": [1.0, 2.0, 3.0], "grads": [1.0, 1.0], "reached": [True] * 3, "prev": "x" * 99}
    ],
    "a failure without its error": [{"failed": "build", "step": 0}],
    "a failure at no stage": [
        {"failed": "elsewhere", "step": None, "error": "", "type": "", "message": ""}
    ],
}


@pytest.mark.parametrize("name", INCOMPLETE)
def test_a_signed_incomplete_answer_is_wrong_never_agreement(name):
    kernel = kernel_answering(lambda r: ([reply_for(r, INCOMPLETE[name])], None))
    with pytest.raises(verdicts.GradingFailure, match="incomplete"):
        kernel.run("graphs", **ARGS)
    assert kernel.flags


@pytest.mark.parametrize(
    "op, args, result",
    [
        (
            "order",
            {"programs": ARGS["programs"]},
            [{"nodes": [[2, 3.0, []]], "program": [0], "order": [0], "strangers": []}],
        ),
        (
            "zero_grad",
            {"programs": ARGS["programs"]},
            [
                {
                    "nodes": [
                        {
                            "data": 3.0,
                            "after": 3.0,
                            "grad": 0.0,
                            "leaf": True,
                            "root": True,
                            "index": 2,
                        }
                    ]
                }
            ],
        ),
        ("hand", {"graphs": [{"L": 1.0, "n": 2.0}]}, [{"L": 1.0}]),
        ("calls", {"calls": [{"args": [1, 2]}]}, [{"result": 3.0, "args": [None]}]),
        (
            "neuron",
            {"cases": [{"xs": [1.0], "ws": [2.0], "b": 0.0}]},
            [{"data": 0.9, "grads": {"xs": [], "ws": [0.1], "b": 0.1}}],
        ),
        ("values", {"names": ["q1", "q2"]}, {"q1": 1.0}),
        (
            "loss",
            {"cases": [{"preds": [1.0, 2.0], "targets": [1, 0]}]},
            [{"data": 0.5, "is_value": True, "grads": [0.1], "param_grads": []}],
        ),
        (
            "train",
            {"runs": [{"model": "features"}]},
            [
                {
                    "returned": None,
                    "params": [],
                    "sizes": [],
                    "mismatched": 0,
                    "used": 0,
                    "printed": [],
                }
            ],
        ),
        (
            "module",
            {"weights": [0.1, 0.2], "runs": [{"x": [1.0]}]},
            {"count": 2, "again": 2, "not_values": [], "unique": True, "runs": []},
        ),
    ],
)
def test_every_operation_has_a_shape_and_missing_parts_break_it(op, args, result):
    assert answers.problem(op, args, result) is not None


def honest_namespace():
    return run_cells(read(SOLUTIONS, A), A, tests=False)


def test_every_honest_answer_has_its_operations_shape():
    """The probe's own answers on the course's solution pass the shape checks (the lessons'
    tests run every hidden test this way)."""
    kernel = verdicts.Kernel(verdicts.local_ask(honest_namespace()), 7)
    verdict, _ = region.decide(A, "value_test_arithmetic", kernel, course_notebook(A))
    assert verdict.passed and not verdict.flag, verdict


# ---- 2. the course's code waits for the exercise's own check --------------------------


def test_a_test_that_would_send_the_course_code_of_a_pending_exercise_waits():
    sent = []
    kernel = verdicts.Kernel(
        lambda r: sent.append(r) or {"result": []}, 1, pending=lambda: {"Value.__add__"}
    )
    with pytest.raises(verdicts.Deferred):
        region.decide(A, "value_test_arithmetic", kernel, course_notebook(A))
    assert sent == []  # nothing went to the kernel


def test_every_given_is_graded_by_a_test_of_its_assignment():
    """The list of what each test grades cannot drift from the code it gives: a Given
    replaces an exercise that a test claims, or a name the notebook's locked cells define."""
    import ast
    import importlib

    hidden = "autograder.verdicts.hidden"
    for path in sorted(SOURCE.glob("0*")):
        name = path.name
        module = importlib.import_module(f"{hidden}.{name}")
        if not hasattr(module, "EXERCISES"):
            continue
        tree = ast.parse(inspect.getsource(module))
        siblings = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
        given = {g.target for g in _givens(module)}
        for sibling in siblings - {None, "common", "quiz", "sets"}:
            given |= {g.target for g in _givens(importlib.import_module(f"{hidden}.{sibling}"))}
        claimed = {t for targets in module.EXERCISES.values() for t in targets}
        assert given - claimed <= _locked_names(read(SOURCE, name)), (name, given - claimed)
        assert set(module.EXERCISES) <= set(module.TESTS)


def _locked_names(nb) -> set[str]:
    """Top-level names that the notebook's locked, non-solution cells define."""
    import ast

    names = set()
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("solution") or not meta.get("locked"):
            continue
        for node in ast.parse(cell.source).body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                names.add(node.name)
    return names


def _givens(module):
    for value in vars(module).values():
        items = value if isinstance(value, tuple) else (value,)
        yield from (v for v in items if isinstance(v, verdicts.Given))


CAPTURE = r"""
def _capture(lines):
    import json, re
    text = "".join(lines)
    if "autograder.probe" in text and "given" in text:
        literal = text[text.index("'autograder.probe', ") + 20:text.rindex(")")]
        request = json.loads(eval(literal))
        for given in request.get("given", []):
            scope = dict(globals())
            exec(given["source"], scope)
            if given["target"].startswith("Value."):
                setattr(Value, given["name"], scope[given["name"]])
    return lines
get_ipython().input_transformers_cleanup.append(_capture)
"""


def run_kernel(nb, assignment: str, path=None) -> dict:
    return grade_in_kernel(nb, assignment, path)


def reversed_tests(nb) -> nbformat.NotebookNode:
    """``nb`` with its test cells in reverse order (each where another one was)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    places = [i for i, c in enumerate(nb.cells) if is_test_cell(c)]
    cells = [nb.cells[i] for i in places]
    for i, cell in zip(places, reversed(cells)):
        nb.cells[i] = cell
    return nb


@pytest.mark.slow
def test_reordered_tests_never_hand_the_course_code_to_a_blank_engine():
    """A blank lesson 1 whose test cells run last-first, with a hook that copies every
    given method the kernel sees into the student's Value: + and * must still fail."""
    from helpers import NOTEBOOKS

    blank = reversed_tests(read(NOTEBOOKS, A))
    blank.cells.insert(2, nbformat.v4.new_code_cell(CAPTURE))
    got = run_kernel(blank, A)
    assert got["value_test_add_mul"]["passed"] is False, got
    assert not any(v and v["passed"] for v in got.values()), got


def swapped_tests(nb, first: str, second: str) -> nbformat.NotebookNode:
    """``nb`` with two test cells in each other's place."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    i, j = (next(k for k, c in enumerate(nb.cells) if grade_id(c) == g) for g in (first, second))
    nb.cells[i], nb.cells[j] = nb.cells[j], nb.cells[i]
    return nb


@pytest.mark.slow
@pytest.mark.parametrize(
    "assignment, first, second",
    [
        (A, "value_test_add_mul", "value_test_arithmetic"),
        (B, "backward_test_topological_order", "backward_test_backward"),
    ],
)
def test_reordered_tests_of_an_honest_notebook_keep_full_marks(assignment, first, second):
    """A test moved above the cells it checks, and above the test of what it is given,
    waits for that test, and is then decided on the notebook as it is by then."""
    got = run_kernel(swapped_tests(read(SOLUTIONS, assignment), first, second), assignment)
    assert got and all(v and v["passed"] for v in got.values()), got


# ---- 1 (kernel). bound at load, signed in the copy -------------------------------------

PATCHES = {
    "operator and math replaced": """
import math, operator, numbers
operator.add = operator.mul = operator.sub = operator.truediv = lambda a, b: 0.0
math.sin = math.cos = math.exp = lambda x: 0.0
""",
    "modules the probe uses replaced": """
import os, select, time
os.fork = lambda: 0
select.select = lambda *a: ([], [], [])
time.monotonic = lambda: 0.0
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", PATCHES)
def test_later_patches_do_not_reach_the_loaded_probe(name):
    nb = read(SOLUTIONS, A)
    last = max(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and not is_test_cell(c) and "NotImplementedError" not in c.source
    )
    first_test = next(i for i, c in enumerate(nb.cells) if is_test_cell(c))
    nb.cells.insert(
        max(first_test, min(last, first_test)), nbformat.v4.new_code_cell(PATCHES[name])
    )
    got = run_kernel(nb, A)
    assert got and all(v and v["passed"] for v in got.values()), got


# Each forger, and whether its answer reaches the grader (and so must be flagged) or is
# stopped in the kernel by the probe's bindings (then it simply earns nothing).
FORGERS = {
    "serve replaced": (
        True,
        """
import sys, json
real_audit = sys.audit
def audit(event, *args):
    if event != "autograder.probe":
        return real_audit(event, *args)
    get_ipython().display_pub.publish(data={"@MIME@": {"result": []}}, metadata={})
sys.audit = audit
""",
    ),
    "publisher rewrites the answer": (
        False,
        """
shell = get_ipython()
cls = type(shell.display_pub)
real = cls.publish
def publish(self, data, metadata=None, **kw):
    if "@MIME@" in data:
        data = {"@MIME@": {"result": []}}
    return real(self, data=data, metadata=metadata or {}, **kw)
cls.publish = publish
shell.display_pub.publish = lambda *a, **k: publish(shell.display_pub, *a, **k)
""",
    ),
    "a second answer after the probe's": (
        True,
        """
def extra(*args):
    get_ipython().display_pub.publish(data={"@MIME@": {"result": []}}, metadata={})
get_ipython().events.register("post_execute", extra)
""",
    ),
    "an at-fork hook writes into the probe's pipe": (
        True,
        """
import os, json
def hook():
    for fd in range(3, 64):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                os.write(fd, b"x" * 64 + json.dumps({"result": []}).encode())
        except OSError:
            pass
    os._exit(0)
os.register_at_fork(after_in_child=hook)
""",
    ),
}


# The defence is the same in every lesson: `make test` tries each forger in lesson 1, `make
# mutation` in the four lessons the catalog once scored a blank notebook in.
FORGER_LESSONS = ["01_value", "03_activations", "05_mlp", "05_training"]
FORGER_PARAMS = [
    pytest.param(name, a, marks=() if a == FORGER_LESSONS[0] else pytest.mark.mutation)
    for a in FORGER_LESSONS
    for name in FORGERS
]


@pytest.mark.slow
@pytest.mark.parametrize("name, assignment", FORGER_PARAMS)
def test_forged_answers_score_nothing_and_are_flagged(name, assignment):
    """In each lesson the catalog scored a blank notebook in (11 of 14, 16 of 16, and 16 of
    20 in lesson 5 before it was split into 05_mlp and 05_training)."""
    from helpers import NOTEBOOKS

    reaches, code = FORGERS[name]
    nb = read(NOTEBOOKS, assignment)
    nb.cells.insert(2, nbformat.v4.new_code_cell(code.replace("@MIME@", runtime.MIME)))
    RUNS.clear()
    got = run_kernel(nb, assignment)
    assert got and not any(v and v["passed"] for v in got.values()), got
    flagged = [e for run in RUNS for e in run["events"] if e.kind == "forged"]
    assert bool(flagged) == reaches, RUNS


JUNK_EVERYWHERE = """
import os, json
def hook():
    for fd in range(3, 256):
        try:
            os.write(fd, b"x" * 64 + json.dumps({"result": []}).encode())
        except OSError:
            pass
    os._exit(0)
os.register_at_fork(after_in_child=hook)
"""


@pytest.mark.slow
def test_junk_on_every_descriptor_of_the_kernel_costs_only_its_own_points():
    """Bytes written into the kernel's sockets and pipes arrive as messages that are not
    Jupyter's: they are dropped, the kernel is no longer believed, and grading goes on."""
    from helpers import NOTEBOOKS

    nb = read(NOTEBOOKS, A)
    nb.cells.insert(2, nbformat.v4.new_code_cell(JUNK_EVERYWHERE))
    got = run_kernel(nb, A)  # returns: nothing escapes GuardedExecute
    assert got and not any(v and v["passed"] for v in got.values()), got


# ---- 3. behaviour the grader controls ------------------------------------------------------

HIDING_PREV = '''
class Hiding(Value):
    """_prev reads empty once a label is set (as the probe sets labels)."""
    @property
    def _prev(self):
        return set() if getattr(self, "label", "") else self.__dict__.get("_kids", set())
    @_prev.setter
    def _prev(self, value):
        self.__dict__["_kids"] = value
Value = Hiding
def topological_order(root):
    return [root]
def zero_grad(root):
    root.grad = 0.0
'''

RECURSIVE_SORT = """
import sys
def topological_order_iterative(root):
    {before}
    order, seen = [], set()
    def visit(v):
        if v not in seen:
            seen.add(v)
            for p in v._prev:
                visit(p)
            order.append(v)
    try:
        visit(root)
    finally:
        {after}
    return order
"""

SORTS = {
    "a recursive sort that turns the profiler off": RECURSIVE_SORT.format(
        before="sys.setprofile(None)", after="pass"
    ),
    "a recursive sort that raises the limit": RECURSIVE_SORT.format(
        before="sys.setrecursionlimit(100_000)", after="pass"
    ),
    "a recursive sort that raises the limit and puts it back": RECURSIVE_SORT.format(
        before="old = sys.getrecursionlimit(); sys.setrecursionlimit(100_000)",
        after="sys.setrecursionlimit(old)",
    ),
    "coursekit's walk pasted and renamed": """
def topological_order_iterative(start):
    out, done, todo = [], {id(start)}, [start]
    while todo:
        n = todo.pop()
        out.append(n)
        for p in getattr(n, "_prev", ()) or ():
            if id(p) not in done:
                done.add(id(p))
                todo.append(p)
    return out
""",
    "coursekit's walk called through a wrapper": """
import coursekit
walk = (lambda f: lambda root: f(root))(coursekit.graph_nodes)
def topological_order_iterative(root):
    return walk(root)
""",
}


@functools.cache
def _backward_solution() -> dict:
    return run_cells(read(SOLUTIONS, B), B, tests=False)


def backward_namespace() -> dict:
    """Lesson 2's solution, run once; a copy of its namespace for each test (what a test
    adds lands in the copy, and no test changes the solution's own objects)."""
    return dict(_backward_solution())


def test_a_prev_that_hides_nodes_from_the_probe_hides_nothing():
    ns = backward_namespace()
    exec(HIDING_PREV, ns)
    for cell in ("backward_test_topological_order", "backward_test_zero_grad"):
        with lesson_path(B):
            verdict = verdicts.verdict(B, cell, verdicts.Kernel(verdicts.local_ask(ns), 3))
        assert not verdict.passed, cell
        assert "missing" in verdict.message or "grad 0" in verdict.message, verdict.message


@pytest.mark.parametrize("name", SORTS)
def test_depth_and_borrowing_are_measured_by_behaviour(name):
    ns = backward_namespace()
    with lesson_path(B):
        exec(SORTS[name], ns)
        verdict = verdicts.verdict(
            B,
            "backward_test_topological_order_iterative",
            verdicts.Kernel(verdicts.local_ask(ns), 5),
        )
    assert not verdict.passed, name
    assert any(word in verdict.message for word in ("recursion", "coursekit")), verdict.message


def test_the_course_solution_of_the_iterative_sort_still_passes():
    ns = backward_namespace()
    with lesson_path(B):
        verdict = verdicts.verdict(
            B,
            "backward_test_topological_order_iterative",
            verdicts.Kernel(verdicts.local_ask(ns), 5),
        )
    assert verdict.passed, verdict.message
