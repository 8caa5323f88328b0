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

import reprlib
from collections.abc import Callable

from .api import Given, Kernel

MAX_FLUSHES = 200  # round trips one hidden test may make
MAX_STEPS = 20_000  # steps one session may record
MAX_TEXT = 200  # characters of a step's text (the expression a message shows)
MAX_SHOWN = 120  # characters of a kernel value's repr in a message


class ContentError(Exception):
    """The hidden test itself is wrong (the course author's to fix, never a student's)."""


class KernelError(AssertionError):
    """The student's code raised in the kernel, or gave no value where one was needed."""


class Exhausted(KernelError):
    """The student's objects made the test need more steps or round trips than a test
    may make (a container of 100,000 objects, one round trip each): the student's
    failure. The course's own solution within the bounds is what ``generate`` checks."""


class TimeUp(BaseException):  # not an error a hidden test may catch
    """The time the grader gives this hidden test ran out (``Kernel.deadline``): the
    kernel's answers, or the grader's work on the data they carried, took it all."""


def check_time(kernel: Kernel) -> None:
    """TimeUp once the hidden test's time is over (region.py calls it in every loop)."""
    if kernel.out_of_time():
        raise TimeUp(
            f"the hidden test ran out of its {kernel.budget:.0f} s (the time left in the "
            "notebook's limit): your code's answers, or the work on what they sent, took it all"
        )


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 8, 8, 6
_REPR.maxset = _REPR.maxfrozenset = _REPR.maxdeque = _REPR.maxarray = 8
_REPR.maxstring, _REPR.maxother, _REPR.maxlong = 60, 60, 40


def shown(value) -> str:
    """A short, cut repr of a value the kernel sent (at most ``MAX_SHOWN`` characters),
    computed without building the whole repr of a large value."""
    try:
        text = _REPR.repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


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


def decode(x, frozen: bool = False):
    """A snapshot's plain data as Python values (the probe's script_data, reversed). A
    value inside a set or a dict's key is decoded hashable (``frozen``): a set there is
    a frozenset, a numpy scalar a scalar; data that cannot be held there (a list, an
    array) raises TypeError, which ``Session.value`` makes the student's failure."""
    if isinstance(x, list):
        if frozen:
            raise TypeError("a list inside a set or a dict's key")
        return [decode(v) for v in x]
    if isinstance(x, dict):
        if "o" in x:
            return Opaque(x["o"], x["i"], x["n"])
        if "a" in x:
            import numpy as np

            array = np.array(x["a"], dtype=float if x["shape"] else None).reshape(x["shape"])
            if not x["shape"]:
                return array[()]  # a numpy scalar: hashable, compares as the 0-d array did
            if frozen:
                raise TypeError("an array inside a set or a dict's key")
            return array
        if "t" in x:
            return tuple(decode(v, frozen) for v in x["t"])
        if "s" in x:
            items = [decode(v, True) for v in x["s"]]
            return frozenset(items) if frozen else set(items)
        if "d" in x:
            if frozen:
                raise TypeError("a dict inside a set or a dict's key")
            return {decode(k, True): decode(v) for k, v in x["d"]}
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
        if len(text) > MAX_TEXT:  # an expression grown in a loop: its head says enough
            text = text[: MAX_TEXT - 3] + "..."
        if self.closed:
            raise ContentError(f"`{text}` uses a value of a part that is over")
        if len(self.steps) >= MAX_STEPS:
            raise Exhausted(
                f"the test stopped at {MAX_STEPS} steps: your objects made it need more "
                f"(at `{text}`)"
            )
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
            raise Exhausted(
                f"the test stopped at {MAX_FLUSHES} answers from the kernel: your objects "
                f"made it need more (at `{self.texts[-1]}`)"
            )
        check_time(self.run.kernel)
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
            return self.decoded(index)
        if "o" in snap:
            return Opaque(snap["o"], snap["i"], snap["n"])
        self.seen.add(index if "e" in snap else snap["u"])
        raise KernelError(self.error_text(index))

    def decoded(self, index: int):
        """Step ``index``'s data as Python values; data the grader cannot hold (a set of
        sets of lists, an array in a set) is the student's failure."""
        try:
            return decode(self.snaps[index]["v"])
        except (TypeError, ValueError, RecursionError, MemoryError) as exc:
            raise KernelError(
                f"`{self.texts[index]}` gave data the grader cannot use ({exc})"
            ) from None

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


DATA_ERRORS = (TypeError, ValueError, ArithmeticError, LookupError, AttributeError, RecursionError)


def _grader_side(fn: Callable, text: str):
    """Arithmetic here on the kernel's data: a TypeError is the student's (None + 1)."""
    try:
        return fn()
    except DATA_ERRORS as exc:
        raise KernelError(f"`{text}`: {type(exc).__name__}: {str(exc)[:MAX_SHOWN]}") from None


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
        value = self._here()._value()
        return _grader_side(lambda: hash(value), f"hash({self._text})")

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
                try:
                    return shown(session.decoded(self._index))
                except KernelError:
                    return self._text
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
    text = shown(x)
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
        return Remote.__hash__(self)


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
