"""Stand-ins for the student's objects while a hidden test runs in the grader.

``Remote`` records what a hidden test does with an object of the kernel (attributes,
calls, operators, items) as steps of a ``Session``; when the test needs a value, the
session sends every step so far to the probe (probe/script.py), which replays them in a
forked copy of the kernel and answers with a snapshot of each result: plain data, an
object known only by its type, or the error it raised. Truth, comparisons, ``abs``,
``float`` and arithmetic on data happen here, on those snapshots, never in a method of
the student's. region.py runs hidden tests with them.
"""

from __future__ import annotations

from collections.abc import Callable

from .api import Given, Kernel

MAX_FLUSHES = 200  # round trips one hidden test may make
MAX_STEPS = 20_000  # steps one session may record


class ContentError(Exception):
    """The hidden test itself is wrong (the course author's to fix, never a student's)."""


class KernelError(AssertionError):
    """The student's code raised in the kernel, or gave no value where one was needed."""


class Opaque:
    """An object of the kernel that is not plain data: known by its type and by the
    step that first gave it (two are equal only when they are the same object)."""

    __slots__ = ("ident", "n", "type")

    def __init__(self, type_name: str, ident: int, n: int | None):
        self.type, self.ident, self.n = type_name, ident, n

    def __eq__(self, other):
        if isinstance(other, Remote):
            return other == self
        return isinstance(other, Opaque) and other.ident == self.ident

    def __hash__(self):
        return hash(("opaque", self.ident))

    def __repr__(self):
        return f"<{self.type} object>"


# ---- snapshots and arguments ------------------------------------------------------------


def decode(x):
    """A snapshot's plain data as Python values (the probe's script_data, reversed)."""
    if isinstance(x, list):
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if "o" in x:
            return Opaque(x["o"], x["i"], x["n"])
        if "a" in x:
            import numpy as np

            return np.array(x["a"], dtype=float if x["shape"] else None).reshape(x["shape"])
        if "t" in x:
            return tuple(decode(v) for v in x["t"])
        if "s" in x:
            return {decode(v) for v in x["s"]}
        if "d" in x:
            return {decode(k): decode(v) for k, v in x["d"]}
    return x


def _encode(x, session: Session):
    """A value the test sends to the kernel: plain data, or a stand-in of this session."""
    if isinstance(x, Remote):
        return {"r": x._here()._in(session)._index}
    if x is None or type(x) in (bool, int, float, str):
        return x
    if type(x) is list:
        return [_encode(v, session) for v in x]
    if type(x) is tuple:
        return {"t": [_encode(v, session) for v in x]}
    if type(x) is dict:
        return {"d": [[_encode(k, session), _encode(v, session)] for k, v in x.items()]}
    if isinstance(x, Opaque):
        raise ContentError(f"{x!r} stands for an object of an earlier part; send its stand-in")
    if isinstance(x, float | int) and not isinstance(x, bool):  # numpy scalars and the like
        return float(x) if isinstance(x, float) else int(x)
    raise ContentError(
        f"a hidden test sent a {type(x).__name__} to the student's code; "
        "send plain numbers, strings, lists, tuples or dicts"
    )


# ---- a session: the steps of one test (or one part) and their snapshots -----------------


