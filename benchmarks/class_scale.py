"""Benchmark: a whole class graded end to end, with today's grader and the one before
issue 27 (``BASELINE``) on the same class in the same run; the projection for 300.

    .venv/bin/python benchmarks/class_scale.py                  # 30 students
    .venv/bin/python benchmarks/class_scale.py --students 300   # the full class (long)
    .venv/bin/python benchmarks/class_scale.py --no-baseline    # today's grader only

The class is made with ``autograder/demo.py``'s own helpers (``make_class``): for every
assignment with generated solutions, half the students hand in the solution (a quiz
worked out for their own variant), and the rest in turn a typical bug, half the work
done, and the blank notebook. Each grader grades it from scratch (fresh gradebook,
nothing autograded yet) with ``python -m autograder grade --jobs <cores>``, everything
included (workers starting, the gradebook, the merge, the records), in a private copy of
the course whose ``source/`` is this checkout's:

  (a) today:    this checkout's ``autograder/`` and ``nbgrader_config.py``;
  (b) baseline: the same files of commit BASELINE (``git archive``), the grader as it
                was before kernels were started warm.

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

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import nbformat  # noqa: E402
from grading_dask import old_course  # noqa: E402

BASELINE = "5e389c6"  # main before issue 27 (class-scale speed)
TARGET_MINUTES = 15
FULL_CLASS = 300


def kinds_for(i: int) -> str:
    """Student i's kind: half honest, the rest a typical bug, half done, blank in turn."""
    if i % 2 == 0:
        return "honest"
    return ("bug", "half", "blank")[(i // 2) % 3]


def make_class(course: Path, assignments: list[str], students: int) -> int:
    """``course/submitted/<student>/<assignment>/`` for ``students`` students (see the
    module docstring); the number of notebooks written."""
    from autograder.course import NOTEBOOKS, SOLUTIONS, kind
    from autograder.demo import half_done, typical_bug, worked_quiz

    count = 0
    for a in assignments:
        for path in sorted((SOLUTIONS / a).glob("*.ipynb")):
            solution = nbformat.read(path, as_version=4)
            blank = nbformat.read(NOTEBOOKS / a / path.name, as_version=4)
            for i in range(students):
                student = f"student{i:03d}"
                own = worked_quiz(solution, a, student) if kind(a) == "quiz" else solution
                made = {
                    "honest": lambda: own,  # noqa: B023
                    "bug": lambda: typical_bug(own, blank),  # noqa: B023
                    "half": lambda: half_done(own, blank),  # noqa: B023
                    "blank": lambda: blank,  # noqa: B023
                }[kinds_for(i)]()
                folder = course / "submitted" / student / a
                folder.mkdir(parents=True, exist_ok=True)
                nbformat.write(made, folder / path.name)
                count += 1
    return count


def env() -> dict:
    bindir = str(Path(sys.executable).parent)
    return dict(os.environ, PATH=os.pathsep.join([bindir, os.environ.get("PATH", "")]))


def grade_once(code: Path, classroom: Path, jobs: int, label: str) -> tuple[float, dict]:
    """Wall seconds of one `grade` from scratch with the grader in ``code``, and the
    scores it gave: {(student, assignment): score}."""
    scratch = classroom.parent / f"{label}-{time.monotonic_ns()}"
    shutil.copytree(classroom / "submitted", scratch / "submitted")
    cmd = [sys.executable, "-m", "autograder", "grade", "--jobs", str(jobs), "-q"]
    cmd += ["--course", str(scratch)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=code, env=env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"{label} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        )
    out = scratch / "exports"
    subprocess.run(
        [sys.executable, "-m", "autograder", "export", "--course", str(scratch), "--out", str(out)],
        cwd=code,
        env=env(),
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", default=BASELINE, help="commit of the grader to compare")
    parser.add_argument("--no-baseline", action="store_true", help="grade with today's only")
    args = parser.parse_args()

    from autograder.demo import demo_assignments

    assignments = demo_assignments()
    work = Path(tempfile.mkdtemp(prefix="class-scale-"))
    try:
        classroom = work / "class"
        n = make_class(classroom, assignments, args.students)
        per_student = n / args.students
        print(
            f"{args.students} students x {len(assignments)} assignments = {n} notebooks; "
            f"{args.jobs} cores; load average {os.getloadavg()[0]:.1f}"
        )
        graders = {"today": ROOT}
        if not args.no_baseline:
            graders["baseline"] = old_course(work / "baseline", args.baseline)
        times: dict[str, list[float]] = {k: [] for k in graders}
        scores: dict[str, dict] = {}
        for r in range(args.rounds):
            order = list(graders) if r % 2 == 0 else list(reversed(graders))
            for label in order:
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
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
