"""Benchmark: the class report (`python -m autograder report`) on a class of 300 against
today's way to the same numbers (`python -m autograder export`), measured in one run.

    .venv/bin/python benchmarks/class_report.py              # 300 students
    .venv/bin/python benchmarks/class_report.py --n 100      # fewer, quicker
    .venv/bin/python benchmarks/class_report.py --keep /tmp/class300   # keep the class

A class of N students x every course assignment is made up straight into nbgrader's
gradebook and autograded/ (tests/synthetic_class.py: no grading; each submission's
notebook is the executed solution with a verdict in every test cell, its record has
a grading time; scores and failing messages, with the slips' hints, drawn from a seeded
mix; about 4 % missing and 6 % late). Not timed.

Then, on that class, each command runs as an instructor runs it (a new process, imports
included), `--rounds` times in alternating order:

  (a) export: exports/grades.csv, cells.csv, items.csv (nbgrader's ORM, submission by
      submission);
  (b) report: reports/index.html (a few gradebook queries, every autograded notebook
      read once, three plots, and similarity where report/similarity.py is there).

Printed: both times, (b)/(a), and whether (b) is under the target, 60 s for 300
students. The machine may be shared: the load average is printed, and only ratios
measured in the same run mean anything. Not a test.

Similarity (report/similarity.py, copydetect) is part of `report` once it is merged; its
cost grows with the pairs of submissions it compares and is measured by its own
benchmark. Here `report` runs with whatever the tree has: the number printed says which.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import common

common.on_path(common.ROOT, common.TESTS)

from synthetic_class import make_class  # noqa: E402


def run(command: list[str], course: Path) -> float:
    """Seconds one `python -m autograder ...` takes on the class (it must succeed)."""
    cmd = [sys.executable, "-m", "autograder", *command, "--course", str(course)]
    seconds, proc = common.run_timed(cmd, common.ROOT)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return seconds


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, default=300, help="students (default 300)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each (default 1)")
    parser.add_argument("--keep", metavar="DIR", help="make the class here and keep it")
    args = parser.parse_args()

    if args.keep and Path(args.keep).exists():
        shutil.rmtree(args.keep)
    with common.scratch("class-report-") as work:
        course = Path(args.keep).resolve() if args.keep else work / "class"
        start = time.perf_counter()
        made = make_class(course, args.n)
        print(
            f"made {len(made.students)} students x {len(made.assignments)} assignments: "
            f"{len(made.submitted)} submissions ({len(made.late)} late), autograded/ "
            f"{size(course / 'autograded') / 2**20:.0f} MiB, in {time.perf_counter() - start:.0f} s"
        )
        print(f"load average before: {common.load_average(3)}")
        times: dict[str, list[float]] = {"export": [], "report": []}
        for k in range(args.rounds):
            for name in common.alternate(["export", "report"], k):
                times[name].append(run([name], course))
                print(f"  round {k + 1}: {name} {times[name][-1]:.1f} s", flush=True)
        export, report = min(times["export"]), min(times["report"])
        print(f"load average after: {common.load_average(3)}")
        try:
            import autograder.report.similarity  # noqa: F401

            similarity = "with similarity"
        except ImportError:
            similarity = "without similarity (report/similarity.py not in this tree)"
        print(
            f"\n{args.n} students: export {export:.1f} s, report {report:.1f} s "
            f"({similarity}); report / export = {report / export:.2f}x; "
            f"target: report under 60 s for 300 students: "
            f"{'met' if report < 60 * max(1, args.n / 300) else 'NOT met'}"
        )
        if args.keep:
            print(f"the page: {course / 'reports' / 'index.html'}")


if __name__ == "__main__":
    main()
