"""Hidden tests written in the notebook, as nbgrader teaches, decided outside the kernel.

A test cell's hidden region is ordinary Python: statements that use the notebook's names
(``Value``, ``a.grad``, ``model.parameters()``) and asserts, optionally against the
reference engine (``from refgrad import Value as Ref``) and the course's helpers
(``from gradekit import rng, close, part, given, raises``). ``run`` executes it **here, in
the grader**, never in the student's kernel:

- every name the region reads and does not define is bound by what the instructor
  notebook makes of it (region_names.py): the exercise's names (what its solution cells
  and engine cell define, the classes and data its setup cells give) are stand-ins
  (``Remote``) that record what the test does with them (attributes, calls, operators,
  items) as steps, and nothing is sent until the test needs a value; modules (``math``,
  ``np``) are the grader's own imports; any other name (the kit's ``check``, a helper of
  the visible checks) is the author's mistake, which ``generate`` refuses;
- when it does (an ``assert``, a comparison, ``float()``, ``len()``, a loop, a format),
  the probe replays every step so far in a forked copy of the kernel and answers with a
  snapshot of each step's result, taken right after the step ran (probe/script.py),
  signed and checked like every answer (answers.py): plain data of exact types, or "an
  object of type T", or the error the step raised;
- comparisons, truth, ``abs``, ``float`` and arithmetic on those snapshots happen here,
  on plain data: an object that "equals anything", lies in ``__float__``, ``__bool__``
  or ``__abs__``, or returns 0.0 from ``__sub__`` whatever it is given, proves nothing,
  because none of its methods is ever asked to compare;
- a failing assert gives one message: the exercise's name, the assert's line, and both
  sides (pytest's assertion rewriting), got and expected;
- anything the kernel cannot answer (a timeout, a crash, an error in the student's code,
  an object where a number was expected) fails the test; an error of the test itself (a
  name the grader does not know, a wrong import) is a course content error, the
  author's, never the student's.

``gradekit.part`` splits a cell's points into shares (one per function), and
``gradekit.given`` puts the course's version of earlier exercises in place for a test,
read from the instructor notebook's solution cells (exercises.py), so one bug costs only
the exercise that has it.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib
import random
import sys
import types

from .. import region_names
from . import api
from .api import Deferred, GradingFailure, Kernel, Verdict, failed_verdict, parts_failure
from .exercises import CourseNotebook, is_pointer
from .remote import (
    ContentError,
    KernelError,
    Name,
    Opaque,
    Part,
    Remote,
    Run,
    Session,
    TimeUp,
    check_time,
    data_of,
    shown,
)

GRADEKIT = "gradekit"
REFGRAD = "refgrad"


def close(got, expected, rel: float = 1e-6, abs_: float = 1e-8) -> bool:
    """got within rel (relative) or abs_ of expected, the hidden tests' own tolerance
    (hidden/common.py ``close``); NaN is close only to NaN."""
    from .hidden import common

    return common.close(float(got), float(expected), rel, abs_)


def expect_close(what: str, got, expected, rel: float = 1e-6, abs_: float = 1e-8) -> None:
    """Fail with "what: expected E, got G" unless got is close to expected."""
    if isinstance(got, Remote):
        got = data_of(got, "a number")
    ok = False
    with contextlib.suppress(TypeError, ValueError):
        ok = close(got, expected, rel, abs_)
    if not ok:
        raise AssertionError(f"{what}: expected {_num(expected)}, got {_num(got)}")


@contextlib.contextmanager
def _part(run: Run, name: str, *targets: str, given: tuple | list = ()):
    """A share of the cell's points: the checks inside credit ``name`` alone. The
    course code given to the test so far (``given()``) is given to the part too."""
    piece = Part(name, tuple(targets))
    run.parts.append(piece)
    outer = run.session
    mine = {g.target: g for g in (*outer.given, *run.given(given))}
    run.session = Session(run, tuple(mine.values()), name)
    try:
        yield
        run.finish(run.session)
    except GradingFailure as exc:  # a library check's: its message names what failed
        piece.failure = str(exc)
    except AssertionError as exc:
        piece.failure = _failure_text(exc, name)
    except TimeUp as exc:
        piece.failure = f"{name}: {exc}"
        raise
    finally:
        run.session.closed = True
        run.session = outer
        run.kernel.done.update(piece.targets)
        if piece.failure is None:
            run.kernel.ok.update(piece.targets)


@contextlib.contextmanager
def _raises(run: Run, *expected):
    """The student's code inside must raise one of ``expected`` (classes or names)."""
    names = {e if isinstance(e, str) else e.__name__ for e in expected}
    wanted = " or ".join(sorted(names))
    session = run.session
    start = len(session.steps)
    with contextlib.suppress(KernelError):
        yield
    session.flush()
    for index in range(start, len(session.snaps)):
        snap = session.snaps[index]
        if "e" in snap:
            session.seen.add(index)
            if names & set(session.error_classes(index)):
                return
            raise AssertionError(
                f"`{session.texts[index]}` should raise {wanted}, raised {snap['e']}"
            )
    what = session.texts[-1] if len(session.steps) > start else "the block"
    raise AssertionError(f"`{what}` should raise {wanted}; it did not")


