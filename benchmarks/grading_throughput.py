"""Benchmark: `python -m autograder grade` against serial `nbgrader autograde`, and against
the floor of running the same notebooks with nbclient, measured in one run.

    .venv/bin/python benchmarks/grading_throughput.py           # 6 submissions per assignment
    .venv/bin/python benchmarks/grading_throughput.py --n 12    # more, for steadier numbers

For every assignment with generated solutions/ and notebooks/, N synthetic submissions
(the solution, a typical bug, half done, blank, in turn) are graded four ways, each from
scratch (fresh gradebook, nothing autograded yet), in a private copy of the course:

  (a) serial:  `nbgrader autograde <assignment>` for each assignment, one after the other
               (its `generate_assignment` is done beforehand and not timed);
  (b) ours:    `python -m autograder grade --jobs <cores>` (everything included: reading
               the gradebook, generate_assignment into it, workers starting, merging);
  (c) ours, one worker: `python -m autograder grade --jobs 1`;
  (d) floor:   for each notebook as the grader runs it (taken from (a)'s autograded/,
               without the demonstrations grading skips, test cells with their visible
               checks only: hidden tests decide outside the kernel), start a kernel with
               the same options and run it with nbclient, one after the other; Python's
               start-up and imports are not counted.

Printed: throughput (a)/(b) (target >= 1.6 on 2 cores), the per-notebook cost
(c)/N against (d)/N (target <= 1.3), and (c)'s time per submission of each assignment,
and each one's against 01_value's (target <= 2: a problem set grades in about the time
a lesson does). The machine may be shared: the load average is printed, and only ratios
measured in the same run mean anything. Not a test.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

import common
import nbformat

from autograder.demo import demo_assignments


def timed(cmd: list[str], cwd: Path) -> float:
    seconds, proc = common.run_timed(cmd, cwd)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-3000:], sep="\n")
        raise SystemExit(f"{' '.join(cmd[:4])} failed ({proc.returncode})")
    return seconds


def floor(course: Path, graded: list[Path], extra_arguments: list[str], timeout: int) -> float:
    """Seconds to run each notebook in a fresh kernel with nbclient, one after the other."""
    total = 0.0
    with common.quiet_stderr():  # the kernels' start-up warnings
        for path in graded:
            total += run_notebook(course, path, extra_arguments, timeout)
    return total


def run_notebook(course: Path, path: Path, extra_arguments: list[str], timeout: int) -> float:
    from nbclient import NotebookClient

    from autograder.markers import visible
    from autograder.verdicts.api import is_test_cell

    nb = nbformat.read(path, as_version=4)
    nb.cells = [cell for cell in nb.cells if not is_demo(cell)]  # grading skips them too
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if is_test_cell(cell):  # the kernel runs the visible checks; verdicts are ours
                cell.source = visible(cell.source)
    run_dir = tempfile.mkdtemp(dir=course)
    for extra in path.parent.iterdir():
        if extra.suffix != ".ipynb" and extra.is_file():
            shutil.copy(extra, run_dir)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        extra_arguments=extra_arguments,
        resources={"metadata": {"path": run_dir}},
    )
    start = time.perf_counter()
    client.execute()
    return time.perf_counter() - start


def is_demo(cell) -> bool:
    """A demonstration, which grading does not run (GuardedExecute.skip_tags)."""
    md = cell.metadata.get("nbgrader", {})
    return (
        "demo" in cell.metadata.get("tags", []) and not md.get("solution") and not md.get("grade")
    )


def per_lesson(course: Path) -> None:
    """Seconds per submission of each assignment with one worker (from the records), and
    each one's against 01_value's (target <= 2 for every lesson and problem set:
    demonstrations are not run while grading)."""
    import json
    from statistics import mean

    seconds: dict[str, list[float]] = {}
    for record in course.glob("autograded/*/*/.autograder.json"):
        rec = json.loads(record.read_text())
        seconds.setdefault(rec["assignment"], []).append(rec["seconds"])
    means = {a: mean(v) for a, v in sorted(seconds.items())}
    print("per submission, one worker: " + ", ".join(f"{a} {s:.1f} s" for a, s in means.items()))
    base = means.get("01_value")
    if base:
        ratios = ", ".join(f"{a} {s / base:.2f}x" for a, s in means.items() if a != "01_value")
        print(f"against 01_value per submission (target <= 2 each): {ratios}")


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, default=6, help="submissions per assignment")
    common.add_jobs(parser)
    common.add_keep(parser)
    args = parser.parse_args()
    assignments = demo_assignments()
    if not assignments:
        raise SystemExit("no assignment has solutions/ and notebooks/: run make generate")
    with common.scratch("grading-bench-", keep=args.keep) as work:
        print(
            f"assignments: {', '.join(assignments)}; {args.n} submissions each; "
            f"{args.jobs} cores; load average {common.load_average()}; scratch {work}"
        )
        course = work / "course"
        common.copy_course(course)
        n = common.write_class(course, assignments, args.n, common.in_turn)
        py = sys.executable
        for a in assignments:  # (a) needs the cells in its gradebook first
            timed([py, "-m", "nbgrader", "generate_assignment", a, "--force"], course)
        serial = sum(
            timed([py, "-m", "nbgrader", "autograde", a, "--force"], course) for a in assignments
        )
        graded = sorted((course / "autograded").glob("*/*/*.ipynb"))
        print(f"(a) serial nbgrader autograde: {serial:7.1f} s for {n} notebooks")

        results = {}
        for jobs in (args.jobs, 1):
            ours = work / f"ours-{jobs}"
            shutil.copytree(course / "submitted", ours / "submitted")
            results[jobs] = timed(
                [py, "-m", "autograder", "grade", "--jobs", str(jobs), "-q", "--course", str(ours)],
                course,
            )
            label = "(b)" if jobs == args.jobs else "(c)"
            print(f"{label} autograder grade --jobs {jobs}:  {results[jobs]:7.1f} s")

        from traitlets.config.loader import PyFileConfigLoader

        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
        bottom = floor(
            course, graded, list(config.Execute.extra_arguments), int(config.Execute.timeout)
        )
        print(f"(d) floor, nbclient one by one:  {bottom:7.1f} s for {len(graded)} notebooks")

        print(
            f"\nthroughput, serial nbgrader / ours with {args.jobs} workers: "
            f"{serial / results[args.jobs]:.2f}x   (target >= 1.6 on 2 cores)"
        )
        per_ours, per_floor = results[1] / n, bottom / len(graded)
        print(
            f"per notebook, ours with 1 worker / floor: {per_ours:.2f} s / {per_floor:.2f} s "
            f"= {per_ours / per_floor:.2f}x   (target <= 1.3)"
        )
        per_lesson(work / "ours-1")
        print(f"load average at the end: {common.load_average()}")


if __name__ == "__main__":
    main()
