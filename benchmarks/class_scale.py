"""Benchmark: a whole class graded end to end, with today's grader and the one before
issue 27 (``BASELINE``) on the same class in the same run; the projection for 300.

    .venv/bin/python benchmarks/class_scale.py                  # 30 students
    .venv/bin/python benchmarks/class_scale.py --students 300   # the full class (long)
    .venv/bin/python benchmarks/class_scale.py --no-baseline    # today's grader only

The class is made with ``autograder/demo.py``'s own helpers (``common.write_class``,
``common.half_honest``): for every
assignment with generated solutions, half the students hand in the solution (a quiz
worked out for their own variant), and the rest in turn a typical bug, half the work
done, and the blank notebook. Each grader grades it from scratch (fresh gradebook,
nothing autograded yet) with ``python -m autograder grade --jobs <cores>``, everything
included (workers starting, the gradebook, the merge, the records), in a private copy of
the course whose ``source/`` is this checkout's:

  (a) today:    this checkout's ``autograder/`` and ``nbgrader_config.py``;
  (b) baseline: the same files of commit BASELINE (``git archive``), the grader as it
                was before kernels were started warm, with that commit's own kit
                (``common.old_course``: its hidden tests use the kit's insides).

Today's notebooks have outgrown that kit: lesson 1's engine cells import
``coursekit.recording`` and the quizzes import ``quizkit`` (both 27 Nov, after any
commit without warm kernels), so the baseline fails the engine cells of lessons 2, 3 and
5 and the quizzes' cells, and their scores differ (measured: 5 of 10 submissions of one
student); there it stops early, so baseline / today understates today's gain.

They alternate (a b, then b a) over ``--rounds``, so that both see the same machine
load. Printed: notebooks per second, seconds per notebook per core (wall time x cores /
notebooks), the projection for 300 students and every assignment (target: at most 15
minutes on 2 cores, about 0.65 s per notebook per core), and baseline / today (the
result). Then the scores of both, submission by submission: they must be the same (a
hidden test draws random inputs, but a correct or a buggy notebook scores the same on
any). Not a test: the machine may be shared, so the load average is printed and only
ratios from the same run mean anything.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import time
from pathlib import Path

import common

BASELINE = "5e389c6"  # main before issue 27 (class-scale speed)
TARGET_MINUTES = 15
FULL_CLASS = 300


def grade_once(code: Path, classroom: Path, jobs: int, label: str) -> tuple[float, dict]:
    """Wall seconds of one `grade` from scratch with the grader in ``code``, and the
    scores it gave: {(student, assignment): score}."""
    scratch = classroom.parent / f"{label}-{time.monotonic_ns()}"
    shutil.copytree(classroom / "submitted", scratch / "submitted")
    cmd = [sys.executable, "-m", "autograder", "grade", "--jobs", str(jobs), "-q"]
    cmd += ["--course", str(scratch)]
    wall, proc = common.run_timed(cmd, code)
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"{label} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )
    out = scratch / "exports"
    subprocess.run(
        [sys.executable, "-m", "autograder", "export", "--course", str(scratch), "--out", str(out)],
        cwd=code,
        env=common.venv_env(),
        capture_output=True,
        check=False,
    )
    scores = {}
    if (out / "grades.csv").is_file():
        with (out / "grades.csv").open(newline="") as fh:
            for row in csv.DictReader(fh):
                scores[(row["student"], row["assignment"])] = row["score"]
    shutil.rmtree(scratch, ignore_errors=True)
    return wall, scores


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--students", type=int, default=30)
    common.add_jobs(parser)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", default=BASELINE, help="commit of the grader to compare")
    parser.add_argument("--no-baseline", action="store_true", help="grade with today's only")
    args = parser.parse_args()

    from autograder.demo import demo_assignments

    assignments = demo_assignments()
    with common.scratch("class-scale-") as work:
        classroom = work / "class"
        n = common.write_class(
            classroom, assignments, args.students, common.half_honest, worked_quizzes=True
        )
        per_student = n / args.students
        print(
            f"{args.students} students x {len(assignments)} assignments = {n} notebooks; "
            f"{args.jobs} cores; load average {common.load_average()}"
        )
        graders = {"today": common.ROOT}
        if not args.no_baseline:
            graders["baseline"] = common.old_course(work / "baseline", args.baseline)
        times: dict[str, list[float]] = {k: [] for k in graders}
        scores: dict[str, dict] = {}
        for r in range(args.rounds):
            for label in common.alternate(list(graders), r):
                wall, got = grade_once(graders[label], classroom, args.jobs, label)
                times[label].append(wall)
                scores.setdefault(label, got)
                print(f"  {label:9} round {r + 1}: {wall:7.1f} s", flush=True)
        print()
        for label, walls in times.items():
            wall = min(walls)
            per_core = wall * args.jobs / n
            projected = per_core * per_student * FULL_CLASS / args.jobs / 60
            print(
                f"{label:9} {n / wall:6.2f} notebooks/s  {per_core:5.2f} s/notebook/core  "
                f"300 students x {len(assignments)} assignments: {projected:5.1f} min "
                f"(target <= {TARGET_MINUTES})"
            )
        if "baseline" in times:
            ratio = min(times["baseline"]) / min(times["today"])
            print(f"baseline / today: {ratio:.2f}x faster")
            differ = sorted(
                k for k in scores["today"] if scores["today"][k] != scores["baseline"].get(k)
            )
            print(
                f"scores: {len(scores['today'])} submissions, "
                f"{len(differ)} differ" + (f": {differ[:10]}" if differ else "")
            )


if __name__ == "__main__":
    main()