class Session:
    def __init__(self, run: Run, given: tuple[Given, ...], what: str):
        self.run, self.given, self.what = run, given, what
        self.steps: list[list] = []
        self.texts: list[str] = []
        self.snaps: list[dict] = []
        self.seen: set[int] = set()  # errors the test has observed or expected
        self.names: dict[str, Remote] = {}
        self.closed = False

    def add(self, step: list, text: str) -> Remote:
        if self.closed:
            raise ContentError(f"`{text}` uses a value of a part that is over")
        if len(self.steps) >= MAX_STEPS:
            raise ContentError(f"the hidden test made more than {MAX_STEPS} steps")
        self.steps.append(step)
        self.texts.append(text)
        return Remote(self, len(self.steps) - 1, text)

    def name(self, name: str) -> Remote:
        if name not in self.names:
            self.names[name] = self.add(["name", name], name)
        return self.names[name]

    def flush(self) -> None:
        if len(self.snaps) == len(self.steps):
            return
        self.run.flushes += 1
        if self.run.flushes > MAX_FLUSHES:
            raise ContentError(
                f"the hidden test asked the kernel more than {MAX_FLUSHES} times; build "
                "the cases first, then assert"
            )
        fresh = self.run.kernel.run("script", steps=self.steps, given=self.given, what=self.what)
        # A step the test has a snapshot of keeps it: the kernel replays every step for
        # each request, and what it sent first is what the test read (a value does not
        # change after the fact, however the student's code behaves on a replay).
        self.snaps = self.snaps + fresh[len(self.snaps) :]

    def snap(self, index: int) -> dict:
        if index >= len(self.snaps):
            self.flush()
        return self.snaps[index]

    def value(self, index: int):
        snap = self.snap(index)
        if "v" in snap:
            return decode(snap["v"])
        if "o" in snap:
            return Opaque(snap["o"], snap["i"], snap["n"])
        self.seen.add(index if "e" in snap else snap["u"])
        raise KernelError(self.error_text(index))

    def error_text(self, index: int) -> str:
        snap = self.snaps[index]
        if "u" in snap:
            index = snap["u"]
            snap = self.snaps[index]
        return f"`{self.texts[index]}` raised {snap['e']}"

    def unseen_error(self) -> str | None:
        """The first step that raised and that the test neither read nor expected."""
        self.flush()
        for index, snap in enumerate(self.snaps):
            if "e" in snap and index not in self.seen:
                return self.error_text(index)
        return None

    def error_classes(self, index: int) -> list[str]:
        snap = self.snaps[index]
        return list(snap["x"]) if "x" in snap else []


# ---- the stand-in ----------------------------------------------------------------------

_BINARY = {
    "__add__": "+",
    "__sub__": "-",
    "__mul__": "*",
    "__truediv__": "/",
    "__floordiv__": "//",
    "__mod__": "%",
    "__pow__": "**",
    "__matmul__": "@",
}


def data_of(remote: Remote, why: str):
    """The remote's value as plain data, or a failure that says what came instead."""
    value = remote._value()
    if isinstance(value, Opaque):
        raise KernelError(f"`{remote._text}` is {value!r}, where {why} was expected")
    return value


def _grader_side(fn: Callable, text: str):
    """Arithmetic here on the kernel's data: a TypeError is the student's (None + 1)."""
    try:
        return fn()
    except (TypeError, ValueError, ZeroDivisionError, OverflowError) as exc:
        raise KernelError(f"`{text}`: {type(exc).__name__}: {exc}") from None


