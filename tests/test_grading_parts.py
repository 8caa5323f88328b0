"""Fast tests of what grading on Dask is made of: the grading material and its check on a
worker, a submission travelling as bytes, kernels started under their limits, progress
messages. (tests/test_dask_grading.py grades on a real cluster.)"""

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import NOTEBOOKS, SOLUTIONS, notebook_path

from autograder.course import ROOT, assignments, open_course
from autograder.kernel.limits import TASK_MARKER, GiB, Limits, limited_command
from autograder.messages import Progress, write_files
from autograder.verdicts.api import engine_lessons
from autograder.worker import plugins
from autograder.worker.material import material_files, pack, shared_files, template_path
from autograder.worker.submission import MAX_NOTEBOOK_BYTES, submitted_files

A = "01_value"


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    template = tmp_path_factory.mktemp("t") / "template.db"
    template.write_bytes(b"a template gradebook")
    return material_files(open_course(), A, template)


def test_the_material_holds_what_a_worker_needs_and_no_other_assignment_s_notebooks(material):
    names = set(material)
    assert "nbgrader_config.py" in names
    for rel in (
        "autograder/worker/task.py",
        "autograder/verdicts/probe/runtime.py",
        "autograder/verdicts/api.py",
        f"autograder/verdicts/hidden/{A}.py",
        "source/.reference/refgrad/__init__.py",
        "source/.shared/coursekit.py",
        f"source/{A}/{notebook_path(SOLUTIONS, A).name}",
        f"source/{A}/coursekit.py",
        template_path(A),
    ):
        assert rel in names, rel
    # other assignments' notebooks: only the lessons the course's engine of a lesson is read
    # from (their other files, questions and data, are in every material: material.py)
    engines = {lesson for a in assignments() for lesson in engine_lessons(a)}
    assert engines == {"01_value", "02_backward", "03_activations"}
    notebooks = {n.split("/")[1] for n in names if n.startswith("source/") and ".ipynb" in n}
    assert notebooks == engines
    assert not [n for n in names if n.startswith("source/05_") and n.endswith(".ipynb")]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert material[f"source/{A}/coursekit.py"] == material["source/.shared/coursekit.py"]


def test_every_material_of_a_run_carries_the_grader_read_at_its_start(tmp_path):
    """A run reads the grader once (ClassGrading.shared): an assignment prepared later in
    the run gets those files, not the ones on disk by then, so no worker ever mixes two
    versions of the grader's modules."""
    template = tmp_path / "template.db"
    template.write_bytes(b"a template gradebook")
    shared = shared_files()
    shared["autograder/verdicts/api.py"] = b"# the grader as it was when the run started\n"
    files = material_files(open_course(), A, template, shared)
    assert files["autograder/verdicts/api.py"] == shared["autograder/verdicts/api.py"]
    assert set(shared) <= set(files)


def test_the_material_is_checked_where_it_is_unpacked(tmp_path, material):
    packed = pack(A, material)
    assert packed.digest == pack(A, dict(reversed(material.items()))).digest
    assert packed.code == plugins.code_digest(ROOT / "autograder")
    where = plugins.unpack(packed.archive, tmp_path / packed.digest, packed.digest)
    assert plugins.files_digest(plugins.read_tree(where)) == packed.digest
    assert (where / template_path(A)).read_bytes() == b"a template gradebook"
    # Unpacked again: the folder is reused; a file changed there is put right.
    (where / "nbgrader_config.py").write_text("changed")
    plugins.unpack(packed.archive, where, packed.digest)
    assert (where / "nbgrader_config.py").read_bytes() == material["nbgrader_config.py"]
    # Other material under this digest is refused.
    tampered = io.BytesIO()
    with zipfile.ZipFile(tampered, "w") as zf:
        for rel, data in material.items():
            zf.writestr(rel, b"# planted" if rel.endswith("01_value.py") else data)
    with pytest.raises(plugins.MaterialError, match="digest"):
        plugins.unpack(tampered.getvalue(), tmp_path / "other", packed.digest)
    assert not (tmp_path / "other").exists()


def test_a_task_refuses_to_run_without_its_material(tmp_path):
    from types import SimpleNamespace

    worker = SimpleNamespace(address="tcp://127.0.0.1:1", plugins={})
    with pytest.raises(plugins.MaterialError, match="not on worker"):
        plugins.locate(worker, "0123")


