"""Benchmark: what the bubblewrap sandbox costs per notebook, measured in one run.

    .venv/bin/python benchmarks/sandbox_overhead.py             # 3 rounds
    .venv/bin/python benchmarks/sandbox_overhead.py --rounds 6  # steadier numbers

Each of the course's solutions (solutions/<assignment>/*.ipynb, outputs cleared) is run
with nbclient from a fresh kernel to its shutdown, as the grader runs it, once with
jupyter_client's kernel manager ("none") and once with ``SandboxedKernelManager``
("bubblewrap"), interleaved (the order alternates by round) so both see the same machine
load. Same kernel arguments and environment for both, so only the sandbox differs. The
cells run are those grading runs (``GuardedExecute``): the cell tagged ``engine`` runs
the course's engine in its place (``verdicts.engine_code``), not ``engine("mine", ...)``,
which reads the earlier lessons' notebooks from the folders beside this one (the sandbox
shows the kernel its own folder only), and cells tagged demo or practice are left out
(a quiz's practice round needs its notebook beside the kernel). Also
timed: starting a kernel, getting its first reply and shutting it down (an empty
notebook). Printed per notebook and in total, with the ratio (target <= 1.15x). The machine
may be shared: the load average is printed; only ratios from the same run mean anything.
Not a test.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

import common
import nbformat
from jupyter_client.manager import AsyncKernelManager

from autograder.course import SOLUTIONS
from autograder.kernel.bwrap import matplotlib_cache
from autograder.kernel.sandbox import BUBBLEWRAP, SandboxedKernelManager, sandbox_status
from autograder.preprocessors.execute import ENGINE_TAG, GuardedExecute
from autograder.verdicts.api import engine_code

MANAGERS = {"none": AsyncKernelManager, "bubblewrap": SandboxedKernelManager}
ARGS = ["--HistoryManager.hist_file=:memory:"]
SKIP_TAGS = GuardedExecute().skip_tags  # cells grading does not run: demo, practice


def cleared(path: Path) -> nbformat.NotebookNode:
    """The solution's code cells that grading runs, outputs cleared, as GuardedExecute
    runs them: the course's engine in place of the cell tagged ``engine``
    (``engine("mine", ...)`` needs the earlier lessons' folders, which neither grading nor
    the sandbox has), and no demonstration or practice cell."""
    nb = nbformat.read(path, as_version=4)
    engine = engine_code(path.parent.name)
    kept = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        md, tags = cell.metadata.get("nbgrader", {}), cell.metadata.get("tags", [])
        graded = md.get("solution") or md.get("grade")
        if not graded and any(t in tags for t in SKIP_TAGS):
            continue
        if engine and not graded and ENGINE_TAG in tags:
            cell.source = engine
        cell.outputs, cell.execution_count = [], None
        kept.append(cell)
    nb.cells = kept
    return nb


def run_once(nb, folder: Path, manager: type, timeout: int) -> float:
    from nbclient import NotebookClient

    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        kernel_manager_class=manager,
        extra_arguments=list(ARGS),
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(folder)}},
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    errors = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]
    if errors:
        raise SystemExit(f"{manager.__name__}: {errors[0].ename}: {errors[0].evalue}")
    return seconds


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=int, default=120)
    args = parser.parse_args()

    status = sandbox_status()
    if status.level != BUBBLEWRAP:
        raise SystemExit(f"no sandbox on this machine: {status.reason}")
    os.environ["COURSEKIT_NO_SELF_CHECK"] = "1"  # as in the sandbox (and in grading)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # as grade's workers set them
    matplotlib_cache()  # made once per machine and environment, not per run

    with common.scratch("sandbox-bench-") as work:
        notebooks, times = measure(work, args.rounds, args.timeout)
    report(notebooks, times, args.rounds)


def measure(work: Path, rounds: int, timeout: int):
    """The solutions' (name, path, folder) and their seconds by (label, manager)."""
    notebooks = []
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        folder = work / path.parent.name
        shutil.copytree(path.parent, folder, ignore=shutil.ignore_patterns("*.ipynb"))
        notebooks.append((path.parent.name, path, folder))
    empty = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("pass")])
    times: dict[tuple[str, str], list[float]] = {}
    with common.quiet_stderr():  # the kernels' start-up chatter
        for name in MANAGERS:  # warm-up: imports, disk cache
            run_once(nbformat.from_dict(empty), work, MANAGERS[name], timeout)
        for r in range(rounds):
            for label, path, folder in [("(kernel start)", None, work), *notebooks]:
                for name in common.alternate(list(MANAGERS), r):
                    nb = nbformat.from_dict(empty) if path is None else cleared(path)
                    seconds = run_once(nb, folder, MANAGERS[name], timeout)
                    times.setdefault((label, name), []).append(seconds)
    return notebooks, times


def report(notebooks: list, times: dict, rounds: int) -> None:
    print(
        f"{len(notebooks)} notebooks x {rounds} rounds, interleaved; load average "
        f"{common.load_average(3, 2)}; median seconds per run"
    )
    print(f"{'':24} {'none':>8} {'bubblewrap':>11} {'ratio':>7}")
    totals = {name: 0.0 for name in MANAGERS}
    for label in ["(kernel start)", *(n for n, _, _ in notebooks)]:
        med = {name: statistics.median(times[(label, name)]) for name in MANAGERS}
        if label != "(kernel start)":
            for name in MANAGERS:
                totals[name] += med[name]
        print(
            f"{label:24} {med['none']:8.2f} {med['bubblewrap']:11.2f} "
            f"{med['bubblewrap'] / med['none']:6.2f}x"
        )
    n = len(notebooks)
    ratio = totals["bubblewrap"] / totals["none"]
    print(
        f"{'per notebook (mean)':24} {totals['none'] / n:8.2f} "
        f"{totals['bubblewrap'] / n:11.2f} {ratio:6.2f}x   (target <= 1.15x)"
    )


if __name__ == "__main__":
    main()
