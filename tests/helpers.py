"""Shared test tools: run notebooks' cells in-process, make buggy variants of a solution,
and grade submissions with real nbgrader in a scratch copy of the course."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
SHARED = SOURCE / ".shared"  # the kit's modules, once
KIT_MODULES = ("coursekit", "checkkit", "quizkit")  # as a kernel imports them


def copy_kit(folder: Path) -> None:
    """The kit's modules an assignment folder gets (``course.kit_files``), copied into
    ``folder`` from this session's source/.shared/."""
    from autograder.course import kit_files

    for name in kit_files(folder.name):
        shutil.copy(SHARED / name, folder / name)


def load_kit(name: str = "coursekit"):
    """This session's kit module ``name``, loaded from source/.shared/ by path."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_{name}_test", SHARED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


VENV_BIN = str(Path(sys.executable).parent)


def notebook_path(folder: Path, assignment: str) -> Path:
    (path,) = sorted((folder / assignment).glob("*.ipynb"))
    return path


def read(folder: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(notebook_path(folder, assignment), as_version=4)


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def is_test_cell(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("grade"))


def mutate(nb: nbformat.NotebookNode, old: str, new: str) -> nbformat.NotebookNode:
    """A copy of ``nb`` with ``old`` replaced by ``new`` in the one cell that contains it."""
    nb = nbformat.from_dict(nb)
    hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
    assert len(hits) == 1, f"{old!r} is in {len(hits)} code cells, expected exactly 1"
    assert hits[0].source.count(old) == 1, f"{old!r} occurs more than once in its cell"
    hits[0].source = hits[0].source.replace(old, new)
    return nb


SEED = 20261122  # the hidden tests' inputs in the suite (grading draws a new seed each time)
STUDENT = "test-student"  # the id cells run and are graded under (a quiz's variant)
STUDENT_ID_ENV = "COURSEKIT_STUDENT_ID"  # what grading sets in the kernel: whose variant


def code_of(cell) -> str:
    """What grading runs of a cell in the kernel: a test cell without its hidden region,
    and no IPython magics (run in-process here)."""
    from autograder.markers import visible

    source = visible(cell.source) if is_test_cell(cell) else cell.source
    return "\n".join(
        line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
    )


def is_demo(cell) -> bool:
    """A cell grading does not run (GuardedExecute.skip_tags): a demonstration, a quiz's
    practice round."""
    md = cell.metadata.get("nbgrader", {})
    skipped = {"demo", "practice"} & set(cell.metadata.get("tags", []))
    return bool(skipped) and not md.get("solution") and not md.get("grade")


class CellFailed(Exception):
    def __init__(self, cell_id: str | None, error: BaseException):
        super().__init__(f"cell {cell_id}: {type(error).__name__}: {error}")
        self.cell_id = cell_id
        self.error = error


@contextlib.contextmanager
def lesson_path(assignment: str, student: str = STUDENT):
    """The assignment's folder first on sys.path (for coursekit), and ``student`` as the id
    a quiz shows, as in a grading kernel there. The recursion
    limit is put back afterwards: code under test may raise it, and a later endless
    recursion would then overflow the C stack and kill this process."""
    folder = str(SOURCE / assignment)
    limit = sys.getrecursionlimit()
    before = os.environ.get(STUDENT_ID_ENV)
    sys.path.insert(0, folder)
    for kit in KIT_MODULES:
        sys.modules.pop(kit, None)
    os.environ[STUDENT_ID_ENV] = student
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STUDENT_ID_ENV, None)
        else:
            os.environ[STUDENT_ID_ENV] = before
        sys.path.remove(folder)
        for kit in KIT_MODULES:
            sys.modules.pop(kit, None)
        sys.setrecursionlimit(limit)


def run_cells(
    nb: nbformat.NotebookNode,
    assignment: str,
    *,
    until: str | None = None,
    tests: bool = True,
    namespace: dict | None = None,
    student: str = STUDENT,
) -> dict:
    """Execute ``nb``'s code cells in this process (test cells without their hidden
    region); return the namespace.

    Stops after the cell whose grade id (or tag, such as ``engine``) is ``until``; skips
    test cells if ``tests`` is False. Raises CellFailed for the first cell that raises.
    Output is swallowed.
    """
    ns = {"__name__": "__main__", **(namespace or {})}
    with lesson_path(assignment, student):
        for cell in nb.cells:
            if cell.cell_type != "code" or (not tests and is_test_cell(cell)):
                continue
            if "practice" in cell.metadata.get("tags", []):  # a quiz's: never graded
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code_of(cell), f"<cell {grade_id(cell)}>", "exec"), ns)
            except Exception as exc:
                raise CellFailed(grade_id(cell), exc) from exc
            if until is not None and until in (grade_id(cell), *cell.metadata.get("tags", [])):
                break
    return ns


def verdict_of(
    ns: dict,
    assignment: str,
    cell_id: str,
    seed: int = SEED,
    student: str = STUDENT,
    shown: str = "",
    passed: set[str] | None = None,
):
    """The hidden test's verdict on the namespace as it is (the probe runs in a fork),
    for a submission handed in under ``student`` whose notebook showed ``shown``'s quiz
    variant (if it says). ``passed``: the exercises the notebook's earlier cells passed,
    as grading keeps them (``Kernel.course``); this cell's are added to it."""
    from autograder.verdicts import api as verdicts
    from autograder.verdicts import region

    mine = passed if passed is not None else set()
    seed = verdicts.cell_seed(seed, cell_id)
    kernel = verdicts.Kernel(
        verdicts.local_ask(ns), seed, 30, student=student, shown=shown, passed=lambda: set(mine)
    )
    result, passed = region.decide(assignment, cell_id, kernel, course_notebook(assignment))
    mine |= passed
    return result


