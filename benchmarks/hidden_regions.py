"""Hidden tests in the notebook against hidden tests in Python: the same checks, timed.

Lessons 1 and 3 moved their hidden tests into their notebooks' hidden regions, run in the
grader against stand-ins (verdicts/region.py, issue 39). This grades the course's solution
of both lessons with every test cell's hidden test, in this checkout and in the grader of
``--before`` (default b4ac43c, the last commit with the tests in verdicts/hidden/), each in
a process of its own, alternating; each cell's test is timed on its second run (the first
imports pytest's rewriting and compiles the region, once per grading worker). It prints
the median CPU seconds (the process and the probe's forked copies) and wall seconds per
notebook, and their ratio. Both must pass every test cell. Target: within 5 % (the
requests to the kernel are the same). Measured 2026-11-27, quiet 2-core machine, 5
rounds: 01_value 1.03x, 03_activations 0.97x (first runs, imports included: 1.31x and
1.13x, about 50 ms once per worker).

    python benchmarks/hidden_regions.py [--rounds 7] [--before b4ac43c]
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import common

ROOT = common.ROOT
LESSONS = ("01_value", "03_activations")

# Run in the course folder given as argv[1]: every test cell's verdict on the solution.
WORKER = r"""
import json, os, resource, sys, time
from pathlib import Path
course = Path(sys.argv[1]); lesson = sys.argv[2]
sys.path[:0] = [str(course), str(course / "source" / lesson)]
os.chdir(course / "source" / lesson)
os.environ["COURSEKIT_NO_SELF_CHECK"] = "1"; os.environ["MPLBACKEND"] = "Agg"
import contextlib, io
from autograder import markers
from autograder.verdicts import api
try:
    from autograder.verdicts import exercises, region
except ImportError:
    region = None
path = next((course / "source" / lesson).glob("*.ipynb"))
nb = json.loads(path.read_text())
course_nb = exercises.read(nb, str(path)) if region else None
engine = api.engine_code(lesson)
ns = {"__name__": "__main__"}
results, spent = [], 0.0
def cpu():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
wall = 0.0
for cell in nb["cells"]:
    if cell["cell_type"] != "code" or {"demo", "practice"} & set(cell["metadata"].get("tags", [])):
        continue
    md = cell["metadata"].get("nbgrader", {})
    source = "".join(cell["source"])
    tags = cell["metadata"].get("tags", [])
    code = engine if engine and "engine" in tags else markers.solved(source)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(Exception):
        exec(compile(code, "<cell>", "exec"), ns)
    if md.get("grade"):
        gid = md["grade_id"]
        for warm in (True, False):  # once to import and compile, as a worker has
            kernel = api.Kernel(api.local_ask(ns), api.cell_seed(1, gid), 60)
            start_cpu, start = cpu(), time.perf_counter()
            if region is not None:
                verdict, _ = region.decide(lesson, gid, kernel, course_nb)
            else:
                verdict = api.verdict(lesson, gid, kernel)
        spent += cpu() - start_cpu
        wall += time.perf_counter() - start
        results.append([gid, verdict.passed])
print(json.dumps({"cpu": spent, "wall": wall, "results": results}))
"""


def old_course(dest: Path, commit: str) -> Path:
    """The grader and source/ of ``commit``, coursekit beside the lessons."""
    common.git_archive(dest, commit, ["autograder", "source", "nbgrader_config.py"])
    kit = dest / "source" / ".shared" / "coursekit.py"
    for lesson in LESSONS:  # coursekit beside each lesson, as place_coursekit links it
        if kit.exists():
            shutil.copy(kit, dest / "source" / lesson / "coursekit.py")
    return dest


def once(course: Path, lesson: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", WORKER, str(course), lesson],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", default="b4ac43c")
    args = parser.parse_args()
    from autograder.course import place_coursekit

    place_coursekit(ROOT)
    with common.scratch("hidden-regions-") as tmp:
        before = old_course(tmp / "before", args.before)
        for lesson in LESSONS:
            runs: dict[str, list[dict]] = {"before": [], "now": []}
            for _ in range(args.rounds):
                runs["before"].append(once(before, lesson))
                runs["now"].append(once(ROOT, lesson))
            for label, found in runs.items():
                failed = [gid for r in found for gid, ok in r["results"] if not ok]
                assert not failed, f"{label} {lesson}: the solution failed {failed}"
            cpu = {k: statistics.median(r["cpu"] for r in v) for k, v in runs.items()}
            wall = {k: statistics.median(r["wall"] for r in v) for k, v in runs.items()}
            print(
                f"{lesson}: hidden tests of the solution, median of {args.rounds}: "
                f"CPU {cpu['before']:.2f} s -> {cpu['now']:.2f} s "
                f"({cpu['now'] / cpu['before']:.2f}x), wall {wall['before']:.2f} s -> "
                f"{wall['now']:.2f} s ({wall['now'] / wall['before']:.2f}x)"
            )


if __name__ == "__main__":
    main()
