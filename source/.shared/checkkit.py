"""self_check(), the last cell of every notebook: your progress through the course.

self_check() is quick: it runs the check cells of the notebook in hand again, in this
kernel, and gives every other lesson one line from what its saved notebook shows.
self_check_table() runs every notebook afresh, as saved: the thorough version, for a
terminal (`python lab.py --check` in the student edition). Every assignment folder has
this file beside coursekit.py, which it reads notebooks with.
"""

from __future__ import annotations

__all__ = [
    "live_results",
    "self_check",
    "self_check_overview",
    "self_check_table",
    "visible_checks",
]


def _coursekit():
    """coursekit.py beside this file (it finds its own siblings the same way)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).absolute().with_name("coursekit.py")
    found = sys.modules.get("coursekit")
    if found is not None and Path(getattr(found, "__file__", None) or "").absolute() == path:
        return found
    key = f"_coursekit_beside_{abs(hash(str(path)))}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


_kit = _coursekit()
WIDTH, NOT_RUN = _kit.WIDTH, _kit.NOT_RUN
_first_line, _failure, _exercise_name = _kit._first_line, _kit._failure, _kit._exercise_name
read_notebook, saved_results = _kit.read_notebook, _kit.saved_results
_check_cells = _kit._check_cells

SKIP_SELF_CHECK = "COURSEKIT_NO_SELF_CHECK"  # set while grading or generating: do nothing
NAME_COLUMN = 22  # exercise names up to this long keep the messages in one column
CHECK_SECONDS = 20  # a re-run check cell that takes longer is stopped (an endless loop?)


def _running_unattended() -> bool:
    """True while grading, validating or generating, where self_check must do nothing.

    nbgrader, nbclient and nbconvert start their kernels with an in-memory history;
    JupyterLab's kernels keep a history file.
    """
    import os

    if os.environ.get(SKIP_SELF_CHECK):
        return True
    shell = _shell()
    history = getattr(shell, "history_manager", None)
    return str(getattr(history, "hist_file", "")) == ":memory:"


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _course_folder(folder=None):
    """The folder holding the lesson folders: ``folder``, or found from the current one."""
    from pathlib import Path

    here = Path(folder) if folder is not None else Path.cwd()
    if any(here.glob("*.ipynb")) and (here / "coursekit.py").exists():
        return here.parent  # a lesson folder, like my-work/01_value
    return here


def _lessons(course) -> list:
    if not course.is_dir():
        return []
    return sorted(
        p for p in course.iterdir()
        if p.is_dir() and not p.name.startswith((".", "_")) and any(p.glob("*.ipynb"))
    )


def _plan(course) -> list:
    """(name, notebook path) for every notebook of every lesson folder in ``course``."""
    plan = []
    for lesson in _lessons(course):
        paths = sorted(lesson.glob("*.ipynb"))
        plan += [(lesson.name if len(paths) == 1 else f"{lesson.name}/{p.stem}", p) for p in paths]
    return plan


def _rows(results, indent: int = 2) -> list[str]:
    """Aligned lines for (exercise, passed, message) results: ✓ or ✗, the name, and the
    message in one column (on the next line, same column, after a very long name)."""
    import textwrap

    names = [name for name, _, _ in results]
    width = min(max(map(len, names), default=0), NAME_COLUMN)
    column = indent + 2 + width + 2
    lines = []
    for name, ok, message in results:
        head = f"{' ' * indent}{'✓' if ok else '✗'} {name}"
        if not message:
            lines.append(head)
            continue
        text = textwrap.wrap(message, WIDTH - column, break_long_words=True) or [""]
        if len(text) > 2:
            text = [text[0], _first_line(" ".join(text[1:]), WIDTH - column)]
        if len(head) + 2 <= column:
            lines.append(f"{head:<{column}}{text[0]}")
            text = text[1:]
        else:
            lines.append(head)
        lines += [" " * column + part for part in text]
    return lines


def visible_checks(path, timeout: int = 60) -> list[tuple[str, bool, str]]:
    """Run the notebook at ``path`` in a fresh kernel (in its own folder, as saved) and
    return (exercise, passed, first failure message) for each of its check cells."""
    import logging
    import os
    import subprocess

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    tests = _check_cells(nb)
    log = logging.getLogger("coursekit.self_check")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    client = NotebookClient(
        nb, timeout=timeout, interrupt_on_timeout=True, allow_errors=True,
        kernel_name="python3", log=log, resources={"metadata": {"path": str(path.parent)}},
    )
    env = dict(os.environ, **{SKIP_SELF_CHECK: "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    try:
        client.execute(env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except Exception as exc:  # the kernel died or never started: report it, carry on
        problem = _first_line(f"could not run: {type(exc).__name__}: {exc}", 200)
        return [(_exercise_name(c), False, problem) for c in tests] or [("-", False, problem)]
    results = []
    for cell in tests:
        errors = [o for o in cell.get("outputs", []) if o.output_type == "error"]
        if cell.get("execution_count") is None and not errors:
            results.append((_exercise_name(cell), False, "did not run"))
        else:
            message = _failure(errors[0].ename, errors[0].evalue) if errors else ""
            results.append((_exercise_name(cell), not errors, message))
    return results


class _CheckTimeout(Exception):
    pass


def _run_check(source: str, namespace: dict) -> tuple[bool, str]:
    """Run one check cell's code in ``namespace``, quietly: (passed, failure message)."""
    import contextlib
    import io
    import signal
    import threading

    def stop(signum, frame):
        raise _CheckTimeout()

    timed = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if timed:
        previous = signal.signal(signal.SIGALRM, stop)
        signal.setitimer(signal.ITIMER_REAL, CHECK_SECONDS)
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(source, "<check cell>", "exec"), namespace)
    except Exception as exc:
        return False, _failure(type(exc).__name__, str(exc))
    finally:
        if timed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    return True, ""