def test_a_submission_travels_as_the_bytes_make_gradable_reads(tmp_path):
    from autograder.worker.submission import make_gradable

    folder = tmp_path / "submitted"
    (folder / "data").mkdir(parents=True)
    solution = notebook_path(SOLUTIONS, A).read_bytes()
    (folder / "value.ipynb").write_bytes(solution)
    (folder / "value-Copy1.ipynb").write_bytes(notebook_path(NOTEBOOKS, A).read_bytes())
    (folder / "timestamp.txt").write_text("2026-01-15 12:00:00")
    (folder / "data" / "points.csv").write_bytes(b"1,2\n" * 1000)
    (folder / "huge.ipynb").write_bytes(b" " * (MAX_NOTEBOOK_BYTES + 1))
    files = submitted_files(folder)
    assert files["value.ipynb"].data == solution
    assert files["timestamp.txt"].data is not None
    assert files["data/points.csv"].data is None
    assert files["huge.ipynb"].data is None and files["huge.ipynb"].size > MAX_NOTEBOOK_BYTES
    copy = tmp_path / "on-a-worker"
    write_files(files, copy)
    assert (copy / "data" / "points.csv").stat().st_size == 4000
    assert (copy / "value.ipynb").read_bytes() == solution

    from autograder.worker.submission import Expected

    expected = [Expected("value", [])]
    here, there = (
        make_gradable(folder, expected, {}, set()),
        make_gradable(copy, expected, {}, set()),
    )
    assert [n.text for n in here[1]] == [n.text for n in there[1]]
    assert [[n.text for n in p.notes] for p in here[0]] == [
        [n.text for n in p.notes] for p in there[0]
    ]
    assert "data/points.csv" in here[1][0].text


@pytest.mark.slow  # starts real kernels
def test_kernels_start_under_their_limits(tmp_path):
    limits = Limits(memory=2 * GiB, file_size=5_000_000)
    probe = (
        "import os, resource; print(resource.getrlimit(resource.RLIMIT_AS)[0], "
        "resource.getrlimit(resource.RLIMIT_FSIZE)[0], "
        "resource.getrlimit(resource.RLIMIT_CORE)[0], "
        f"os.environ.get({TASK_MARKER!r}), os.getpid())"
    )
    log = tmp_path / "kernel.log"
    cmd = limited_command([sys.executable, "-c", probe], limits, "tok123", str(log))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    proc.wait(timeout=60)
    memory, fsize, core, token, pid = log.read_text().split()
    assert (int(memory), int(fsize), int(core), token) == (2 * GiB, 5_000_000, 0, "tok123")
    assert int(pid) == proc.pid  # the launcher became the kernel: same process
    assert os.getpid() != proc.pid


def test_progress_travels_as_a_plain_list():
    p = Progress(7, 2, "tcp://127.0.0.1:1234", "value", 12, 40)
    wire = p.to_wire()
    assert json.loads(json.dumps(wire)) == wire
    assert Progress.from_wire(wire) == p


def test_the_task_function_travels_by_value():
    """The scheduler unpickles every task and has no course: nothing in the task may be
    imported from the grader."""
    import cloudpickle

    from autograder.worker.material import send_by_value

    send_by_value()
    blob = cloudpickle.dumps(plugins.task_function())
    assert b"autograder.worker.task" not in blob
    code = f"import pickle, sys; f = pickle.loads({blob!r}); print(f.__name__)"
    out = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, cwd=Path("/")
    )
    assert out.stdout.strip() == "run_task", out.stderr[-2000:]


def test_a_run_past_its_deadline_has_its_kernel_killed_and_the_cell_is_known(tmp_path):
    import time
    from types import SimpleNamespace

    from autograder.messages import Job
    from autograder.worker.task import Monitor

    events = []
    worker = SimpleNamespace(
        address="tcp://127.0.0.1:1", log_event=lambda topic, msg: events.append((topic, msg))
    )
    killed = []
    job = Job(7, "ann", A, "course", "digest", {}, topic="t")
    monitor = Monitor(job, worker, tmp_path / "progress", lambda: killed.append(1))
    try:
        monitor.begin(1, 0.5)
        (tmp_path / "progress").write_text("value\t12\t40\n")
        deadline = time.monotonic() + 10
        while not killed and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        monitor.stop()
    assert killed == [1] and monitor.overdue
    assert (monitor.where.notebook, monitor.where.cell) == ("value", 12)
    progress = [Progress.from_wire(msg) for _, msg in events]
    assert progress[0] == Progress(7, 1, worker.address)  # the run began
    assert progress[-1] == Progress(7, 1, worker.address, "value", 12, 40)
