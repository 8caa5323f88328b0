"""Arrays of reference Values for 09_set_arrays' hidden tests (grader side, no numpy).

An array is a shape and its numbers in row-major order, like numpy's. The grader draws
arrays in the probe's format ({"shape", "flat"}), computes every operation of the set's
``Tensor`` element by element with refgrad Values (broadcasting as numpy does), and lets
the reference engine find each input's gradient: so the expected gradients come from
the chain rule, not from a second copy of the array formulas.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from .common import RefValue, num

Shape = tuple[int, ...]


@dataclass
class Arr:
    """An array: its shape and its elements (Values or floats), row-major."""

    shape: Shape
    flat: list

    def __post_init__(self) -> None:
        self.shape = tuple(self.shape)
        assert len(self.flat) == math.prod(self.shape), (self.shape, len(self.flat))

    def at(self, index: Sequence[int]):
        return self.flat[flat_index(self.shape, index)]

    def spec(self) -> dict:
        """The array as the probe reads it (its elements must be numbers)."""
        return {"shape": list(self.shape), "flat": [float(v) for v in self.flat]}

    def values(self) -> Arr:
        return Arr(self.shape, [RefValue(v) for v in self.flat])

    def data(self) -> Arr:
        return Arr(self.shape, [v.data for v in self.flat])

    def grads(self) -> Arr:
        return Arr(self.shape, [v.grad for v in self.flat])


def from_spec(spec: dict) -> Arr:
    return Arr(tuple(spec["shape"]), list(spec["flat"]))


def indices(shape: Shape):
    return itertools.product(*(range(n) for n in shape))


def flat_index(shape: Shape, index: Sequence[int]) -> int:
    k = 0
    for n, i in zip(shape, index):
        k = k * n + i
    return k


def draw(rng: random.Random, shape: Shape, lo: float = -2.0, hi: float = 2.0) -> Arr:
    """Random numbers in [lo, hi], away from 0, rounded to 3 places."""
    out = []
    for _ in range(math.prod(shape)):
        x = round(rng.uniform(lo, hi), 3)
        out.append(x if abs(x) >= 0.05 else 0.5)
    return Arr(shape, out)


def broadcast_shape(a: Shape, b: Shape) -> Shape:
    """numpy's broadcast of two shapes (they must be compatible)."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        assert x == y or 1 in (x, y), (a, b)
        out.append(max(x, y))
    return tuple(out)


def source_index(shape: Shape, out_index: Sequence[int]) -> tuple[int, ...]:
    """Which element of an array of ``shape`` broadcasting puts at ``out_index``."""
    tail = out_index[len(out_index) - len(shape) :]
    return tuple(0 if n == 1 else i for n, i in zip(shape, tail))


# ---- the set's operations, element by element --------------------------------------------


def add(a: Arr, b: Arr) -> Arr:
    shape = broadcast_shape(a.shape, b.shape)
    return Arr(
        shape,
        [a.at(source_index(a.shape, i)) + b.at(source_index(b.shape, i)) for i in indices(shape)],
    )


def matmul(a: Arr, b: Arr) -> Arr:
    (n, k), (k2, m) = a.shape, b.shape
    assert k == k2
    out = []
    for i, j in indices((n, m)):
        total = a.at((i, 0)) * b.at((0, j))
        for t in range(1, k):
            total = total + a.at((i, t)) * b.at((t, j))
        out.append(total)
    return Arr((n, m), out)


def tanh(a: Arr) -> Arr:
    return Arr(a.shape, [v.tanh() for v in a.flat])


def total(a: Arr):
    out = a.flat[0]
    for v in a.flat[1:]:
        out = out + v
    return out


def unbroadcast(grad: Arr, shape: Shape) -> Arr:
    """The sum of ``grad`` over the axes along which an array of ``shape`` was broadcast
    to grad's shape (plain numbers)."""
    sums = dict.fromkeys(indices(shape), 0.0)
    for i in indices(grad.shape):
        sums[source_index(shape, i)] += grad.at(i)
    return Arr(shape, [sums[i] for i in indices(shape)])


# ---- plain-number arrays, for hints --------------------------------------------------------


def plain_matmul(a: Arr, b: Arr) -> Arr | None:
    """a @ b on floats, or None when the shapes do not fit."""
    if len(a.shape) != 2 or len(b.shape) != 2 or a.shape[1] != b.shape[0]:
        return None
    (n, k), m = a.shape, b.shape[1]
    return Arr(
        (n, m), [sum(a.at((i, t)) * b.at((t, j)) for t in range(k)) for i, j in indices((n, m))]
    )


def transpose(a: Arr) -> Arr:
    n, m = a.shape
    return Arr((m, n), [a.at((i, j)) for j, i in indices((m, n))])


def combine(*terms: tuple[float, Arr]) -> Arr:
    """The sum of c * array over ``terms`` (same shapes)."""
    shape = terms[0][1].shape
    return Arr(shape, [sum(c * t.flat[k] for c, t in terms) for k in range(math.prod(shape))])


def same(got: dict, want: Arr, rel: float = 1e-6) -> bool:
    """Whether the probe's array ``got`` is ``want`` (shape and every number)."""
    if got.get("shape") is None or tuple(got["shape"]) != want.shape:
        return False
    return all(abs(g - w) <= 1e-8 + rel * max(1.0, abs(w)) for g, w in zip(got["flat"], want.flat))


def first_difference(got: dict, want: Arr, rel: float = 1e-6) -> tuple[str, float, float]:
    """(where, expected, got) of the first element that differs."""
    for index in indices(want.shape):
        g, w = got["flat"][flat_index(want.shape, index)], want.at(index)
        if abs(g - w) > 1e-8 + rel * max(1.0, abs(w)):
            where = f"[{', '.join(map(str, index))}]" if index else ""
            return where, w, g
    return "", 0.0, 0.0


def shape_text(shape: Sequence[int]) -> str:
    return str(tuple(shape))


def value_text(got: dict) -> str:
    """What came back, for a message: a number, an array's shape, or its repr."""
    if "shape" in got:
        if len(got["flat"]) == 1:
            return num(got["flat"][0])
        return f"an array of shape {shape_text(got['shape'])}"
    return num(got)


def few(x: dict | Arr, most: int = 4) -> str:
    """A few of an array's numbers, row by row: ``[1, 2.5, -3, 4, ...]`` (a 0-d array's
    one number as it is); what is not an array of numbers, as ``num`` shows it."""
    if isinstance(x, Arr):
        shape, flat = x.shape, x.flat
    elif isinstance(x, dict) and "shape" in x:
        shape, flat = tuple(x["shape"]), x["flat"]
    else:
        return num(x)
    if not shape:
        return num(flat[0])
    more = ", ..." if len(flat) > most else ""
    return "[" + ", ".join(num(v) for v in flat[:most]) + more + "]"


def array_text(x: dict | Arr) -> str:
    """An array for a message: a few numbers and its shape."""
    if isinstance(x, Arr) or (isinstance(x, dict) and "shape" in x):
        shape = x.shape if isinstance(x, Arr) else x["shape"]
        return f"{few(x)} of shape {shape_text(shape)}"
    return num(x)


def expected_got(want: Arr, got: dict) -> str:
    """Two lines: a few numbers of the expected array and of what came back."""
    return f"expected {array_text(want)}\ngot {array_text(got)}"


def got_text(got: dict) -> str:
    """What came back instead of an array, or its shape."""
    if "shape" in got:
        return f"shape {shape_text(got['shape'])}"
    return num(got)