def kind(value) -> str:
    """The type name of a value of the kernel's ("float", "Value"), as sent."""
    if isinstance(value, Remote):
        value = value._here()._value()
    return value.type if isinstance(value, Opaque) else type(value).__name__


def _has(run: Run, obj, name: str) -> bool:
    """Whether the kernel's object has attribute ``name`` (hasattr, asked in the kernel)."""
    if not isinstance(obj, Remote):
        return hasattr(obj, name)
    me = obj._here()
    step = me._add(["attr", me._ref(), name], f"{me._text}.{name}")
    snap = step._session.snap(step._index)
    if "e" in snap and "AttributeError" in snap["x"]:
        step._session.seen.add(step._index)
        return False
    step._value()  # any other error is the student's, and fails the test
    return True


class Context:
    """What a library check (hidden/checks.py) is given: the run's kernel, this
    submission's random inputs and the course code given to the current test or part."""

    def __init__(self, run: Run):
        self.run = run
        self.kernel = run.kernel
        self.rng = run.kernel.rng

    @property
    def given(self) -> tuple:
        return self.run.session.given


GRADEKIT_API = ("close", "expect_close", "given", "has", "kind", "part", "raises", "rng")


def _gradekit(run: Run) -> types.ModuleType:
    """``gradekit`` as a hidden region imports it: the helpers, bound to this run, and
    the course's library checks (hidden/checks.py ``LIBRARY``)."""
    from .hidden import checks

    module = types.ModuleType(GRADEKIT)
    module.__doc__ = "The course's helpers for hidden tests (autograder/verdicts/region.py)."
    module.rng = random.Random(run.kernel.rng.getrandbits(64))  # this submission's, this cell's
    module.close = close
    module.expect_close = expect_close
    module.given = run.add_given_args
    module.has = functools.partial(_has, run)
    module.kind = kind
    module.part = functools.partial(_part, run)
    module.raises = functools.partial(_raises, run)
    context = Context(run)
    for name, check in checks.LIBRARY.items():
        setattr(module, name, functools.partial(check, context))
    module.__all__ = [*GRADEKIT_API, *checks.LIBRARY]
    return module


def _num(x) -> str:
    if isinstance(x, float):
        return f"{x:.6g}"
    return shown(x)[:40]


def _failure_text(exc: BaseException, name: str) -> str:
    """One message: the exercise's name, the failing line, both sides."""
    text = api.capped(str(exc).strip()) or "assert failed"
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()] or ["assert failed"]
    line = _failing_line(exc)
    if line and not isinstance(exc, KernelError):
        if lines[0].startswith("assert "):  # pytest's explanation: after the line itself
            lines[0] = f"`{line}`: {lines[0].removeprefix('assert ')}"
        elif line.startswith("assert"):  # the author's message first, then the line
            lines.insert(1, f"(`{line}`)")
    return "\n".join([f"{name}: {lines[0]}", *lines[1:6]])


