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

Only what changed is rebuilt: ``generate`` compares each generated notebook's
``metadata.course`` with what the source would give (a hash and the practice round, no
nbgrader run) and skips an assignment whose notebooks all match; ``force=True``
(``generate --force``) rebuilds anyway. ``check_generated`` is the thorough check (a fresh
nbgrader release compared byte for byte).

Generating twice writes the same bytes, so a diff of ``notebooks/`` and ``solutions/`` is
the author's change and nothing else:

- The solutions run in a fixed environment (``kernel_env``), not the author's shell's:
  ``PYTHONHASHSEED=0`` (sets and dicts of strings iterate in one order), UTC, the C.UTF-8
  locale, one thread for numpy's and PyTorch's arithmetic (sums add up in one order), an
  IPython profile of its own (no startup files of the author's), no ``__pycache__``
  written beside the notebooks, a ``matplotlibrc`` whose ``svg.hashsalt`` fixes an SVG's
  ids, ``SOURCE_DATE_EPOCH`` for a saved figure's date, and PNGs saved by the inline
  backend without ``Software`` (matplotlib's version).
- nbclient records no timings; a cell's streams are coalesced (one output per stream,
  however the kernel flushed it).
- A cell tagged ``measured`` shows times measured when it runs (a training run's seconds, a
  benchmark's table or plot). Its output keeps every line, with each measured number
  (followed by ``s``, ``ms``, ``µs`` or ``times``) replaced by ``…``; a figure in it is
  replaced by a one-line note (``MEASURED_FIGURE``). Run the cell to see the times.
- What stays out of reach: an order that depends on where Python put objects in memory.
  A ``Value`` keeps its parents in a set (lesson 1), and a set of objects iterates in the
  order of their addresses, which no setting fixes; so a printed topological order, and
  the last bits of a sum that ``backward`` accumulates in that order, may change when a
  notebook that shows them is rebuilt (lessons 2 and 5b, problem sets 2 and 3).
  ``generate`` rebuilds only an assignment whose source (or coursekit) changed, so such a
  change comes with an edit of that assignment.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat

from .. import markers
from ..course import (
    KITS,
    NOTEBOOKS,
    ROOT,
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
GENERATOR_VERSION = "2"  # bump to force every generated notebook to count as stale
MEASURED_TAG = "measured"  # a cell whose output shows times measured as it runs
MEASURED_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[+-]?\d+)?(?=\s*(?:s|ms|µs|times)\b)")
MEASURED_FIGURE = "[a figure of times measured when this cell runs: run it to see yours]\n"
# What the solutions' kernel gets of this process's environment; the rest is fixed.
KERNEL_ENV_KEPT = ("PATH", "HOME", "USER", "LOGNAME", "TMPDIR", "SYSTEMROOT", "VIRTUAL_ENV")
MATPLOTLIBRC = "svg.hashsalt: autograd-from-scratch\n"  # SVG ids from a salt, not at random
KERNEL_CONFIG = """\
# Written by autograder/content/generate.py for the solutions' kernel.
c.InlineBackend.print_figure_kwargs = {
    "bbox_inches": "tight",
    "metadata": {"Software": None},  # no matplotlib version in a PNG
}
"""


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


def stale(
    assignment: str,
    practice: Practice | None = None,
    dest: Path = ROOT,
    solutions: bool = True,
) -> str | None:
    """Why ``assignment``'s generated notebooks under ``dest`` need rebuilding, or None.

    Cheap (no nbgrader, no kernel): every source notebook has its student version and, with
    ``solutions``, its solution, each with the ``metadata.course`` the source gives now, and
    the student folder has every other file of the source folder."""
    expected = course_metadata(assignment, practice)
    src = SOURCE / assignment
    tops = [dest / "notebooks"] + ([dest / "solutions"] if solutions else [])
    for top in tops:
        for source_nb in sorted(src.glob("*.ipynb")):
            made = top / assignment / source_nb.name
            if not made.is_file():
                return f"{top.name}/{assignment}/{source_nb.name} is missing"
            try:
                found = nbformat.read(made, as_version=4).metadata.get("course")
            except Exception:  # unreadable: rebuild it
                return f"{top.name}/{assignment}/{source_nb.name} cannot be read"
            if found != expected:
                return f"{top.name}/{assignment}/{source_nb.name} was made from another source"
    for path in sorted(src.iterdir()):
        if path.is_file() and not (dest / "notebooks" / assignment / path.name).exists():
            return f"notebooks/{assignment}/{path.name} is missing"
    return None


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


@contextmanager
def kernel_env() -> Iterator[dict[str, str]]:
    """The environment the solutions' kernel runs in: the same whoever generates, and
    nothing in it that varies from run to run (see the module's docstring)."""
    with tempfile.TemporaryDirectory(prefix="generate-kernel-") as tmp:
        profile = Path(tmp) / "ipython" / "profile_default"
        profile.mkdir(parents=True)
        (profile / "ipython_kernel_config.py").write_text(KERNEL_CONFIG)
        (Path(tmp) / "matplotlibrc").write_text(MATPLOTLIBRC)
        env = {k: os.environ[k] for k in KERNEL_ENV_KEPT if k in os.environ}
        env.update(
            PYTHONHASHSEED="0",
            PYTHONIOENCODING="utf-8",
            PYTHONDONTWRITEBYTECODE="1",  # no __pycache__ left in solutions/<assignment>/
            TZ="UTC",
            LANG="C.UTF-8",
            LC_ALL="C.UTF-8",
            SOURCE_DATE_EPOCH="0",
            IPYTHONDIR=str(Path(tmp) / "ipython"),
            MATPLOTLIBRC=str(Path(tmp) / "matplotlibrc"),
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYDEVD_DISABLE_FILE_VALIDATION="1",  # no debugger warning on stderr
            # coursekit.self_check() turned off (it would run every notebook), and a quiz
            # shows the variant of an example student id, which its worked answers answer.
            COURSEKIT_NO_SELF_CHECK="1",
            COURSEKIT_STUDENT_ID=EXAMPLE_ID,
        )
        yield env


def without_measurements(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Each cell tagged ``measured``: its measured numbers out of its printed lines, a
    figure replaced by a note (``MEASURED_FIGURE``)."""
    for cell in nb.cells:
        if cell.cell_type != "code" or MEASURED_TAG not in cell.metadata.get("tags", []):
            continue
        outputs = []
        for output in cell.outputs:
            data = output.get("data", {})
            if output.output_type == "stream":
                output.text = MEASURED_NUMBER.sub("…", output.text)
            elif any(mime.startswith("image/") for mime in data):
                output = nbformat.v4.new_output("stream", name="stdout", text=MEASURED_FIGURE)
            elif "text/plain" in data:
                data["text/plain"] = MEASURED_NUMBER.sub("…", data["text/plain"])
            outputs.append(output)
        cell.outputs = outputs
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
            store_widget_state=False,  # a widget's ids are random
        )
        with kernel_env() as env:
            try:
                client.execute(env=env)
            except Exception as exc:
                raise GenerateError(
                    f"{source_nb.relative_to(SOURCE.parent)} failed:\n{exc}"
                ) from exc
        # One stream output per cell and stream, however the kernel happened to flush it.
        nb, _ = CoalesceStreamsPreprocessor().preprocess(nb, {})
        nbformat.write(without_measurements(nb), out / source_nb.name)
    return out


def generate(
    selected: list[str] | None = None,
    solutions: bool = True,
    practice: Practice | None = None,
    *,
    force: bool = False,
    dest: Path = ROOT,
) -> list[str]:
    """Rebuild ``dest/notebooks/<a>/`` (and, with ``solutions``, ``dest/solutions/<a>/``) of
    each assignment ``a`` in ``selected`` (default: all) that is ``stale`` (every one with
    ``force``); print one line per assignment; return the ones rebuilt."""
    place_coursekit(SOURCE.parent)  # source/<assignment>/coursekit.py, for nbgrader to copy
    rebuilt = []
    for assignment in selected or assignments():
        why = "forced" if force else stale(assignment, practice, dest, solutions)
        if why is None:
            print(f"{assignment}: up to date")
            continue
        start = time.perf_counter()
        release(assignment, dest / "notebooks", practice=practice)
        link_kits(dest / "notebooks" / assignment, SHARED, keep_copy=False)  # not a copy
        made = ["notebooks"]
        if solutions:
            solve(assignment, dest / "solutions", practice=practice)
            made.append("solutions")
        took = time.perf_counter() - start
        print(f"{assignment}: rebuilt {' and '.join(made)} in {took:.0f} s ({why})")
        rebuilt.append(assignment)
    return rebuilt


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