def live_results(path, shell=None) -> list[tuple[str, bool | None, str]] | None:
    """(exercise, passed, message) for each check cell of the notebook at ``path``, run
    again in this kernel on what your cells defined; a check cell this kernel has not run
    yet is reported as not run. None if the notebook's cells have not run in this kernel.
    """
    shell = shell or _shell()
    history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
    if not history:
        return None
    ran = {source.strip() for source in history}
    nb = read_notebook(path)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    if not code or code[0].source.strip() not in ran:  # the setup cell has not run
        return None
    namespace = dict(shell.user_ns)  # the checks' own variables stay out of yours
    results = []
    for cell in _check_cells(nb):
        if cell.source.strip() not in ran:
            results.append((_exercise_name(cell), None, NOT_RUN))
        else:
            results.append((_exercise_name(cell), *_run_check(cell.source, namespace)))
    return results


def _current_notebook(course, plan):
    """The notebook this kernel belongs to, if it is one of ``plan``'s."""
    import os
    from pathlib import Path

    session = os.environ.get("JPY_SESSION_NAME", "")
    paths = [p for _, p in plan]
    if session.endswith(".ipynb"):
        for path in paths:
            if path.resolve() == Path(session).resolve():
                return path
    here = [p for p in paths if p.parent.resolve() == Path.cwd().resolve()]
    return max(here, key=lambda p: p.stat().st_mtime) if here else None


def _summary(results) -> str:
    done = sum(ok is True for _, ok, _ in results)
    if all(ok is None for _, ok, _ in results):
        return "not started"
    failed = sum(ok is False for _, ok, _ in results)
    return f"{done}/{len(results)} ✓" + (f", {failed} ✗" if failed else "")


def self_check_overview(folder=None, show=print) -> list[tuple[str, str, bool | None, str]]:
    """Your progress, quickly: the notebook in hand, its checks run again in this kernel,
    a line per exercise; every other lesson one line, from its saved notebook. Returns
    the rows (notebook, exercise, passed or None if not run, message)."""
    course = _course_folder(folder)
    plan = _plan(course)
    if not plan:
        show(f"self_check: no lesson folders with notebooks in {course}.")
        return []
    current = _current_notebook(course, plan)
    width = max(len(name) for name, _ in plan)
    rows, others = [], []
    for name, path in plan:
        if path == current:
            live = live_results(path)
            here = live if live is not None else saved_results(path)
            done = sum(ok is True for _, ok, _ in here)
            how = "run again now" if live is not None else "as last saved: run its cells first"
            show(f"{name} (this notebook, {how}): {done} of {len(here)} pass")
            for line in _rows([(e, bool(ok), m) for e, ok, m in here]):
                show(line)
            rows += [(name, *r) for r in here]
        else:
            results = saved_results(path)
            others.append(f"  {name:<{width}}  {_summary(results)}")
            rows += [(name, *r) for r in results]
    if others:
        show("Other lessons, as last saved:" if current else "Lessons, as last saved:")
        for line in others:
            show(line)
    done = sum(ok is True for *_, ok, _ in rows)
    show(f"Course: {done} of {len(rows)} exercises pass their visible checks.")
    if rows and done == len(rows):
        show("Well done! The hidden tests will try more cases when your work is graded.")
    return rows


def self_check_table(folder=None, show=print) -> list[tuple[str, str, bool, str]]:
    """Run every notebook of every lesson folder in ``folder`` (default: the folder around
    the current lesson) in a fresh kernel, as saved, and show a line per exercise; return
    the rows (notebook, exercise, passed, first failure message)."""
    course = _course_folder(folder)
    plan = _plan(course)
    if not plan:
        show(f"self_check: no lesson folders with notebooks in {course}.")
        return []
    show(f"Visible checks of the notebooks in {course.name}/ (as last saved):")
    rows = []
    for name, path in plan:
        results = visible_checks(path)
        show(f"{name}: {sum(ok for _, ok, _ in results)} of {len(results)} pass")
        for line in _rows(results):
            show(line)
        rows += [(name, *r) for r in results]
    done = sum(ok for *_, ok, _ in rows)
    show(f"{done} of {len(rows)} exercises pass their visible checks.")
    if rows and done == len(rows):
        show("Well done! The hidden tests will try more cases when your work is graded.")
    return rows


def self_check(folder=None, full: bool = False) -> None:
    """Print your progress through the course.

    The exercises of this notebook: each check cell you have run is run again, now, on
    what your cells defined. Every other lesson: one line, from its notebook as last
    saved (so save, Ctrl+S, after working on one). ``self_check(full=True)`` runs every
    saved notebook afresh instead (slower). While a notebook is being graded, validated
    or generated it only prints one line.
    """
    if _running_unattended():
        print("self_check: skipped (this notebook is being run automatically).")
        return
    try:
        if full:
            import nbclient  # noqa: F401
            import nbformat  # noqa: F401
    except ImportError:
        print("self_check needs nbclient and nbformat: pip install nbclient nbformat")
        return
    if full:
        self_check_table(folder)
    else:
        self_check_overview(folder)