def _failing_line(exc: BaseException) -> str:
    tb = exc.__traceback__
    found = ""
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith("<hidden test"):
            found = _LINES.get(tb.tb_frame.f_code.co_filename, [""] * tb.tb_lineno)[
                tb.tb_lineno - 1
            ].strip()
        tb = tb.tb_next
    return found


_LINES: dict[str, list[str]] = {}


@functools.lru_cache(maxsize=256)
def compile_region(code: str, filename: str):
    """The region's code object, with pytest's assertion rewriting (both sides of a
    failing assert in its message), compiled once per worker; a SyntaxError is the
    author's."""
    from _pytest.assertion.rewrite import rewrite_asserts

    try:
        tree = ast.parse(code, filename)
    except SyntaxError as exc:
        raise ContentError(
            f"the hidden test does not parse: line {exc.lineno}: {exc.msg}"
        ) from None
    names = tuple(region_names.free_names(tree))
    tree = ast.fix_missing_locations(_Ticks().visit(tree))
    rewrite_asserts(tree, code.encode(), filename)
    _LINES[filename] = code.splitlines()
    return compile(tree, filename, "exec"), names


TICK = "__grader_tick__"


class _Ticks(ast.NodeTransformer):
    """Every loop, comprehension and function of a region asks the clock first
    (``check_time``): the grader's own work on the kernel's data (a loop over 100,000
    items the student's code returned) ends with the test's time, like the kernel's."""

    @staticmethod
    def _tick() -> ast.stmt:
        return ast.Expr(ast.Call(ast.Name(TICK, ast.Load()), [], []))

    def _body(self, node):
        self.generic_visit(node)
        node.body.insert(0, self._tick())
        return node

    visit_For = visit_AsyncFor = visit_While = _body
    visit_FunctionDef = visit_AsyncFunctionDef = _body

    def visit_comprehension(self, node):
        self.generic_visit(node)
        node.ifs.insert(0, ast.Call(ast.Name(TICK, ast.Load()), [], []))
        return node


def _ticker(kernel: Kernel):
    def tick() -> bool:
        check_time(kernel)
        return True

    return tick


# What an error of the region's own code is, once it has read the kernel's data: never the
# student's when it is one of these (the region is wrong whatever the data).
AUTHORS_ERRORS = (ImportError, NameError, SyntaxError, ContentError)


def _bind(names, course, runner: Run) -> dict:
    """The region's free names (region_names.py): the exercise's as stand-ins of the
    student's objects, modules as the grader's own imports; any other is the author's
    mistake (``generate`` refuses it)."""
    known = course.names if course is not None else region_names.NotebookNames()
    bound = {}
    for name in names:
        meaning = known.meaning(name)
        if meaning.kind == region_names.EXERCISE:
            bound[name] = Name(runner, name)
        elif meaning.kind == region_names.MODULE:
            bound[name] = _module(name, meaning)
        else:
            raise ContentError(f"the hidden test uses `{name}`, {meaning.why}")
    return bound


def _module(name: str, meaning) -> object:
    """``import module`` or ``from module import attribute``, in the grader."""
    try:
        module = importlib.import_module(meaning.module)
        if not meaning.attribute:
            return module
        try:
            return getattr(module, meaning.attribute)
        except AttributeError:
            return importlib.import_module(f"{meaning.module}.{meaning.attribute}")
    except ImportError as exc:
        raise ContentError(f"`{name}`: the grader cannot import it ({exc})") from None


def _explain(op, left, right):
    """pytest's comparison explanation: got (the kernel's) and expected (the test's)."""
    if op != "==":
        return None
    if isinstance(left, Remote) and not isinstance(right, Remote):
        return f"got {shown(left)}, expected {shown(right)}"
    if isinstance(right, Remote) and not isinstance(left, Remote):
        return f"got {shown(right)}, expected {shown(left)}"
    return None


