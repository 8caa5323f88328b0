"""Rebuild ``notebooks/`` and ``solutions/`` from ``source/`` (``python -m autograder generate``).

- ``notebooks/<assignment>/``: nbgrader's own ``generate_assignment`` (solutions become
  stubs, hidden tests disappear, outputs are cleared), run against a throwaway gradebook.
- ``solutions/<assignment>/``: the instructor notebook with nbgrader's ``ClearHiddenTests``
  applied and the solution markers dropped, executed with nbclient so that plots and graph
  drawings are saved in it.

Both carry ``metadata.course.source_digest``, a hash of the assignment's source folder,
so ``check_generated`` (and a test) can tell when either folder is stale. A quiz's also
carry its practice round (``metadata.course.practice``: the practice variants' answers and
worked explanations, which coursekit reads back). The grader works those out from the
quiz's hidden answers, so this module is handed the function that does it (``practice``:
``verdicts.api.practice_round``, passed in by ``python -m autograder generate``): what
students get is built without importing the grading code.

``coursekit.py`` is in git once (``source/.shared/``); in each generated folder it is a
link to that file, like in ``source/<assignment>/`` (``course.place_coursekit``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import nbformat

from .. import markers
from ..course import (
    KITS,
    NOTEBOOKS,
    SHARED,
    SOLUTIONS,
    SOURCE,
    assignments,
    kit_files,
    link_kits,
    nbgrader_api,
    place_coursekit,
)

EXAMPLE_ID = "example-student"  # whose quiz variant the solutions show
GENERATOR_VERSION = "1"  # bump to force every generated notebook to count as stale


class GenerateError(RuntimeError):
    pass


def source_digest(assignment: str, source: Path = SOURCE) -> str:
    """A hash of everything in the assignment's source folder (links followed), with its
    kit modules always the course's shared ones, whether their links are there yet or not."""
    h = hashlib.sha256(GENERATOR_VERSION.encode())
    folder = source / assignment
    files = {p.relative_to(folder): p for p in folder.rglob("*") if p.is_file()}
    for kit in kit_files(assignment):
        if (source / ".shared" / kit).is_file():
            files[Path(kit)] = source / ".shared" / kit
    for rel in sorted(files):
        if "__pycache__" in rel.parts or ".ipynb_checkpoints" in rel.parts:
            continue
        h.update(str(rel).encode() + b"\0" + files[rel].read_bytes() + b"\0")
    return h.hexdigest()[:16]


Practice = Callable[[str], "dict | None"]  # assignment -> its practice round, or None


def course_metadata(assignment: str, practice: Practice | None) -> dict:
    """``metadata.course`` of a generated notebook of ``assignment``."""
    found = {"source_digest": source_digest(assignment)}
    bank = practice(assignment) if practice is not None else None
    if bank:
        found["practice"] = bank
    return found


def _stamp(path: Path, metadata: dict) -> None:
    nb = nbformat.read(path, as_version=4)
    nb.metadata["course"] = metadata
    nbformat.write(nb, path)


def release(assignment: str, dest_root: Path = NOTEBOOKS, practice: Practice | None = None) -> Path:
    """Student version via nbgrader generate_assignment into ``dest_root/<assignment>``."""
    with tempfile.TemporaryDirectory() as tmp:
        api = nbgrader_api(release_directory=str(dest_root), db_url=f"sqlite:///{tmp}/gradebook.db")
        result = api.generate_assignment(assignment, force=True, create=True)
    if not result["success"]:
        raise GenerateError(f"nbgrader generate_assignment {assignment} failed:\n{result['log']}")
    metadata = course_metadata(assignment, practice)
    for path in sorted((dest_root / assignment).glob("*.ipynb")):
        _stamp(path, metadata)
    return dest_root / assignment


def solution_notebook(source_nb: Path, practice: Practice | None = None) -> nbformat.NotebookNode:
    """The instructor notebook without hidden tests, solution markers or outputs."""
    from nbgrader.preprocessors import ClearHiddenTests

    nb = nbformat.read(source_nb, as_version=4)
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = markers.solved(cell.source)
            # a quiz's first cell: the worked answers are for an example student's variant
            cell.source = cell.source.replace('my_id = ""', f'my_id = "{EXAMPLE_ID}"')
            cell.outputs = []
            cell.execution_count = None
    nb.metadata["course"] = course_metadata(source_nb.parent.name, practice)
    return nb


