"""Benchmark: where one notebook's grading time goes, split into its pieces.

    .venv/bin/python benchmarks/grading_profile.py                 # every assignment, 4 kinds
    .venv/bin/python benchmarks/grading_profile.py --assignments 01_value --rounds 3

For each assignment, the first four submissions of class_scale.py's class
(``common.write_class`` with ``common.half_honest``) are graded one after the
other in this process, as a grading worker grades them (``worker.task.Worker.run``:
the notebooks made gradable, nbgrader's ``Autograde`` with ``GuardedExecute``, in the
sandbox and under the course's limits), and the main process's share is timed too (the
merge into the gradebook and the install of ``autograded/``: ``ClassGrading.finish``).
Each piece is timed by wrapping the method that does it:

  kernel start     the kernel manager's start to the kernel's first reply (its Python,
                   ipykernel and the sandbox around it)
  sandbox start    of which, bubblewrap itself: measured apart, as the median difference
                   between starting ``python -c pass`` in the kernel's sandbox and without
  probe load       the probe loaded into the kernel before the first cell
  imports          cells of the notebook that only import (the course's helpers, numpy)
  cells            every other cell the kernel runs (given code, the student's, visible
                   checks)
  hidden checks    the verdicts: the hidden tests, here, and their requests to the probe
  kernel stop      shutting the kernel down, and the clean-up after the notebook
  nbgrader         the rest of ``Autograde``: reading, the gradebook, the other
                   preprocessors, writing the autograded notebook
  worker other     the rest of the worker's task: the files, the notebooks made gradable
  merge            the main process: the scores into the gradebook, autograded/ installed

Printed: the median seconds per notebook of each piece and its share, per assignment and
for all. Not a test: the machine may be shared (the load average is printed).
"""

from __future__ import annotations

import ast
import functools
import io
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import common

PIECES = [
    "kernel start",
    "probe load",
    "imports",
    "cells",
    "hidden checks",
    "kernel stop",
    "nbgrader",
    "worker other",
    "merge",
]

TIMES: dict[str, float] = defaultdict(float)


def timed(cls, name: str, piece: str | None = None, *, split=None):
    """Wrap ``cls.name`` so that its time adds to TIMES[piece] (or TIMES[split(args)])."""
    original = getattr(cls, name)

    if _is_async(original):

        @functools.wraps(original)
        async def wrapper(*args, **kw):
            start = time.perf_counter()
            try:
                return await original(*args, **kw)
            finally:
                TIMES[piece or split(args)] += time.perf_counter() - start

    else:

        @functools.wraps(original)
        def wrapper(*args, **kw):
            start = time.perf_counter()
            try:
                return original(*args, **kw)
            finally:
                TIMES[piece or split(args)] += time.perf_counter() - start

    setattr(cls, name, wrapper)


def _is_async(fn) -> bool:
    import inspect

    return inspect.iscoroutinefunction(fn)


