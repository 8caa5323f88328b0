"""Warm kernels (autograder/kernel/warm.py): the spare kernel a grading worker starts while
a notebook runs is taken by the next notebook only if it would start the same way, sees
nothing of the notebook before it, survives the clean-up after that notebook (nothing
else does) and is used once.

GuardedExecute runs here as a worker runs it (``warm_kernels``), under bubblewrap.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest
from test_sandbox import KERNELSPEC, errors, needs_bwrap, processes_with, stdout

from autograder.kernel import bwrap, warm
from autograder.kernel import limits as oslimits
from autograder.kernel.limits import Limits


def notebook(*sources: str) -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_code_cell(textwrap.dedent(s)) for s in sources]
    for cell in cells:
        cell.metadata["nbgrader"] = {}
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})


def grade(nb, folder: Path):
    """One notebook through GuardedExecute with warm kernels, then the clean-up a worker
    does after it (worker/task.py); the kernel manager's launcher pid it ran in."""
    from autograder.preprocessors.execute import GuardedExecute

    own = oslimits.own_processes()
    ex = GuardedExecute(
        config=Limits(cell_timeout=20, sandbox="require").as_config(),
        shutdown_kernel="immediate",
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
        warm_kernels=True,
    )
    used = []
    original = ex.preprocess_cell

    def note(cell, resources, index):
        if not used:
            used.append(ex.km.provisioner.pid)
        return original(cell, resources, index)

    ex.preprocess_cell = note
    ex.preprocess(nb, {"nbgrader": {"notebook": "n"}, "metadata": {"path": str(folder)}})
    oslimits.kill_task_processes(own, keep=warm.exempt())
    return used[0]


def spare_pid() -> int | None:
    proc = warm.exempt()
    return proc.pid if proc is not None else None


@pytest.fixture
def folders(tmp_path):
    made = []
    for name in ("a", "b"):
        work = tmp_path / name / "autograded" / "s" / "01_value"
        work.mkdir(parents=True)
        (work / "coursekit.py").write_text("GIVEN = 42\n")
        made.append(work)
    yield made
    warm.discard_all()


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_the_next_notebook_takes_the_spare_and_sees_nothing_of_the_one_before(folders):
    token = uuid.uuid4().hex
    first, second = folders
    (first / "timestamp.txt").write_text("2026-11-26 10:00:00")
    (second / "timestamp.txt").write_text("2026-11-27 11:00:00")  # another student's time
    left = notebook(
        f"""
        import builtins, os, subprocess, sys
        for path in ("/tmp/left", os.path.expanduser("~/left"), "left"):
            open(path, "w").write("{token}")
        os.environ["LEFT"] = "{token}"
        builtins.LEFT = "{token}"
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"],
                         start_new_session=True)
        print(sorted(os.listdir(".")))
        """
    )
    ran = grade(left, first)
    assert not errors(left.cells[0]), errors(left.cells[0])
    assert "timestamp.txt" not in stdout(left.cells[0])  # nbgrader's, not the kernel's
    spare = spare_pid()
    assert spare is not None and spare != ran
    deadline = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(token) == []  # the clean-up killed the leftover, not the spare
    assert psutil.pid_exists(spare)

    check = notebook(
        """
        import builtins, json, os
        print(json.dumps([
            [os.path.exists(p) for p in ("/tmp/left", os.path.expanduser("~/left"), "left")],
            os.environ.get("LEFT"), getattr(builtins, "LEFT", None),
            sorted(os.listdir(".")),
        ]))
        """
    )
    took = grade(check, second)
    assert took == spare  # the spare, started during the first notebook
    files, env, builtin, listed = json.loads(stdout(check.cells[0]).strip().splitlines()[-1])
    assert files == [False, False, False] and env is None and builtin is None
    assert listed == ["coursekit.py"]
    assert not psutil.pid_exists(took) or psutil.Process(took).status() == psutil.STATUS_ZOMBIE
    assert spare_pid() not in (None, took)  # a new spare for the next, never this one again


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_a_spare_started_for_other_files_is_shut_down_and_not_taken(folders):
    first, second = folders
    (second / "coursekit.py").write_text("GIVEN = 43\n")  # another assignment's files
    grade(notebook("print(1)"), first)
    spare = spare_pid()
    assert spare is not None
    nb = notebook("import coursekit; print(coursekit.GIVEN)")
    took = grade(nb, second)
    assert took != spare and stdout(nb.cells[0]).strip() == "43"
    assert not psutil.pid_exists(spare) or psutil.Process(spare).status() == "zombie"


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_a_spare_that_died_is_not_taken_and_the_notebook_is_graded(folders):
    first, _ = folders
    grade(notebook("print(1)"), first)
    spare = spare_pid()
    assert spare is not None
    psutil.Process(spare).kill()
    nb = notebook("print(2)")
    took = grade(nb, first)
    assert took != spare and stdout(nb.cells[0]).strip() == "2"


def test_the_spare_key_follows_the_kernels_folder_but_not_notebooks_or_the_time(tmp_path):
    def key(folder):
        return warm.spare_key(type, "python3", ["--x"], {"wall": 300}, 1, folder)

    a, b = tmp_path / "a", tmp_path / "b"
    for folder, when in ((a, "10:00"), (b, "11:00")):
        (folder / "data").mkdir(parents=True)
        (folder / "data" / "points.csv").write_text("1,2\n")
        (folder / "timestamp.txt").write_text(when)
        (folder / f"{folder.name}.ipynb").write_text("{}")
    assert bwrap.folder_digest(a) == bwrap.folder_digest(b) and key(a) == key(b)
    (b / "data" / "points.csv").write_text("1,3\n")
    assert key(a) != key(b)
    (b / "data" / "points.csv").write_text("1,2\n")
    (b / "data" / "timestamp.txt").write_text("not nbgrader's: only the top one is")
    assert key(a) != key(b)
    assert key(a) != warm.spare_key(type, "python3", ["--x"], {"wall": 301}, 1, a)


def test_the_clean_up_spares_the_spare_and_its_children_and_kills_the_rest():
    token = uuid.uuid4().hex
    child = f"import time; time.sleep(600)  # {token}"
    parent = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "time.sleep(600)"
    )
    own = oslimits.own_processes()
    keep = subprocess.Popen([sys.executable, "-c", parent])
    other = subprocess.Popen([sys.executable, "-c", parent])
    try:
        deadline = time.monotonic() + 10
        while len(processes_with(token)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        oslimits.kill_task_processes(own, keep=psutil.Process(keep.pid))
        assert keep.poll() is None and other.wait(5) is not None
        alive = processes_with(token)
        assert sorted(p.pid for p in alive) == sorted(
            [keep.pid, *(c.pid for c in psutil.Process(keep.pid).children())]
        )
        assert len(alive) == 2
    finally:
        oslimits.kill_task_processes(own)  # the spare's children first: none is orphaned
        keep.wait(5)
        other.wait(5)
    assert processes_with(token) == []