def solve(
    assignment: str,
    dest_root: Path = SOLUTIONS,
    timeout: int = 120,
    practice: Practice | None = None,
) -> Path:
    """Solved, executed notebooks (with the assignment's other files) in dest_root."""
    from nbclient import NotebookClient
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    src = SOURCE / assignment
    out = dest_root / assignment
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for path in src.iterdir():
        if path.is_file() and path.suffix != ".ipynb" and path.name not in KITS:
            shutil.copy(path, out / path.name)
    link_kits(out, SHARED, keep_copy=False)
    for source_nb in sorted(src.glob("*.ipynb")):
        nb = solution_notebook(source_nb, practice)
        nbformat.write(nb, out / source_nb.name)  # on disk while it runs: a quiz reads it
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(out)}},
            record_timing=False,  # no timestamps: regenerating changes only what changed
        )
        # coursekit.self_check() turned off (it would run every notebook), and a quiz shows
        # the variant of an example student id, which its worked answers then answer.
        env = dict(os.environ, COURSEKIT_NO_SELF_CHECK="1", COURSEKIT_STUDENT_ID=EXAMPLE_ID)
        try:
            client.execute(env=env)
        except Exception as exc:
            raise GenerateError(f"{source_nb.relative_to(SOURCE.parent)} failed:\n{exc}") from exc
        # One stream output per cell and stream, however the kernel happened to flush it.
        nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
        nbformat.write(nb, out / source_nb.name)
    return out


def generate(
    selected: list[str] | None = None, solutions: bool = True, practice: Practice | None = None
) -> None:
    place_coursekit(SOURCE.parent)  # source/<assignment>/coursekit.py, for nbgrader to copy
    for assignment in selected or assignments():
        made = release(assignment, practice=practice)
        print(f"{assignment}: student version -> {made.relative_to(SOURCE.parent)}")
        link_kits(NOTEBOOKS / assignment, SHARED, keep_copy=False)  # not a copy
        if solutions:
            solved = solve(assignment, practice=practice)
            print(f"{assignment}: solutions -> {solved.relative_to(SOURCE.parent)}")


def check_generated(
    selected: list[str] | None = None, practice: Practice | None = None
) -> list[str]:
    """Why notebooks/ or solutions/ is out of date with source/ (an empty list if not);
    ``practice`` as ``generate`` was given it."""
    problems: list[str] = []
    wanted = selected or assignments()
    place_coursekit(SOURCE.parent)  # what nbgrader's fresh release copies, and compared with
    for folder in (NOTEBOOKS, SOLUTIONS):
        extra = sorted(set(assignments(folder) if folder.exists() else []) - set(assignments()))
        problems += [f"{folder.name}/{name} has no source/{name}" for name in extra]
    for assignment in wanted:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = release(assignment, Path(tmp), practice)
            problems += _compare_folders(fresh, NOTEBOOKS / assignment)
        metadata = course_metadata(assignment, practice)
        for source_nb in sorted((SOURCE / assignment).glob("*.ipynb")):
            rel = f"solutions/{assignment}/{source_nb.name}"
            solved = SOLUTIONS / assignment / source_nb.name
            if not solved.exists():
                problems.append(f"{rel} is missing")
                continue
            nb = nbformat.read(solved, as_version=4)
            if nb.metadata.get("course", {}).get("source_digest") != metadata["source_digest"]:
                problems.append(f"{rel} was made from an older source/{assignment}")
            elif nb.metadata.get("course") != metadata:
                problems.append(f"{rel}: its practice round is not the quiz's current one")
            expected = [c.source for c in solution_notebook(source_nb).cells]
            if [c.source for c in nb.cells] != expected:
                problems.append(f"{rel}: cell sources differ from source/{assignment}")
    return problems


def _compare_folders(fresh: Path, committed: Path) -> list[str]:
    rel = f"notebooks/{committed.name}"
    if not committed.exists():
        return [f"{rel} is missing"]
    names = {p.name for p in fresh.iterdir()}
    have = {p.name for p in committed.iterdir() if p.name != ".ipynb_checkpoints"}
    problems = [f"{rel}/{n} is missing" for n in sorted(names - have)]
    problems += [f"{rel}/{n} is not in the release" for n in sorted(have - names)]
    for name in sorted(names & have):
        if (fresh / name).read_bytes() != (committed / name).read_bytes():
            problems.append(f"{rel}/{name} differs from a fresh nbgrader release")
    return problems
