"""``generate`` runs every hidden test written in a notebook against the course itself.

For each test cell whose hidden region is code (region.py), the instructor notebook's
cells run in order in a child process (the course's solution; the cell tagged
``engine`` replaced by the course's engine, as grading does; demonstrations skipped),
and at that test cell its hidden test is decided against what ran, through the probe,
as grading decides it. Two things must hold, or ``generate`` refuses:

- the course's solution passes its own hidden test (a test that uses an operation the
  reference engine lacks, a wrong expected value, an error in the test: all show here,
  not at grading);
- the exercise's stub fails it (its solution cells as nbgrader releases them, run in a
  copy of the process forked just before them): a test that passes a blank exercise
  cannot fail.

Each problem is one line naming the notebook, the cell and what to edit.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import sys
from pathlib import Path

from .. import markers
from . import api, exercises, region

ENGINE_TAG = "engine"
SKIP_TAGS = {"demo", "practice"}
TIMEOUT = 600  # seconds for one notebook


def stubbed(source: str) -> str:
    """A solution cell as nbgrader releases it: each solution region replaced by
    ``raise NotImplementedError()`` at the region's indentation."""
    out = []
    for line in markers.read(source):
        if line.region != markers.SOLUTION:
            out.append(line.text)
        elif line.marker and markers.BEGIN_SOLUTION in line.text:
            indent = line.text[: len(line.text) - len(line.text.lstrip())]
            out.append(f"{indent}raise NotImplementedError()")
    return "\n".join(out)


def _code(cell: dict) -> str:
    source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    if exercises.is_test_cell(cell):
        source = markers.visible(source)
    lines = source.splitlines()
    return "\n".join(ln for ln in lines if not ln.lstrip().startswith(("%", "!")))


def _skipped(cell: dict) -> bool:
    md = cell.get("metadata", {})
    nbg = md.get("nbgrader", {})
    return (
        bool(SKIP_TAGS & set(md.get("tags", [])))
        and not nbg.get("solution")
        and not (nbg.get("grade"))
    )


def _run(code: str, ns: dict) -> None:
    """Run a cell's code; its errors are the visible checks' business, not ours."""
    with contextlib.suppress(Exception):
        exec(compile(code, "<cell>", "exec"), ns)


def _decide(assignment: str, course, gid: str, ns: dict) -> api.Verdict:
    kernel = api.Kernel(api.local_ask(ns), api.cell_seed(1, gid), 60)
    result, _ = region.decide(assignment, gid, kernel, course)
    return result


def _stub_fails(assignment: str, course, ex, cells, index: int, ns: dict) -> str | None:
    """In a forked copy: the exercise's solution cells stubbed, the cells up to its test
    run, its hidden test decided. Why it is wrong (None when the stub fails)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        text = ""
        try:
            for k in range(index, ex.index):
                cell = cells[k]
                if cell.get("cell_type") != "code" or _skipped(cell):
                    continue
                source = "".join(cell["source"])
                _run(_code(cell) if k not in ex.solution_cells else stubbed(source), ns)
            verdict = _decide(assignment, course, ex.grade_id, ns)
            if verdict.passed:
                text = "its hidden test passes the exercise's stub: it cannot fail"
        except BaseException as exc:
            text = f"the stub could not be checked ({type(exc).__name__}: {exc})"
        os.write(write_end, text.encode()[:2000])
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    return text or None


def _notebook_problems(assignment: str, path: Path, engine: str | None) -> list[str]:
    nb = json.loads(path.read_text(encoding="utf-8"))
    course = exercises.read(nb, str(path))
    tests = {ex.index: ex for ex in course.exercises.values() if not markers.is_pointer(ex.hidden)}
    if not tests:
        return []
    rel = f"source/{assignment}/{path.name}"
    cells = nb["cells"]
    ns: dict = {"__name__": "__main__"}
    found = []
    first_solution = {ex.solution_cells[0]: ex for ex in tests.values() if ex.solution_cells}
    for index, cell in enumerate(cells):
        if index in first_solution:
            why = _stub_fails(assignment, course, first_solution[index], cells, index, ns)
            if why:
                ex = first_solution[index]
                found.append(f"{rel}, cell {ex.index + 1} ({ex.grade_id}): {why}")
        if cell.get("cell_type") != "code" or _skipped(cell):
            continue
        tags = cell.get("metadata", {}).get("tags", [])
        code = engine if engine and ENGINE_TAG in tags else markers.solved(_code(cell))
        _run(code, ns)
        if index in tests:
            ex = tests[index]
            verdict = _decide(assignment, course, ex.grade_id, ns)
            if not verdict.passed:
                first = verdict.message.splitlines()[0] if verdict.message else "failed"
                found.append(
                    f"{rel}, cell {index + 1} ({ex.grade_id}): the course's solution fails "
                    f"its hidden test: {first} (edit the cell's hidden region, its solution, "
                    "or source/.reference/refgrad)"
                )
    return found


def problems(assignment: str, source: Path) -> list[str]:
    """Every problem of the assignment's hidden tests written in its notebooks, found by
    running them in a child process (so nothing of the course's code stays here)."""
    paths = sorted((source / assignment).glob("*.ipynb"))
    engine = api.engine_code(assignment)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the notebook's folder first for coursekit, output nowhere
        os.close(read_end)
        found: list[str] = []
        signal.alarm(TIMEOUT)
        try:
            sys.path.insert(0, str(source / assignment))
            os.chdir(source / assignment)
            os.environ.update(COURSEKIT_NO_SELF_CHECK="1", MPLBACKEND="Agg")
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                for path in paths:
                    found += _notebook_problems(assignment, path, engine)
        except BaseException as exc:
            found.append(f"source/{assignment}: its hidden tests could not be run ({exc})")
        os.write(write_end, json.dumps(found).encode())
        os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    try:
        return list(json.loads(data.decode()))
    except ValueError:
        return [f"source/{assignment}: checking its hidden tests stopped without an answer"]