def course_notebook(assignment: str):
    """The exercises of the assignment's instructor notebook (verdicts/exercises.py)."""
    from autograder.verdicts import exercises

    return exercises.read_file(notebook_path(SOURCE, assignment))


def failing_cells(
    nb: nbformat.NotebookNode,
    assignment: str,
    seed: int = SEED,
    visible: bool = False,
    first: bool = False,
    student: str = STUDENT,
    shown: str = "",
    known: dict[int, set[str]] | None = None,
    trace: dict[int, set[str]] | None = None,
) -> dict[str, str]:
    """Run every cell as grading does, carrying on past failures: {grade id of a test
    cell whose hidden test failed: its message}. A failing non-test cell (say a stub that
    raises at definition time) is reported too, under its grade id or its position.
    With ``visible``, the test cells' visible checks are what is reported instead. With
    ``first``, it stops at the first failure (enough to know that a mutant is killed).

    ``known``: {position of a test cell: the exercises passed once its hidden test has
    run}, for test cells whose verdict is already known to be a pass (catalogue.py: the
    cells before a mutant's first change, run exactly as in the solution). Their hidden
    tests are not run again; every cell's code still is. ``trace`` is filled the same way,
    for every test cell run.
    """
    ns = {"__name__": "__main__"}
    failed: dict[str, str] = {}
    passed: set[str] = set()
    with lesson_path(assignment, shown or student):
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or is_demo(cell):
                continue
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    exec(compile(code_of(cell), f"<cell {i}>", "exec"), ns)
            except Exception as exc:
                if visible or not is_test_cell(cell):
                    failed[grade_id(cell) or f"cell {i}"] = str(exc)
            if is_test_cell(cell) and not visible:
                if known is not None and i in known:
                    passed = set(known[i])
                    continue
                result = verdict_of(
                    ns, assignment, grade_id(cell), seed, student, shown, passed=passed
                )
                if not result.passed:
                    failed[grade_id(cell)] = result.message
                if trace is not None:
                    trace[i] = set(passed)
            if first and failed:
                break
    return failed


def passes_after(
    nb: nbformat.NotebookNode,
    assignment: str,
    seed: int = SEED,
    student: str = STUDENT,
    shown: str = "",
) -> dict[int, set[str]] | None:
    """{position of each test cell: the exercises passed once its hidden test has run}, as
    ``failing_cells`` keeps them, for a notebook that passes every hidden test (None if
    one fails: then nothing of it can be taken as known)."""
    after: dict[int, set[str]] = {}
    failed = failing_cells(nb, assignment, seed, student=student, shown=shown, trace=after)
    return None if failed else after


# ---- real nbgrader in a scratch course ---------------------------------------------------