class Remote:
    """An object in the student's kernel, as the hidden test sees it (see the module
    docstring): what is done with it is recorded; what is read of it is plain data."""

    __slots__ = ("_index", "_session", "_text")

    def __init__(self, session: Session | None, index: int, text: str):
        object.__setattr__(self, "_session", session)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_text", text)

    # -- where it lives -----------------------------------------------------------------

    def _in(self, session: Session) -> Remote:
        if self._session is not session:
            raise ContentError(f"`{self._text}` is a value of another part")
        return self

    def _here(self) -> Remote:
        return self

    def _known(self) -> bool:
        return self._index < len(self._session.snaps)

    def _value(self):
        return self._session.value(self._index)

    def _add(self, step: list, text: str) -> Remote:
        return self._session.add(step, text)

    def _ref(self) -> dict:
        return {"r": self._index}

    # -- recorded: what the student's code does ----------------------------------------

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        me = self._here()
        if me._known():
            value = me._value()
            if not isinstance(value, Opaque):
                return _grader_side(lambda: getattr(value, name), f"{me._text}.{name}")
        return me._add(["attr", me._ref(), name], f"{me._text}.{name}")

    def __setattr__(self, name: str, value) -> None:
        me = self._here()
        me._add(["setattr", me._ref(), name, _encode(value, me._session)], f"{me._text}.{name} = …")

    def __delattr__(self, name: str) -> None:
        raise ContentError("a hidden test cannot delete an attribute of the student's objects")

    def __call__(self, *args, **kwargs):
        me = self._here()
        shown = ", ".join([*map(_short, args), *(f"{k}={_short(v)}" for k, v in kwargs.items())])
        step = [
            "call",
            me._ref(),
            [_encode(a, me._session) for a in args],
            {"d": [[k, _encode(v, me._session)] for k, v in kwargs.items()]},
        ]
        return me._add(step, f"{me._text}({shown})")

    def __getitem__(self, key):
        me = self._here()
        if me._known() and not isinstance(me._value(), Opaque) and not isinstance(key, Remote):
            value = me._value()
            return _grader_side(lambda: value[key], f"{me._text}[{_short(key)}]")
        return me._add(["item", me._ref(), _encode(key, me._session)], f"{me._text}[{_short(key)}]")

    def __setitem__(self, key, value) -> None:
        me = self._here()
        step = ["setitem", me._ref(), _encode(key, me._session), _encode(value, me._session)]
        me._add(step, f"{me._text}[{_short(key)}] = …")

    def _binary(self, op: str, other, reflected: bool):
        me = self._here()
        other_text = other._text if isinstance(other, Remote) else _short(other)
        a, b = (other, me) if reflected else (me, other)
        text = f"{other_text} {op} {me._text}" if reflected else f"{me._text} {op} {other_text}"
        if _all_known_data(me, other):
            x = me._value()
            y = other._here()._value() if isinstance(other, Remote) else other
            left, right = (y, x) if reflected else (x, y)
            return _grader_side(lambda: _apply(op, left, right), text)
        operands = [_encode(v, me._session) for v in (a, b)]
        return me._add(["op", op, *operands], text)

    def __neg__(self):
        me = self._here()
        if _all_known_data(me):
            value = me._value()
            return _grader_side(lambda: -value, f"-{me._text}")
        return me._add(["unary", "neg", me._ref()], f"-{me._text}")

    def __pos__(self):
        me = self._here()
        return me._add(["unary", "pos", me._ref()], f"+{me._text}")

    # -- read here, as plain data: nothing of the student's class decides -----------------

    def __bool__(self):
        return bool(data_of(self._here(), "True, False or a number"))

    def __float__(self):
        value = data_of(self._here(), "a number")
        return _grader_side(lambda: float(value), f"float({self._text})")

    def __int__(self):
        value = data_of(self._here(), "a number")
        return _grader_side(lambda: int(value), f"int({self._text})")

    def __index__(self):
        value = data_of(self._here(), "an int")
        return _grader_side(lambda: value.__index__(), self._text)

    def __abs__(self):
        value = data_of(self._here(), "a number")
        return _grader_side(lambda: abs(value), f"abs({self._text})")

    def __round__(self, n=None):
        value = data_of(self._here(), "a number")
        return _grader_side(lambda: round(value, n), f"round({self._text})")

    def __len__(self):
        me = self._here()
        value = me._value()
        if isinstance(value, Opaque):
            if value.n is not None:
                return value.n
            return len(me._add(["list", me._ref()], f"list({me._text})"))
        return _grader_side(lambda: len(value), f"len({me._text})")

    def __iter__(self):
        me = self._here()
        value = me._value()
        if not isinstance(value, Opaque) and not _holds_objects(value):
            yield from _grader_side(lambda: list(value), f"list({me._text})")
            return
        items = me._add(["list", me._ref()], f"list({me._text})")
        listed = items._value()
        if not isinstance(listed, Opaque) and not _holds_objects(listed):
            yield from listed
            return
        count = len(listed) if isinstance(listed, list) else listed.n or 0
        for k in range(count):
            yield items._add(["item", items._ref(), k], f"{me._text}[{k}]")

    def __contains__(self, item):
        return any(x == item for x in self)

    def __eq__(self, other):
        return _compare(self, other, lambda a, b: a == b, "==")

    def __ne__(self, other):
        return _compare(self, other, lambda a, b: a != b, "!=")

    def __lt__(self, other):
        return _compare(self, other, lambda a, b: a < b, "<", ordered=True)

    def __le__(self, other):
        return _compare(self, other, lambda a, b: a <= b, "<=", ordered=True)

    def __gt__(self, other):
        return _compare(self, other, lambda a, b: a > b, ">", ordered=True)

    def __ge__(self, other):
        return _compare(self, other, lambda a, b: a >= b, ">=", ordered=True)

    def __hash__(self):
        return hash(self._here()._value())

    def __format__(self, spec: str) -> str:
        value = self._here()._value()
        if isinstance(value, Opaque):
            return repr(value)
        return _grader_side(lambda: format(value, spec), self._text)

    def __str__(self) -> str:
        return format(self, "")

    def __repr__(self) -> str:
        session = self._session
        if session is not None and self._known():
            snap = session.snaps[self._index]
            if "v" in snap:
                return repr(decode(snap["v"]))
            if "o" in snap:
                return f"<{snap['o']} object>"
        return self._text

    def __array__(self, dtype=None, copy=None):
        import numpy as np

        return np.asarray(data_of(self._here(), "numbers"), dtype=dtype)


