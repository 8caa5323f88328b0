"""Benchmark: grading on submit (`python -m autograder watch`) against `grade` on the same
class, measured in one run.

    .venv/bin/python benchmarks/grading_on_submit.py            # 50 submissions
    .venv/bin/python benchmarks/grading_on_submit.py --n 20     # fewer, quicker
    .venv/bin/python benchmarks/grading_on_submit.py --early all  # the usual pages

N submissions of lesson 01_value (the solved instructor notebook; every fifth with a bug
in one line of add, mul or pow) arrive in a burst and are graded two ways, each in a
fresh scratch copy of the course (tests/helpers.py's ScratchCourse; generate_assignment
done beforehand and not timed), both with --jobs workers, after a warm-up grade of one
submission in a third copy (what a process does once, such as finding its CPU groups, is
not compared):

  (a) grade: `grade(["01_value"])` on the N placed in submitted/<student>/01_value/;
  (b) watch: the N in the course's inbox, named as nbgrader's exchange names them
      (`s00+01_value+<timestamp>`, settled), taken by ONE `Watcher.cycle()`: each one
      checked and archived, staged into submitted/, the same grade run, then each one's
      feedback pages, which (a) does not make: at --early's level (c.Watch.early_default,
      the course's default `hidden`: the early page from the graded notebook; `all`: the
      usual page, nbgrader's generate_feedback), with the history.

Printed: both times and (b)/(a) (target <= 1.1x), (b)'s parts (taking and staging,
grading, feedback pages) and whether both gradebooks hold the same scores. The machine may
be shared: the load average is printed, and only ratios measured in the same run mean
anything. Not a test.
"""

from __future__ import annotations

import io
import os
import time
from datetime import UTC, datetime

import common

common.on_path(common.ROOT, common.REFERENCE, common.TESTS)

import nbformat  # noqa: E402
from helpers import SOURCE, ScratchCourse, gradebook_scores, mutate, notebook_path, read  # noqa: E402

from autograder.watch import inbound  # noqa: E402
from autograder.watch.service import Watcher  # noqa: E402
from autograder.watch.settings import LEVELS, Watch  # noqa: E402

A = "01_value"
BUGS = [  # one solution line each, as tests/test_watch.py plants them
    ("self.grad += 1.0 * out.grad", "self.grad = 1.0 * out.grad"),
    ("other.grad += self.data * out.grad", "other.grad += other.data * out.grad"),
    ("self.grad += n * self.data ** (n - 1) * out.grad", "self.grad += self.data**n * out.grad"),
]


def submissions(n: int) -> dict[str, nbformat.NotebookNode]:
    solution = read(SOURCE, A)
    buggy = [mutate(solution, old, new) for old, new in BUGS]
    return {f"s{i:02d}": buggy[(i // 5) % 3] if i % 5 == 4 else solution for i in range(n)}


def into_inbox(course: ScratchCourse, work: dict[str, nbformat.NotebookNode]) -> None:
    """Each submission as a folder of the inbox, its files a minute old (settled)."""
    name = notebook_path(SOURCE, A).name
    old = time.time() - 60
    for i, (student, nb) in enumerate(work.items()):
        when = datetime(2026, 11, 26, 10, 0, i % 60, tzinfo=UTC)
        folder = course.path / "inbox" / f"{student}+{A}+{when.strftime(inbound.STAMP_FORMAT)}"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)
        for path in (folder / name, folder):
            os.utime(path, (old, old))


class TimedWatcher(Watcher):
    """A watcher that adds up the seconds of each part of its cycle."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seconds = {"take": 0.0, "stage": 0.0, "grade": 0.0, "feedback": 0.0}

    def _timed(self, part: str, method, *args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            self.seconds[part] += time.perf_counter() - start

    def _take_arrivals(self, report):
        return self._timed("take", super()._take_arrivals, report)

    def _stage(self, report):
        return self._timed("stage", super()._stage, report)

    def _grade(self, todo, report):  # its feedback is counted apart, below
        return self._timed("grade", super()._grade, todo, report)

    def _feedback(self, *args, **kwargs):
        return self._timed("feedback", super()._feedback, *args, **kwargs)


def run_grade(course: ScratchCourse, jobs: int) -> float:
    from autograder.grade.run import grade

    start = time.perf_counter()
    report = grade([A], root=course.path, jobs=jobs, progress=False, stream=io.StringIO())
    seconds = time.perf_counter() - start
    if report.failures:
        raise SystemExit(f"grade failed: {report.failures[:3]}")
    return seconds


def run_watch(
    course: ScratchCourse, jobs: int, early: str
) -> tuple[float, TimedWatcher, list[str]]:
    log = io.StringIO()
    start = time.perf_counter()
    settings = Watch(exchange="off", early_default=early)
    watcher = TimedWatcher(course.path, jobs=jobs, settings=settings, stream=log)
    report = watcher.cycle()
    seconds = time.perf_counter() - start
    if report.failures or report.refused:
        print(log.getvalue()[-3000:])
        raise SystemExit(f"watch failed: {(report.failures + report.refused)[:3]}")
    return seconds, watcher, report.graded


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, default=50, help="submissions in the burst")
    common.add_jobs(parser, 2, help="workers, both ways")
    parser.add_argument("--early", choices=LEVELS, default="hidden", help="pages' level")
    common.add_keep(parser)
    args = parser.parse_args()
    with common.scratch("submit-bench-", keep=args.keep) as work:
        print(
            f"{args.n} submissions of {A}, {args.jobs} workers, pages at level {args.early}; "
            f"{common.cores()} cores; load average {common.load_average()}; scratch {work}"
        )
        import autograder.feedback.pages
        import autograder.grade.run  # noqa: F401

        warm = ScratchCourse(work / "warm-up", [A])
        warm.release(A)
        warm.submit("s00", A, read(SOURCE, A))
        run_grade(warm, args.jobs)

        class_ = submissions(args.n)
        graded, watched = ScratchCourse(work / "grade", [A]), ScratchCourse(work / "watch", [A])
        for course in (graded, watched):
            course.release(A)
        for student, nb in class_.items():
            graded.submit(student, A, nb)
        into_inbox(watched, class_)

        plain = run_grade(graded, args.jobs)
        print(f"(a) grade:                {plain:7.1f} s")
        total, watcher, done = run_watch(watched, args.jobs, args.early)
        parts = watcher.seconds
        grading = parts["grade"] - parts["feedback"]
        print(f"(b) watch, one cycle:     {total:7.1f} s for {len(done)} graded")
        print(
            f"    taking and staging {parts['take'] + parts['stage']:.1f} s, "
            f"grading {grading:.1f} s, feedback pages {parts['feedback']:.1f} s "
            f"({parts['feedback'] / total:.0%} of the cycle, "
            f"{parts['feedback'] / max(1, len(done)):.2f} s each)"
        )
        print(f"\nwatch / grade: {total / plain:.2f}x   (target <= 1.1x; watch also makes pages)")
        print(
            f"watch without its feedback pages / grade: {(total - parts['feedback']) / plain:.2f}x"
        )
        same = gradebook_scores(graded.path, A) == gradebook_scores(watched.path, A)
        print(f"same scores in both gradebooks: {'yes' if same else 'NO'}")
        print(f"load average at the end: {common.load_average()}")


if __name__ == "__main__":
    main()