def run(code: str, kernel: Kernel, course, name: str, grade_id: str) -> None:
    """Run a hidden region against ``kernel``; GradingFailure (with credit) when it fails,
    ContentError when the test itself is wrong, Deferred when it must wait."""
    from _pytest.assertion import util

    filename = f"<hidden test {grade_id}>"
    code_object, names = compile_region(code, filename)
    runner = Run(kernel, course, name)
    kit = _gradekit(runner)
    ns: dict = {"__name__": "__hidden_test__", TICK: _ticker(kernel)}
    ns.update(_bind(names, course, runner))

    def importer(module, globals=None, locals=None, fromlist=(), level=0):
        if module == GRADEKIT:
            return kit
        if module.split(".")[0] == REFGRAD:
            return _refgrad(module, fromlist)
        return builtins.__import__(module, globals, locals, fromlist, level)

    ns["__builtins__"] = {**builtins.__dict__, "__import__": importer}
    saved, util._reprcompare = util._reprcompare, _explain
    try:
        exec(code_object, ns)
        if not runner.parts:
            runner.finish(runner.session)
    except Deferred:
        raise
    except GradingFailure:
        raise
    except AssertionError as exc:
        raise GradingFailure(_failure_text(exc, name)) from None
    except TimeUp as exc:
        raise GradingFailure(f"{name}: {exc}") from None
    except ContentError:
        raise
    except Exception as exc:
        line = _failing_line(exc)
        where = f" (at `{line[:80]}`)" if line else ""
        what = f"{type(exc).__name__}: {str(exc)[:120]}"
        if runner.flushes and not isinstance(exc, AUTHORS_ERRORS):
            # The test had read the kernel's data, and the course's solution passes it
            # (generate): the data the student's code sent is what it cannot use.
            raise GradingFailure(
                f"{name}: the test could not use what your code sent: {what}{where}"
            ) from None
        raise ContentError(f"{what}{where}") from None
    finally:
        util._reprcompare = saved
    _credit(runner)


def _credit(runner: Run) -> None:
    parts = runner.parts
    failed = [p for p in parts if p.failure is not None]
    if not failed:
        return
    right = [p.name for p in parts if p.failure is None]
    raise parts_failure([(p.name, p.failure) for p in failed], right, len(parts))


def _refgrad(module: str, fromlist):
    """The reference engine (the course's ``refgrad``, loaded by the hidden tests)."""
    from .hidden import common

    top = common.ref
    if module == REFGRAD:
        return top
    return sys.modules[f"_course_refgrad.{module.split('.', 1)[1]}"] if fromlist else top


def verdict(code: str, kernel: Kernel, course, name: str, grade_id: str) -> Verdict:
    """The verdict of a test cell whose hidden region is code (``run``)."""
    try:
        run(code, kernel, course, name, grade_id)
    except Deferred:
        raise
    except GradingFailure as exc:
        return failed_verdict(exc, kernel)
    except ContentError as exc:
        return Verdict(
            False,
            f"the hidden test of {grade_id} is wrong: a course content error, not yours "
            f"({str(exc)[:160]}); please tell the course staff",
            kernel.seed,
            grader_error=True,
        )
    return Verdict(True, "", kernel.seed, flag="; ".join(dict.fromkeys(kernel.flags)))


def decide(
    assignment: str, grade_id: str, kernel: Kernel, course: CourseNotebook | None
) -> tuple[Verdict, set[str]]:
    """A test cell's verdict, and the exercises it shows the student's code right in
    (``Kernel.course``): from its hidden region when that is code, else from the test
    the region points to in ``verdicts/hidden/<assignment>.py``."""
    exercise = course.exercises.get(grade_id) if course is not None else None
    if exercise is None or is_pointer(exercise.hidden):
        result = api.verdict(assignment, grade_id, kernel)
        return result, api.passed_targets(assignment, grade_id, result, kernel)
    name = ", ".join(t.split(".")[-1] for t in exercise.targets) or grade_id
    result = verdict(exercise.hidden, kernel, course, name, grade_id)
    if result.flag:
        return result, set()
    return result, set(exercise.targets) if result.passed else set(kernel.ok)
