"""No kit module shipped in lesson 1's folder sorts a graph of Values or backpropagates
through one: that is lesson 2's answer (``topological_order``, ``backward()``), and the
kit reaches students from lesson 1 on, long before lesson 2 is past its due date.

The line-by-line leak scan (``edition.Secrets``) counts the kit's lines as given, so it
cannot see this: here every function and method of every kit module lesson 1's folder
gets is run on small graphs, and none may return a complete topological order of one (in
either direction) or fill in every gradient from a root alone. Its bytecode is also
compared with the sorts students write in lesson 2 (the course's solution)."""

from __future__ import annotations

import contextlib
import inspect
import io
import types

import pytest
from helpers import SOURCE, load_kit, read

from autograder.course import kit_files

LESSON_1 = "01_value"
LESSON_2 = "02_backward"


class Node:
    """A node like lesson 1's Value: data, grad, parents in _prev, a closure."""

    def __init__(self, data, parents=(), op="", label=""):
        self.data, self.grad, self._prev, self._op = float(data), 0.0, tuple(parents), op
        self.label = label
        self._backward = lambda: None

    def __add__(self, other):
        out = Node(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += out.grad
            other.grad += out.grad

        out._backward = _backward
        return out

    def __mul__(self, other):
        out = Node(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += other.data * out.grad
            other.grad += self.data * out.grad

        out._backward = _backward
        return out


def graphs():
    """(root, every node, each leaf's gradient): graphs with shared nodes, whose parents
    are listed in either order, so that no walk from the root is a topological order of
    all of them by luck."""
    for flip in (False, True):
        x, two = Node(3.0, label="x"), Node(2.0, label="two")
        y = x * two  # y after x
        z = (y + x) if not flip else (x + y)  # x reached directly and through y
        w = z * y if not flip else y * z
        root = w + x if not flip else x + w
        nodes = [x, two, y, z, w, root]
        # d root/dx: root = z*y + x, z = y + x, y = 2x: root = 3x*2x + x = 6x^2 + x
        yield root, nodes, {"x": 12 * x.data + 1}


def is_topological(order, nodes) -> bool:
    """``order`` holds every node once, each after its parents, or each before them."""
    if not isinstance(order, (list, tuple)) or len(order) != len(nodes):
        return False
    place = {id(n): i for i, n in enumerate(order)}
    if set(place) != {id(n) for n in nodes}:
        return False
    edges = [(place[id(p)], place[id(n)]) for n in nodes for p in n._prev]
    return all(a < b for a, b in edges) or all(a > b for a, b in edges)


def functions(module) -> list:
    """Every function of ``module`` and every method of its classes, private ones too."""
    found = []
    for obj in vars(module).values():
        if isinstance(obj, types.FunctionType) and obj.__module__ == module.__name__:
            found.append(obj)
        elif isinstance(obj, type) and obj.__module__ == module.__name__:
            for member in vars(obj).values():
                member = getattr(member, "__func__", member)
                if isinstance(member, types.FunctionType):
                    found.append(member)
    return found


def lesson_1_kit() -> list:
    return [load_kit(name.removesuffix(".py")) for name in kit_files(LESSON_1)]


def quietly(fn, *args):
    """``fn(*args)``, its output hidden; None if it raised."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = fn(*args)
            if inspect.isgenerator(result):
                result = list(result)
            return result
    except BaseException:  # a check that stops (CheckFailed), a TypeError: not a sort
        return None


SKIP = ("draw_graph", "__getattr__")  # needs Graphviz; the module's lookup of old names


def test_every_kit_module_of_lesson_1_is_scanned():
    names = [m.__name__ for m in lesson_1_kit()]
    assert len(names) == len(kit_files(LESSON_1)) >= 2, names


@pytest.mark.parametrize("module", lesson_1_kit(), ids=lambda m: m.__name__)
def test_no_kit_function_returns_a_topological_order(module, monkeypatch):
    monkeypatch.setenv("COURSEKIT_NO_SELF_CHECK", "1")  # self_check() must stay quiet
    sorts = []
    for fn in functions(module):
        if fn.__name__ in SKIP:
            continue
        if all(is_topological(quietly(fn, root), nodes) for root, nodes, _ in graphs()):
            sorts.append(fn.__qualname__)
    assert not sorts, f"{module.__name__} sorts a graph: {sorts}"


@pytest.mark.parametrize("module", lesson_1_kit(), ids=lambda m: m.__name__)
def test_no_kit_function_backpropagates_from_a_root_alone(module, monkeypatch):
    monkeypatch.setenv("COURSEKIT_NO_SELF_CHECK", "1")
    backward = []
    for fn in functions(module):
        if fn.__name__ in SKIP:
            continue
        right = []
        for root, nodes, want in graphs():
            quietly(fn, root)
            right.append(abs(nodes[0].grad - want["x"]) < 1e-9)
        if all(right):
            backward.append(fn.__qualname__)
    assert not backward, f"{module.__name__} backpropagates from a root: {backward}"


def lesson_2_sorts() -> dict[str, bytes]:
    """{name: bytecode} of the sorts and backward() of lesson 2's solution."""
    nb = read(SOURCE, LESSON_2)
    found = {}
    for cell in nb.cells:
        if "### BEGIN SOLUTION" not in cell.source:
            continue
        code = compile(cell.source, "<lesson 2>", "exec")
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                found[const.co_name] = const
                for inner in const.co_consts:
                    if isinstance(inner, types.CodeType):
                        found[f"{const.co_name}.{inner.co_name}"] = inner
    wanted = ("topological_order", "backward")
    return {k: c.co_code for k, c in found.items() if k.split(".")[0].startswith(wanted)}


def test_lesson_2s_sorts_are_found_to_compare_with():
    names = set(lesson_2_sorts())
    assert {"topological_order", "topological_order_iterative"} <= names, names


@pytest.mark.parametrize("module", lesson_1_kit(), ids=lambda m: m.__name__)
def test_no_kit_function_is_a_copy_of_lesson_2s_answers(module):
    answers = lesson_2_sorts()
    codes = {}
    for fn in functions(module):
        codes[fn.__qualname__] = fn.__code__.co_code
        for const in fn.__code__.co_consts:
            if isinstance(const, types.CodeType):
                codes[f"{fn.__qualname__}.{const.co_name}"] = const.co_code
    copies = [
        (k, a) for k, code in codes.items() for a, answer in answers.items() if code == answer
    ]
    assert not copies, copies


def test_the_scan_finds_a_sort_and_a_backward_when_there_is_one(tmp_path, monkeypatch):
    """The scan itself: a kit with lesson 2's answers in it fails it."""
    ns = {}
    exec(
        "def walk(root):\n"
        "    order, seen = [], set()\n"
        "    def visit(n):\n"
        "        if id(n) not in seen:\n"
        "            seen.add(id(n))\n"
        "            for p in n._prev:\n"
        "                visit(p)\n"
        "            order.append(n)\n"
        "    visit(root)\n"
        "    return order\n"
        "def back(root):\n"
        "    root.grad = 1.0\n"
        "    for n in reversed(walk(root)):\n"
        "        n._backward()\n",
        ns,
    )
    fake = types.ModuleType("fake_kit")
    for name in ("walk", "back"):
        ns[name].__module__ = "fake_kit"
        setattr(fake, name, ns[name])
    with pytest.raises(AssertionError, match="walk"):
        test_no_kit_function_returns_a_topological_order(fake, monkeypatch)
    with pytest.raises(AssertionError, match="back"):
        test_no_kit_function_backpropagates_from_a_root_alone(fake, monkeypatch)