def _attach_operators() -> None:
    for method, op in _BINARY.items():
        reflected = "__r" + method[2:]
        setattr(Remote, method, lambda self, other, op=op: self._binary(op, other, False))
        setattr(Remote, reflected, lambda self, other, op=op: self._binary(op, other, True))


_attach_operators()

_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
    "@": lambda a, b: a @ b,
}


def _apply(op: str, a, b):
    return _OPS[op](a, b)


def _holds_objects(value) -> bool:
    """Whether a container of the kernel's holds objects (iterated as stand-ins)."""
    if isinstance(value, dict):
        value = [*value, *value.values()]
    if isinstance(value, list | tuple | set | frozenset):
        return any(isinstance(v, Opaque) or _holds_objects(v) for v in value)
    return False


def _all_known_data(*values) -> bool:
    for v in values:
        if isinstance(v, Remote):
            v = v._here()
            value = v._value() if v._known() else None
            if not v._known() or isinstance(value, Opaque) or _holds_objects(value):
                return False
    return True


def _compare(me: Remote, other, fn: Callable, op: str, ordered: bool = False):
    me = me._here()
    a = me._value()
    b = other._here()._value() if isinstance(other, Remote) else other
    if ordered:
        for side, value in ((me, a), (other, b)):
            if isinstance(value, Opaque):
                raise KernelError(f"`{side._text}` is {value!r}, where a number was expected")
    return _grader_side(lambda: fn(a, b), f"{me._text} {op} {_short(other)}")


def _short(x) -> str:
    if isinstance(x, Remote):
        return x._text
    text = repr(x)
    return text if len(text) <= 30 else text[:27] + "..."


class Name(Remote):
    """A name of the notebook (``Value``): in whichever session is running."""

    __slots__ = ()

    def __init__(self, run: Run, name: str):
        Remote.__init__(self, None, -1, name)
        object.__setattr__(self, "_index", run)  # the run, until bound

    def _here(self) -> Remote:
        run = self._index
        return run.session.name(self._text)

    def __repr__(self) -> str:
        return self._text

    def __hash__(self):
        return hash(self._here()._value())


# ---- running a region --------------------------------------------------------------------


class Part:
    def __init__(self, name: str, targets: tuple[str, ...]):
        self.name, self.targets = name, targets
        self.failure: str | None = None


class Run:
    """One hidden test's run: its sessions, parts and helpers."""

    def __init__(self, kernel: Kernel, course, name: str, default_given: tuple[Given, ...] = ()):
        self.kernel = kernel
        self.course = course  # exercises.CourseNotebook (for given())
        self.name = name  # the exercise's name, for messages
        self.flushes = 0
        self.parts: list[Part] = []
        self.session = Session(self, kernel.course(*default_given), name)
        self.top = self.session

    def given(self, targets) -> tuple[Given, ...]:
        found = []
        for target in targets:
            try:
                found.append(self.course.given(target))
            except (KeyError, AttributeError) as exc:
                raise ContentError(f"given({target!r}): {exc}") from None
        return self.kernel.course(*found)

    def add_given_args(self, *targets: str) -> None:
        """gradekit.given: the course's version of these earlier exercises, for the rest
        of this test (or part): a bug in them costs nothing here."""
        self.add_given(targets)

    def add_given(self, targets) -> None:
        if self.session.steps:
            raise ContentError("given() must come before the test uses the notebook's names")
        self.session.given = (*self.session.given, *self.given(targets))

    def finish(self, session: Session) -> None:
        error = session.unseen_error()
        if error is not None:
            raise KernelError(error)
