"""`grade --scheduler`: grading on a Dask cluster of its own, started here with the `dask`
command line on 127.0.0.1 (a scheduler and two workers, each worker in an empty folder of
its own, without the course), gives the same grades as grading on this machine (some
students of the session's hostile class, tests/hostile.py); a worker killed mid-run loses
nothing and counts nothing twice. The two tests that grade on it share one cluster.
"""

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from helpers import (
    NOTEBOOKS,
    SOLUTIONS,
    VENV_BIN,
    ScratchCourse,
    autograder_cli,
    course_env,
    notebook_path,
    records,
)
from hostile import HOSTILE, LIMITS

from autograder.kernel.sandbox import BUBBLEWRAP, sandbox_status

pytestmark = pytest.mark.slow

A = "01_value"
KILL_PARENT = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"
MARKER = "AUTOGRADER_WORKER"  # limits.MARKER: what the test's workers and kernels carry


def grade(course: Path, *args, timeout=900) -> subprocess.CompletedProcess:
    return autograder_cli("grade", A, *LIMITS, *args, cwd=course, timeout=timeout, codes=(0, 1))


def gradebook_rows(course: Path) -> dict[str, int]:
    con = sqlite3.connect(course / "gradebook.db")
    try:
        rows = con.execute(
            "select student.id, count(*) from submitted_assignment join "
            "student on student.id = submitted_assignment.student_id "
            "group by student.id"
        ).fetchall()
    finally:
        con.close()
    return dict(rows)


def make_class(path: Path, students: dict) -> Path:
    """A course where each of ``students`` ({id: notebook, or the bytes of one}) handed in
    A."""
    course = ScratchCourse(path, [A])
    name = notebook_path(SOLUTIONS, A).name
    for student, nb in students.items():
        folder = course.path / "submitted" / student / A
        folder.mkdir(parents=True)
        if isinstance(nb, bytes):
            (folder / name).write_bytes(nb)
        else:
            nbformat.write(nb, folder / name)
    return course.path