class ScratchCourse:
    """A copy of the course (source/, autograder/, nbgrader_config.py) in ``path``, where
    nbgrader commands run for real. Links are copied as files, as nbgrader would."""

    def __init__(self, path: Path, assignments: list[str] | None = None):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "nbgrader_config.py", path / "nbgrader_config.py")
        shutil.copytree(ROOT / "autograder", path / "autograder", ignore=_pycache)
        keep = set(assignments) if assignments else None
        if keep is not None:  # and the earlier lessons a lesson's course engine is read from
            from autograder.verdicts.api import engine_lessons

            keep |= {lesson for a in assignments for lesson in engine_lessons(a)}
        shutil.copytree(
            SOURCE,
            path / "source",
            ignore=lambda d, names: (
                [
                    n
                    for n in names
                    if d == str(SOURCE)
                    and keep is not None
                    and not n.startswith(".")
                    and n not in keep
                ]
                + _pycache(d, names)
            ),
        )
        self.released: set[str] = set()

    def nbgrader(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "-m", "nbgrader", *args],
            cwd=self.path,
            env=course_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"nbgrader {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
        return proc

    def release(self, assignment: str) -> Path:
        """Run generate_assignment (which also records the cells in the gradebook)."""
        if assignment not in self.released:
            self.nbgrader("generate_assignment", assignment, "--force")
            self.released.add(assignment)
        return self.path / "notebooks" / assignment

    def submit(self, student: str, assignment: str, nb: nbformat.NotebookNode) -> None:
        folder = self.path / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        name = notebook_path(SOURCE, assignment).name
        nbformat.write(nb, folder / name)

    def autograde(self, assignment: str) -> dict[str, dict[str, float]]:
        """Autograde every submission: {student: {test cell grade id: score}}."""
        self.release(assignment)
        self.nbgrader("autograde", assignment, "--force")
        return self.scores(assignment)

    def scores(self, assignment: str) -> dict[str, dict[str, float]]:
        from nbgrader.api import Gradebook

        result: dict[str, dict[str, float]] = {}
        with Gradebook(f"sqlite:///{self.path / 'gradebook.db'}") as gb:
            for sub in gb.assignment_submissions(assignment):
                cells = {}
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        if grade.cell.max_score:
                            cells[grade.name] = grade.score
                result[sub.student.id] = cells
        return result

    def max_scores(self, assignment: str) -> dict[str, float]:
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{self.path / 'gradebook.db'}") as gb:
            a = gb.find_assignment(assignment)
            return {c.name: c.max_score for nb in a.notebooks for c in nb.grade_cells}

    def autograded(self, student: str, assignment: str) -> nbformat.NotebookNode:
        folder = self.path / "autograded" / student / assignment
        return nbformat.read(notebook_path(folder.parent, assignment), as_version=4)


def _pycache(directory: str, names: list[str]) -> list[str]:
    return [n for n in names if n in ("__pycache__", ".ipynb_checkpoints")]


# ---- the checks every lesson's tests make --------------------------------------------------


def assert_blank_fails_each(assignment: str, exercises: set[str]) -> None:
    """The released notebook fails every exercise's visible check and hidden test with
    one short line that says it is not written yet."""
    for visible in (True, False):
        failed = failing_cells(read(NOTEBOOKS, assignment), assignment, visible=visible)
        assert set(failed) >= set(exercises), failed
        for cell in exercises:
            message = failed[cell]
            assert len(message.splitlines()) == 1 and len(message) < 88, message
            assert "NotImplementedError" in message


def records(course: Path, assignment: str = "01_value") -> dict[str, dict]:
    """{student: the grader's record} of ``assignment`` in a graded course."""
    out = {}
    for path in (course / "autograded").glob(f"*/{assignment}/.autograder.json"):
        rec = json.loads(path.read_text())
        out[rec["student"]] = rec
    return out


def gradebook_scores(course: Path, assignment: str = "01_value") -> dict[str, float]:
    """{student: score} of ``assignment`` in the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s.student.id: s.score for s in gb.assignment_submissions(assignment)}


def course_env(env: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``env`` (default: this process's environment) with the virtualenv's bin/ first on
    PATH (nbgrader runs ``alembic`` from PATH), and ``extra`` set."""
    env = dict(os.environ if env is None else env)
    env["PATH"] = os.pathsep.join([VENV_BIN, env.get("PATH", "")])
    return {**env, **extra}


def autograder_cli(
    *args: str,
    cwd: Path = ROOT,
    timeout: int = 120,
    env: dict[str, str] | None = None,
    codes: tuple[int, ...] | None = None,
    wait: bool = True,
    **kwargs,
):
    """``python -m autograder ARGS`` in a process of its own, its output captured, in
    ``env`` (default: ``course_env()``). With ``codes``, its exit code must be one of them
    (else AssertionError, with the end of its output). With ``wait=False``, the started
    ``subprocess.Popen`` (stdout and stderr piped as text unless ``kwargs`` say otherwise),
    for the caller to watch, kill or ``communicate`` with."""
    command = [sys.executable, "-m", "autograder", *args]
    env = course_env() if env is None else env
    if not wait:
        pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
        return subprocess.Popen(command, cwd=cwd, env=env, **{**pipes, **kwargs})
    proc = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs
    )
    if codes is not None:
        assert proc.returncode in codes, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def grade_in_kernel(nb, assignment: str, path: Path | None = None) -> dict:
    """{grade_id: verdict} of ``nb`` graded by GuardedExecute in a real kernel, unsandboxed
    (tests/test_sandbox.py covers the sandbox), as from ``path`` (the solution's by default);
    ``nb`` keeps its outputs and metadata."""
    from autograder.kernel.limits import Limits
    from autograder.preprocessors.execute import GuardedExecute

    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    path = path or notebook_path(SOLUTIONS, assignment)
    ex = GuardedExecute(
        config=Limits(sandbox="off").as_config(),
        shutdown_kernel="immediate",
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
    )
    resources = {
        "nbgrader": {"notebook": path.stem, "assignment": assignment},
        "metadata": {"path": str(path.parent)},
    }
    ex.preprocess(nb, resources)
    return {
        grade_id(c): (c.metadata.get("autograder") or {}).get("verdict")
        for c in nb.cells
        if is_test_cell(c)
    }
