"""Benchmark: `grade` on Dask (a local cluster) against the home-made pool of worker
processes it replaced, measured in one run; and what Dask costs per task.

    .venv/bin/python benchmarks/grading_dask.py                 # 6 submissions each, 2 rounds
    .venv/bin/python benchmarks/grading_dask.py --n 4 --rounds 3

For every assignment with generated solutions/ and notebooks/, N synthetic submissions
(the solution, a typical bug, half done, blank, in turn) are graded, each time from
scratch (fresh gradebook, nothing autograded yet), by

  (a) pool: `python -m autograder grade --jobs <cores>` of the grader before Dask
      (`git archive` of commit a0f5c36: its autograder/ and nbgrader_config.py, with
      this checkout's source/), in a private copy of the course;
  (b) dask: the same command with this checkout's grader;

alternately, (a) (b) (b) (a) ..., so that both see the same machine load. Printed: each
one's time and CPU time (its whole process tree), the throughput of (b) relative to (a),
total time (a) / total time (b) (target >= 0.95 on 2 cores), and the ratio of CPU time,
which another user's load on the machine disturbs less.

  (c) Dask's cost per task: N tasks that do nothing but carry a submission's bytes in and
      an autograded notebook's bytes out, on a one-worker local cluster set up as grade
      sets it up (a single-threaded process worker, the task sent by value): seconds per
      task one at a time (submit to result: what a worker waits between two submissions
      at worst) and all at once (what Dask adds to each submission's cost).

Since (a) was written, grading changed under (b) only: hidden tests decide outside the
kernel (on today's source/, (a)'s hidden cells just raise, so it skips that work), kernels
are sandboxed, and demonstrations are skipped. (a) against (b) measured Dask alone when
Dask landed (0.92x and 1.05x, docs/grading.md); today it compares two graders doing
different work, and (c), Dask's own cost per task against a submission's, is the number
that isolates Dask.

The machine may be shared: the load average is printed, and only ratios measured in the
same run mean anything. Not a test.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import common

from autograder.demo import demo_assignments

BEFORE_DASK = "a0f5c36"


def grade_once(code: Path, classroom: Path, jobs: int, label: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process tree) of one `grade` from scratch."""
    scratch = classroom.parent / f"{label}-{time.monotonic_ns()}"
    shutil.copytree(classroom / "submitted", scratch / "submitted")
    cmd = [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        "--jobs",
        str(jobs),
        "-q",
        "--course",
        str(scratch),
    ]
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=code,
        env=common.venv_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    cpu = tree_cpu(proc)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{label} failed ({proc.returncode}):\n{out[-2000:]}\n{err[-3000:]}")
    return wall, cpu


def tree_cpu(proc: subprocess.Popen) -> float:
    """CPU seconds (user + system) of ``proc`` and all its descendants until it exits,
    sampled every 0.1 s (a process that lives less than that may be missed)."""
    import psutil

    seen: dict[tuple[int, float], float] = {}
    root = psutil.Process(proc.pid)
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            for p in [root, *root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    t = p.cpu_times()
                    seen[(p.pid, p.create_time())] = t.user + t.system
        time.sleep(0.1)
    return sum(seen.values())


def task_cost(n: int, payload: bytes) -> tuple[float, float]:
    """(seconds per task one at a time, seconds per task all at once) for no-op tasks."""
    import logging

    import dask
    from distributed import Client, LocalCluster

    from autograder.grade.cluster import LOCAL_CONFIG

    def noop():
        def run(data: bytes) -> bytes:
            return data + data  # an autograded notebook is larger than the submission

        return run

    with (
        dask.config.set(LOCAL_CONFIG),
        LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            dashboard_address=None,
            silence_logs=logging.CRITICAL,
            host="127.0.0.1",
            scheduler_kwargs={"dashboard": False},
        ) as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        run = noop()
        client.submit(run, payload, pure=False).result()  # warm up
        start = time.perf_counter()
        for _ in range(n):
            client.submit(run, payload, pure=False).result()
        one = (time.perf_counter() - start) / n
        start = time.perf_counter()
        futures = [client.submit(run, payload, pure=False) for _ in range(n)]
        client.gather(futures)
        many = (time.perf_counter() - start) / n
    return one, many


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, default=6, help="submissions per assignment")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each, alternating")
    common.add_jobs(parser)
    parser.add_argument("--tasks", type=int, default=200, help="no-op tasks for (c)")
    common.add_keep(parser)
    args = parser.parse_args()
    assignments = demo_assignments()
    if not assignments:
        raise SystemExit("no assignment has solutions/ and notebooks/: run make generate")
    with common.scratch("grading-dask-bench-", keep=args.keep) as work:
        print(
            f"assignments: {', '.join(assignments)}; {args.n} submissions each; "
            f"{args.jobs} cores; load average {common.load_average()}; scratch {work}"
        )
        new, old = work / "dask", work / "pool"
        common.copy_course(new)
        common.old_course(old, BEFORE_DASK)
        classroom = work / "class"
        n = common.write_class(classroom, assignments, args.n, common.in_turn)
        times: dict[str, list[float]] = {"pool": [], "dask": []}
        cpus: dict[str, list[float]] = {"pool": [], "dask": []}
        for i in range(args.rounds):
            for label, code in common.alternate((("pool", old), ("dask", new)), i):
                load = os.getloadavg()[0]
                seconds, cpu = grade_once(code, classroom, args.jobs, label)
                times[label].append(seconds)
                cpus[label].append(cpu)
                print(
                    f"round {i + 1}: ({'a' if label == 'pool' else 'b'}) {label:<4} "
                    f"grade --jobs {args.jobs}: {seconds:6.1f} s, {cpu:6.1f} s of CPU, "
                    f"for {n} notebooks (load {load:.1f} before)",
                    flush=True,
                )
        pool, dask_ = sum(times["pool"]), sum(times["dask"])
        print(
            "\n(a) is the grader of " + BEFORE_DASK + ": it does less work on today's source "
            "(see the docstring);\n(c) below isolates Dask's own cost"
        )
        print(
            f"throughput, dask / pool: {pool / dask_:.2f}x   (target >= 0.95 on "
            f"{args.jobs} cores; per round: "
            f"{', '.join(f'{a / b:.2f}x' for a, b in zip(times['pool'], times['dask']))})"
        )
        print(
            f"CPU time, dask / pool: {sum(cpus['dask']) / sum(cpus['pool']):.2f}x   "
            "(lower is better; other users' load disturbs it less than the time)"
        )

        notebook = next(iter(sorted((classroom / "submitted").glob("*/*/*.ipynb"))))
        payload = pickle.dumps({"notebook": notebook.read_bytes()})
        one, many = task_cost(args.tasks, payload)
        print(
            f"(c) Dask per task ({len(payload) // 1000} kB in, {2 * len(payload) // 1000} kB "
            "out,"
            f" {args.tasks} tasks): {one * 1000:.1f} ms one at a time, "
            f"{many * 1000:.1f} ms each all at once; a submission takes "
            f"{dask_ / args.rounds / n * args.jobs:.1f} s of a worker"
        )
        print(f"load average at the end: {common.load_average()}")


if __name__ == "__main__":
    main()