class DaskCluster:
    """A scheduler and workers started with the `dask` command line, each in a folder of
    its own (no course there), all on 127.0.0.1; stopped, with everything they started,
    by ``stop``."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.token = f"dask-test-{os.getpid()}-{time.monotonic_ns()}"
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []
        folder = tmp / "scheduler"
        folder.mkdir(parents=True)
        info = folder / "scheduler.json"
        self.scheduler = self._start(
            [
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(info),
            ],
            folder,
        )
        deadline = time.monotonic() + 120
        while not info.exists() and time.monotonic() < deadline:
            assert self.scheduler.poll() is None, (folder / "log.txt").read_text()
            time.sleep(0.2)
        self.address = json.loads(info.read_text())["address"]
        self.scheduler_file = info

    def _start(self, args: list[str], cwd: Path) -> subprocess.Popen:
        log = open(cwd / "log.txt", "w")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(
            [str(Path(VENV_BIN) / "dask"), *args],
            cwd=cwd,
            env=course_env(**{MARKER: self.token}),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def add_worker(self, name: str) -> subprocess.Popen:
        folder = self.tmp / name
        (folder / "local").mkdir(parents=True)
        proc = self._start(
            [
                "worker",
                self.address,
                "--name",
                name,
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
                "--local-directory",
                str(folder / "local"),
            ],
            folder,
        )
        self.workers.append(proc)
        return proc

    def client(self):
        from distributed import Client

        return Client(self.address, timeout=60, set_as_default=False)

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL a `dask` process and its own processes (not what they started in
        sessions of their own, such as kernels)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def leftovers(self) -> list[psutil.Process]:
        """Processes that carry this cluster's marker and are alive."""
        found = []
        for p in psutil.process_iter():
            try:
                if p.environ().get(MARKER) == self.token and p.status() != psutil.STATUS_ZOMBIE:
                    found.append(p)
            except (psutil.Error, OSError):
                pass
        return found

    def stop(self) -> list[int]:
        """Stop everything; returns the processes still there a while after their
        cluster was killed (there should be none: kernels notice their worker died)."""
        for proc in self.procs:
            self.kill(proc)
        deadline = time.monotonic() + 30
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.5)
        left = [p.pid for p in self.leftovers()]
        for p in self.leftovers():
            with contextlib.suppress(psutil.Error):
                p.kill()
        return left


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One cluster for the module's tests that grade on one (in the hostile_class group:
    on one xdist worker, the first test's grades compared with that class's)."""
    dask = DaskCluster(tmp_path_factory.mktemp("dask"))
    try:
        dask.add_worker("worker-a")
        dask.add_worker("worker-b")
        client = dask.client()
        try:
            client.wait_for_workers(2, timeout=120)
            # The workers have nothing of the course: no `autograder` to import.
            found = client.run(
                lambda: __import__("importlib.util").util.find_spec("autograder") is not None
            )
            assert set(found.values()) == {False}, found
        finally:
            client.close()
        yield dask
    finally:
        left = dask.stop()
        assert left == [], f"processes left behind by the cluster: {left}"


# The students of the comparison, as named in the session's hostile class (tests/hostile.py,
# graded on this machine with --jobs 2 under the same LIMITS).
COMPARED = ("correct", "blank", "bug", "infinite_loop", "os_exit")


@HOSTILE
def test_a_cluster_gives_the_same_grades_as_this_machine(tmp_path, cluster, hostile_class):
    students = {s: hostile_class["handed_in"][s] for s in COMPARED}  # as they handed in
    remote = make_class(tmp_path / "remote", students)
    proc = grade(remote, "--scheduler", cluster.address)
    assert f"on the Dask cluster at {cluster.address}" in proc.stdout
    here, there = hostile_class["records"], records(remote)
    assert set(there) == set(students) <= set(here)
    for student in students:
        for key in ("score", "max_score", "problem", "note", "cells", "runs"):
            assert here[student][key] == there[student][key], (student, key)
    assert there["correct"]["score"] == there["correct"]["max_score"] > 0
    assert there["blank"]["score"] == 0
    assert "per-cell limit" in there["infinite_loop"]["note"]
    assert "crashed the kernel and was skipped" in there["os_exit"]["note"]
    assert gradebook_rows(remote) == dict.fromkeys(students, 1)
    # The grading material was removed from the workers when the run ended.
    for name in ("worker-a", "worker-b"):
        left = list((cluster.tmp / name / "local").rglob("autograder-material/*"))
        assert left == [], left
    # Nothing changed: nothing is graded again.
    again = grade(remote, "--scheduler", cluster.address)
    assert "0 graded" in again.stdout, again.stdout[-2000:]


def kernels_of(proc: subprocess.Popen) -> list[psutil.Process]:
    try:
        found = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for p in found:
        try:
            if "ipykernel" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:
            pass
    return out


@HOSTILE  # the module's cluster: killed last (it kills one of its workers)
def test_a_worker_killed_mid_run_loses_nothing_and_counts_nothing_twice(tmp_path, cluster):
    from autograder.demo import with_cell_after_first_test

    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    slow = with_cell_after_first_test(solution, "import time\ntime.sleep(3)")
    students = {f"s{i}": (slow if i % 2 else blank) for i in range(8)}
    course = make_class(tmp_path / "course", students)
    run = autograder_cli(
        "grade",
        A,
        *LIMITS,
        "--scheduler",
        str(cluster.scheduler_file),  # its file, this time
        cwd=course,
        wait=False,
    )
    victim = None
    deadline = time.monotonic() + 300
    while victim is None and time.monotonic() < deadline and run.poll() is None:
        for worker in cluster.workers:
            if kernels_of(worker) and records(course):
                victim = worker
                break
        time.sleep(0.1)
    assert victim is not None, "no worker was grading while the run lasted"
    orphans = kernels_of(victim)  # the kernel of the submission it was grading
    cluster.kill(victim)
    out, err = run.communicate(timeout=900)
    assert run.returncode == 0, out[-3000:] + err[-3000:]
    recs = records(course)
    assert set(recs) == set(students)
    full = recs["s1"]["max_score"]
    for student, nb in students.items():
        assert recs[student]["score"] == (full if nb is slow else 0), student
    assert gradebook_rows(course) == dict.fromkeys(students, 1)
    finished = [line for line in out.splitlines() if line.startswith("[")]
    assert len(finished) == len(students), out
    # The killed worker's kernel noticed and stopped.
    _, alive = psutil.wait_procs(orphans, timeout=30)
    assert not [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_a_submission_that_kills_its_worker_is_graded_without_that_cell(tmp_path):
    """On this machine's cluster, unsandboxed: a cell that kills the grading worker (its
    kernel's parent). Dask runs it elsewhere until it gives up (KilledWorker); the grader
    then runs it reporting each cell before it runs, learns the cell, and grades the rest
    without it. Nobody else loses anything, and nothing is left running. (In the sandbox
    the kernel cannot see its worker: test_the_sandbox_keeps_the_worker_out_of_reach.)"""
    from autograder.demo import with_cell_after_first_test

    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    blank = nbformat.read(notebook_path(NOTEBOOKS, A), as_version=4)
    killer = with_cell_after_first_test(solution, KILL_PARENT)
    students = {"killer": killer, "solution": solution, "blank": blank}
    course = make_class(tmp_path / "course", students)
    run = autograder_cli("grade", A, *LIMITS, "--jobs", "2", "--no-sandbox", cwd=course, wait=False)
    out, err = run.communicate(timeout=900)
    assert run.returncode == 1, out[-3000:] + err[-3000:]
    recs = records(course)
    full = recs["solution"]["max_score"]
    assert recs["killer"]["score"] == recs["solution"]["score"] == full
    assert "stopped its grading worker and was skipped" in recs["killer"]["note"]
    assert recs["killer"]["problem"]
    assert recs["blank"]["score"] == 0
    assert gradebook_rows(course) == dict.fromkeys(students, 1)
    time.sleep(2)
    left = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if (
                p.environ().get(MARKER, "").startswith(f"{run.pid}-")
                and p.status() != psutil.STATUS_ZOMBIE
            ):
                left.append(p.pid)
    assert left == []


@pytest.mark.skipif(
    sandbox_status().level != BUBBLEWRAP, reason=f"no sandbox here: {sandbox_status().reason}"
)
def test_the_sandbox_keeps_the_worker_out_of_reach(tmp_path):
    """The same cell in the sandbox: the kernel's parent is the sandbox's own init, which
    a SIGKILL from inside does not stop, so the worker grades on and the cell costs
    nothing; review flags the attempt."""
    from autograder.demo import with_cell_after_first_test

    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    students = {"killer": with_cell_after_first_test(solution, KILL_PARENT)}
    course = make_class(tmp_path / "course", students)
    run = autograder_cli(
        "grade", A, *LIMITS, "--jobs", "1", "--require-sandbox", cwd=course, timeout=900
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rec = records(course)["killer"]
    assert rec["score"] == rec["max_score"]
    assert not rec["problem"] and "skipped" not in rec["note"]
    assert "calls os.kill" in rec["note"]
    assert gradebook_rows(course) == {"killer": 1}