def only_imports(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    return bool(tree.body) and all(isinstance(n, ast.Import | ast.ImportFrom) for n in tree.body)


def cell_piece(args) -> str:
    cell = args[1]
    return "imports" if only_imports(cell.source) else "cells"


def instrument() -> None:
    from nbclient import NotebookClient
    from nbgrader.converters import Autograde

    from autograder.preprocessors.execute import GuardedExecute

    # nbclient's synchronous names are bound to its coroutines when the class is made
    timed(NotebookClient, "start_new_kernel", "kernel start")
    timed(NotebookClient, "start_new_kernel_client", "kernel start")
    timed(NotebookClient, "_cleanup_kernel", "kernel stop")
    timed(GuardedExecute, "_take_spare", "kernel start")  # a warm kernel (kernel/warm.py)
    timed(GuardedExecute, "_start_spare", "kernel start")
    timed(GuardedExecute, "_load_probe", "probe load")
    timed(GuardedExecute, "_execute", split=cell_piece)
    timed(GuardedExecute, "_run_course_engine", "cells-engine")  # counted in cells below
    timed(GuardedExecute, "_decide", "hidden checks")
    timed(GuardedExecute, "_ask_probe", "probe requests")
    original = GuardedExecute._ask_probe

    def counted(self, *args, **kw):
        TIMES["requests"] += 1
        return original(self, *args, **kw)

    GuardedExecute._ask_probe = counted
    timed(GuardedExecute, "preprocess", "execute")
    timed(Autograde, "start", "autograde")


def sandbox_start(rounds: int) -> float:
    """Median seconds bubblewrap adds to starting this Python (``-c pass``)."""
    from autograder.kernel import bwrap
    from autograder.kernel.sandbox import python_in_sandbox

    sandboxed = python_in_sandbox(bwrap.bwrap_program())
    plain = [sys.executable, "-c", "pass"]
    diffs = []
    for _ in range(rounds):
        pair = []
        for cmd, env in ((sandboxed, bwrap.bwrap_env({})), (plain, None)):
            start = time.perf_counter()
            subprocess.run(cmd, env=env, check=True, capture_output=True)
            pair.append(time.perf_counter() - start)
        diffs.append(pair[0] - pair[1])
    return statistics.median(diffs)


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--assignments", nargs="*", help="default: every one with solutions")
    parser.add_argument("--rounds", type=int, default=1, help="times each kind is graded")
    args = parser.parse_args()

    os.environ.update(common.venv_env())
    from autograder.demo import demo_assignments

    assignments = args.assignments or demo_assignments()
    with common.scratch("grading-profile-") as work:
        per, sandbox = profile(work, assignments, args.rounds)
    report(per, sandbox)


def profile(work: Path, assignments: list[str], rounds: int):
    """Each notebook's pieces per assignment, and bubblewrap's own start, in ``work``."""
    course_root = work / "course"
    common.write_class(course_root, assignments, 4, common.half_honest, worked_quizzes=True)
    instrument()
    from autograder.course import open_course
    from autograder.grade.dispatch import Task
    from autograder.grade.display import Display
    from autograder.grade.run import ClassGrading
    from autograder.intake.discovery import discover, folder_digest
    from autograder.kernel import limits as oslimits
    from autograder.kernel import warm
    from autograder.kernel.sandbox import check_for_grading
    from autograder.messages import write_files
    from autograder.worker import task as worker_task
    from autograder.worker.plugins import unpack

    course = open_course(course_root)
    limits = oslimits.Limits.for_course(course.config)
    limits = limits.replace(sandbox=check_for_grading(limits.sandbox, sys.stderr))
    display = Display(0, io.StringIO(), enabled=False)
    grading = ClassGrading(course, limits, work / "run", display)
    (work / "run").mkdir()
    worker = worker_task.Worker()
    worker_task.warm_up()
    subs, _ = discover(course, assignments, None)
    subs.sort(key=lambda s: (s.assignment, s.student))  # as grade dispatches them
    per: dict[str, list[dict[str, float]]] = defaultdict(list)
    sandbox = sandbox_start(max(5, 3 * rounds))
    with common.quiet_stderr():  # kernels' start-up chatter
        materials = {}
        for sub in subs:
            material = grading.material_for(sub.assignment)
            if sub.assignment not in materials:
                folder = work / "material" / sub.assignment
                unpack(material.archive, folder, material.digest)
                materials[sub.assignment] = folder
        for _r in range(rounds):
            for i, sub in enumerate(subs):
                task = Task(sub, folder_digest(sub.folder), "profile", 1)
                job = grading.job(task, i)
                scratch = Path(tempfile.mkdtemp(dir=work))
                TIMES.clear()
                start = time.perf_counter()
                write_files(job.files, scratch / "submitted")
                spare = oslimits.own_processes()
                result = worker.run(
                    job,
                    materials[sub.assignment],
                    scratch,
                    {},
                    secrets.token_hex(8),
                    lambda: oslimits.kill_task_processes(spare, keep=warm.exempt()),  # noqa: B023
                )
                worker_total = time.perf_counter() - start
                result.seconds = worker_total
                result.runs = 1
                start = time.perf_counter()
                grading.finished.clear()
                grading.finish(task, result, None)
                merge = time.perf_counter() - start
                shutil.rmtree(scratch, ignore_errors=True)
                n = max(1, len(result.notebooks))
                row = {
                    "kernel start": TIMES["kernel start"],
                    "probe load": TIMES["probe load"],
                    "imports": TIMES["imports"],
                    "cells": TIMES["cells"] - 0.0,
                    "hidden checks": TIMES["hidden checks"],
                    "kernel stop": TIMES["kernel stop"],
                }
                inside = sum(row.values()) - row["kernel stop"]
                row["kernel stop"] += TIMES["execute"] - inside - row["kernel stop"]
                row["nbgrader"] = TIMES["autograde"] - TIMES["execute"]
                row["worker other"] = worker_total - TIMES["autograde"]
                row["merge"] = merge
                row["probe requests"] = TIMES["probe requests"]
                row["requests"] = TIMES["requests"]
                per[sub.assignment].append({k: v / n for k, v in row.items()})
    return per, sandbox


def report(per: dict[str, list[dict[str, float]]], sandbox: float) -> None:
    print(f"load average {common.load_average(3, 2)}; seconds per notebook")
    cols = ["kernel start", "probe load", "imports", "cells", "hidden checks"]
    cols += ["kernel stop", "nbgrader", "worker other", "merge"]
    extra = ["probe requests", "requests"]
    print(
        f"{'assignment':22}"
        + "".join(f"{c[:12]:>13}" for c in cols)
        + f"{'total':>9}"
        + "".join(f"{c[:12]:>13}" for c in extra)
    )
    everything = [row for rows in per.values() for row in rows]
    for name, rows in [*sorted(per.items()), ("all (mean)", everything)]:
        means = {c: statistics.fmean(r[c] for r in rows) for c in cols}
        total = sum(means.values())
        more = "".join(f"{statistics.fmean(r[c] for r in rows):13.2f}" for c in extra)
        print(f"{name:22}" + "".join(f"{means[c]:13.3f}" for c in cols) + f"{total:9.2f}" + more)
    means = {c: statistics.fmean(r[c] for r in everything) for c in cols}
    total = sum(means.values())
    print("\nshare of a notebook's time (all assignments):")
    for c in cols:
        print(f"  {c:16} {means[c]:6.3f} s  {100 * means[c] / total:5.1f} %")
    print(
        f"  of kernel start, bubblewrap itself: {sandbox:.3f} s "
        f"({100 * sandbox / total:.1f} % of the total)"
    )
    print(f"  total            {total:6.3f} s")


if __name__ == "__main__":
    main()
