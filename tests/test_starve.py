"""One student must not slow or starve the others (issue 20, class 5).

What a kernel sends is capped before the grader parses or stores it (output_cap.py,
channels.py); its own stdout and stderr file on the host is capped and made anew for every
kernel; its CPU is one cgroup's (cgroups.py) that nothing it starts can leave. Kernels run
with GuardedExecute in a process of their own, as in a grading worker, whose peak memory
is measured; end to end (slow), `grade` runs attackers next to an honest student.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from pathlib import Path

import nbformat
import psutil
import pytest
from helpers import ROOT, SOLUTIONS, VENV_BIN, ScratchCourse, notebook_path, records

from autograder.kernel import cgroups, output_cap, sandbox
from autograder.kernel.limits import Limits

MiB = 1024**2
CPU = cgroups.cpu_status()
needs_cgroups = pytest.mark.skipif(
    CPU.level == cgroups.NONE, reason=f"no CPU confinement here: {CPU.reason}"
)

RUNNER = """
import json, sys, time
import nbformat
from autograder.kernel.limits import Limits
from autograder.preprocessors.execute import RUNS, GuardedExecute
spec = json.loads(sys.argv[1])
nb = nbformat.v4.new_notebook(
    cells=[nbformat.v4.new_code_cell(s) for s in spec["cells"]],
    metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "py"}})
for cell in nb.cells:
    cell.metadata["nbgrader"] = {}
cfg = Limits(cell_timeout=spec["timeout"], sandbox=spec["sandbox"], **spec["limits"]).as_config()
cfg.LimitedKernelManager.kernel_log = spec["log"]
ex = GuardedExecute(config=cfg, shutdown_kernel="immediate", iopub_timeout=10,
                    extra_arguments=["--HistoryManager.hist_file=:memory:"])
def peak():  # this process's own (ru_maxrss would count its parent's, from before exec)
    line = [x for x in open("/proc/self/status") if x.startswith("VmHWM:")][0]
    return int(line.split()[1]) * 1024
start = time.monotonic()
ex.preprocess(nb, {"nbgrader": {"notebook": "n"}, "metadata": {"path": spec["folder"]}})
print(json.dumps({
    "seconds": time.monotonic() - start,
    "peak": peak(),
    "events": [e.kind for e in RUNS[-1]["events"]],
    "sizes": [len(json.dumps(c.outputs)) for c in nb.cells],
    "outputs": [[{"type": o.output_type, "name": o.get("name") or o.get("ename"),
                  "text": (o.get("text") or o.get("evalue") or "")[-400:]}
                 for o in c.outputs] for c in nb.cells]}))
"""


def start_cells(
    folder: Path,
    *sources: str,
    sandboxed: str = "auto",
    timeout: int = 60,
    limits: dict | None = None,
    log: Path | None = None,
) -> subprocess.Popen:
    """GuardedExecute on ``sources`` in a process of its own, like a grading worker."""
    spec = {
        "cells": [textwrap.dedent(s) for s in sources],
        "sandbox": sandboxed,
        "timeout": timeout,
        "limits": limits or {},
        "folder": str(folder),
        "log": str(log or ""),
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}  # as in grading:
    env["PYTHONPATH"] = str(ROOT)  # ipykernel does not capture fd 1 and 2 under pytest
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, json.dumps(spec)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def finish(proc: subprocess.Popen, seconds: float = 300) -> dict:
    try:
        out, err = proc.communicate(timeout=seconds)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def grade_cells(folder: Path, *sources: str, **kw) -> dict:
    return finish(start_cells(folder, *sources, **kw))


def texts(outputs: list[dict]) -> str:
    return "\n".join(f"{o['name']}: {o['text']}" for o in outputs)


def stopped(outputs: list[dict]) -> str:
    return next((o["text"] for o in outputs if o["name"] == "KernelStopped"), "")


def our_groups(pid: int) -> list[Path]:
    """The groups of kernels that process ``pid`` started."""
    return [p for base in CPU.bases for p in Path(base).glob(f"autograder-kernel-{pid}-*")]


# -- what a cell may store -----------------------------------------------------------------


def msg(kind: str, **content) -> dict:
    return {"msg_type": kind, "header": {"msg_type": kind}, "parent_header": {}, "content": content}


def test_every_kind_of_output_counts_against_one_cap_per_cell():
    kept, dropped = Counter(), Counter()
    cap = 1000
    assert output_cap.cap(msg("stream", name="stdout", text="x" * 600), 0, cap, kept, dropped)
    # Display data and its metadata count, and so do results and widget state.
    assert (
        output_cap.cap(
            msg("display_data", data={"text/plain": "y"}, metadata={"m": "z" * 600}),
            0,
            cap,
            kept,
            dropped,
        )
        is None
    )
    assert (
        output_cap.cap(
            msg("execute_result", data={"text/plain": "r" * 500}, metadata={}, execution_count=1),
            0,
            cap,
            kept,
            dropped,
        )
        is None
    )
    assert (
        output_cap.cap(
            msg("comm_msg", comm_id="c", data={"state": "s" * 500}), 0, cap, kept, dropped
        )
        is None
    )
    # An update rewrites every output that shares its display id: each counts.
    assert (
        output_cap.cap(
            msg(
                "update_display_data",
                data={"text/plain": "u" * 100},
                metadata={},
                transient={"display_id": "d"},
            ),
            5,
            cap,
            kept,
            dropped,
        )
        is None
    )
    assert sum(kept.values()) <= cap and dropped["display"] >= 600 + 500 + 500 + 500
    # What ends a cell always passes.
    assert output_cap.cap(msg("status", execution_state="idle"), 0, cap, kept, dropped)


def test_a_huge_error_is_shortened_once_and_later_ones_dropped():
    kept, dropped = Counter(stdout=1000), Counter()
    huge = msg("error", ename="E" * 10_000, evalue="v" * (5 * MiB), traceback=["t" * MiB] * 50)
    out = output_cap.cap(huge, 0, 1000, kept, dropped)
    size = len(json.dumps(out["content"]))
    assert size < output_cap.ERROR_ROOM + 500, size
    assert out["content"]["ename"] == "E" * 100
    assert dropped["error"] > 50 * MiB
    assert (
        output_cap.cap(
            msg("error", ename="E", evalue="v" * 5000, traceback=[]), 0, 1000, kept, dropped
        )
        is None
    )


def test_malformed_messages_are_mended_or_dropped_and_deep_ones_measured_quickly():
    kept, dropped = Counter(), Counter()
    assert output_cap.cap({"msg_type": "stream", "content": ["x"]}, 0, 10, kept, dropped) is None
    mended = output_cap.cap(
        msg(
            "execute_result",
            data={},
            metadata={},
            execution_count="9" * 99,
            transient={"display_id": ["not", "a", "string"]},
        ),
        0,
        1000,
        kept,
        dropped,
    )
    assert mended["content"]["execution_count"] is None and "transient" not in mended["content"]
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    wide = {str(i): i for i in range(500_000)}
    start = time.perf_counter()
    assert output_cap.size_of(deep, 1000) > 1000 and output_cap.size_of(wide, 1000) > 1000
    assert time.perf_counter() - start < 0.1


@pytest.mark.slow  # starts real kernels
def test_a_long_traceback_an_update_storm_and_huge_metadata_are_capped(tmp_path):
    run = grade_cells(
        tmp_path,
        "raise ValueError('v' * (5 << 20))",
        """
        from IPython.display import display
        handle = display({'text/plain': 'a'}, raw=True, display_id='d')
        for _ in range(300):
            display({'text/plain': 'a'}, raw=True, display_id='d')
        for _ in range(50):
            handle.update({'text/plain': 'u' * 100_000}, raw=True)
        """,
        """
        from IPython.display import display
        display({'text/plain': 'm'}, metadata={'x': 'y' * (20 << 20)}, raw=True)
        """,
        "print('after')",
    )
    limit = Limits().output
    assert all(size < limit + 10_000 for size in run["sizes"]), run["sizes"]
    error = run["outputs"][0][0]
    assert error["name"] == "ValueError" and "not kept" in texts(run["outputs"][0])
    assert "not kept" in texts(run["outputs"][1]) and "not kept" in texts(run["outputs"][2])
    assert run["outputs"][3] == [{"type": "stream", "name": "stdout", "text": "after\n"}]


@pytest.mark.slow  # starts real kernels
def test_messages_nbclient_would_fail_on_are_mended(tmp_path):
    """A display id that is a list stopped the whole notebook's grading (nbclient raised
    out of GuardedExecute); an execution count that is a mapping went into the notebook."""
    run = grade_cells(
        tmp_path,
        """
        k = get_ipython().kernel
        k.session.send(k.iopub_socket, 'display_data', parent=k.get_parent(),
                       content={'data': {}, 'metadata': {}, 'transient': ['d']})
        k.session.send(k.iopub_socket, 'execute_result', parent=k.get_parent(),
                       content={'data': {}, 'metadata': {}, 'execution_count': {'x': 1}})
        print('fine')
        """,
        "print('after')",
    )
    assert "fine" in texts(run["outputs"][0])
    assert run["outputs"][1] == [{"type": "stream", "name": "stdout", "text": "after\n"}]


# -- what a kernel may send -----------------------------------------------------------------


@pytest.mark.slow  # starts real kernels
def test_a_200_mb_message_is_never_read_and_stops_the_kernel(tmp_path):
    run = grade_cells(
        tmp_path,
        "print('before')",
        """
        from IPython.display import display
        display({'text/plain': 'x' * (200 << 20)}, raw=True)
        """,
        "print('never')",
    )
    assert "message over the 32 MiB limit" in stopped(run["outputs"][1]), run["outputs"]
    assert run["events"] == ["died"]
    assert run["outputs"][2][0]["name"] == "NotRun"
    assert run["peak"] < 300 * MiB, run["peak"] / MiB  # was 700 MB and more


@pytest.mark.slow  # starts real kernels
def test_a_50_mb_traceback_stops_the_kernel_and_the_worker_stays_small(tmp_path):
    run = grade_cells(tmp_path, "raise ValueError('v' * (50 << 20))", "print('never')")
    assert stopped(run["outputs"][0]), run["outputs"]
    assert run["sizes"][0] < 5000
    assert run["peak"] < 300 * MiB, run["peak"] / MiB


@pytest.mark.slow  # starts real kernels
def test_many_messages_past_the_cell_limit_stop_the_kernel(tmp_path):
    run = grade_cells(
        tmp_path,
        """
        import sys
        for _ in range(100):
            sys.stdout.write('x' * (10 << 20))
            sys.stdout.flush()
        """,
        limits={"sent": 64 * MiB},
    )
    assert "over 64 MiB while one cell ran" in stopped(run["outputs"][0]), run["outputs"]
    assert run["sizes"][0] < Limits().output + 10_000


@pytest.mark.slow  # starts real kernels
def test_the_kernels_own_output_file_is_capped_and_new_for_every_kernel(tmp_path):
    """Its stdout and stderr (fd 1 and 2, and ipykernel's copies of them) go to a file on
    the host: capped, made anew when a kernel starts and removed when it ends, so a later
    run of the same submission (unsandboxed here, so that it can look) finds nothing."""
    log = tmp_path / "kernel.log"
    secret = uuid.uuid4().hex
    first = grade_cells(
        tmp_path,
        f"""
        import os, sys
        os.write(2, b'{secret}')
        fd = sys.stderr._original_stdstream_copy
        block = b'x' * (64 << 20)
        for _ in range(16):  # a gigabyte, straight to the file
            os.write(fd, block)
        print(os.path.getsize({str(log)!r}))
        """,
        sandboxed="off",
        log=log,
    )
    size = int(first["outputs"][0][-1]["text"].split()[-1])
    assert 0 < size <= Limits().log + 100, size
    assert not log.exists()
    second = grade_cells(
        tmp_path,
        f"""
        import os
        print(os.path.exists({str(log)!r}) and {secret!r} in open({str(log)!r}).read())
        """,
        sandboxed="off",
        log=log,
    )
    assert texts(second["outputs"][0]).strip().endswith("False")
    log.write_text(secret)  # left over from elsewhere: a new kernel starts a new file
    third = grade_cells(
        tmp_path, f"print({secret!r} in open({str(log)!r}).read())", sandboxed="off", log=log
    )
    assert texts(third["outputs"][0]).strip().endswith("False")


# -- CPU -----------------------------------------------------------------------------------

SPINNERS = """
import os, subprocess, sys, time
spin = "import time\\nend = time.time() + {seconds}\\nwhile time.time() < end: pass"
for _ in range({n}):
    subprocess.Popen([sys.executable, "-c", spin, "{token}"], start_new_session=True)
if os.fork() == 0:  # a double-forked daemon in a session of its own
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", spin, "{token}"])
    os._exit(0)
os.wait()
"""


def spinners(token: str, wait_for: int = 0) -> list[psutil.Process]:
    """The processes tagged ``token`` (after up to 30 s for ``wait_for`` of them to start)."""
    deadline = time.monotonic() + 30
    while True:
        found = [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]
        if len(found) >= wait_for or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def kill_spinners(token: str) -> None:
    for proc in spinners(token):
        with contextlib.suppress(psutil.Error):
            proc.kill()


@needs_cgroups
@pytest.mark.slow  # starts real kernels
def test_everything_a_kernel_starts_stays_in_its_group_and_the_group_goes_with_it(tmp_path):
    token = uuid.uuid4().hex
    for sandboxed in ("auto", "off"):
        proc = start_cells(
            tmp_path,
            SPINNERS.format(n=2, seconds=20, token=token),
            "import time; time.sleep(3)",
            sandboxed=sandboxed,
        )
        try:
            found = spinners(token, wait_for=3)
            assert len(found) == 3
            groups = {Path(f"/proc/{p.pid}/cgroup").read_text() for p in found}
            assert len(groups) == 1 and "autograder-kernel-" in groups.pop()
            assert len(our_groups(proc.pid)) == len(CPU.bases)
            finish(proc)
            assert not spinners(token) and not our_groups(proc.pid)
        finally:
            proc.kill()
            kill_spinners(token)


@needs_cgroups
@pytest.mark.slow  # starts real kernels
def test_a_kernels_group_has_its_cpu_share_and_counts_its_cpu():
    from autograder.kernel.sandbox import LimitedKernelManager

    km = LimitedKernelManager(config=Limits(cpus=0.5).as_config())
    km.limited(["true"])
    try:
        group = km._group
        cpu = group.folders[0]
        quota = (
            (cpu / "cpu.max").read_text().split()[0]
            if CPU.level == cgroups.V2
            else (cpu / "cpu.cfs_quota_us").read_text().strip()
        )
        assert int(quota) == cgroups.PERIOD // 2
        assert group.cpu_seconds() == 0
    finally:
        km._remove_group()
    assert not our_groups(os.getpid())


HONEST = """
import time
time.sleep(2)
wall, cpu = time.perf_counter(), time.process_time()
x = 0
for i in range(15_000_000):
    x += i
print(round((time.perf_counter() - wall) / (time.process_time() - cpu), 2))
"""


def cpu_of(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


def kill_tree(proc: subprocess.Popen) -> None:
    """``proc`` and everything under it (its kernel, even one that left its session)."""
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(proc.pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
    proc.kill()
    proc.communicate()
    if CPU.level != cgroups.NONE:
        cgroups.KernelGroup(CPU.level, our_groups(proc.pid)).remove()


@needs_cgroups
@pytest.mark.slow
def test_a_cpu_hog_gets_one_core_while_an_honest_kernel_is_graded_alongside(tmp_path):
    """Seven processes in sessions of their own spin. Together they get at most the one
    core of their kernel's group, measured over the seconds an honest kernel is graded
    meanwhile, which finishes before them. (How much the hog slows the honest kernel is
    a speed, measured in benchmarks/cpu_fairness.py.)"""
    token = uuid.uuid4().hex
    hog = start_cells(
        tmp_path, SPINNERS.format(n=6, seconds=60, token=token), "while True: pass", timeout=50
    )
    try:
        spinning = spinners(token, wait_for=7)
        assert len(spinning) == 7
        before, start = cpu_of(spinning), time.monotonic()
        run = grade_cells(tmp_path, HONEST)
        hogged = (cpu_of(spinning) - before) / (time.monotonic() - start)
        assert len(spinners(token)) == 7, "the honest kernel ended after the hog"
        printed = "".join(o["text"] for o in run["outputs"][0] if o["name"] == "stdout")
        assert float(printed) > 0, run["outputs"]
        assert hogged < 1.15, hogged
    finally:
        kill_tree(hog)
        kill_spinners(token)
    assert not our_groups(hog.pid)


@needs_cgroups
@pytest.mark.slow  # starts real kernels
def test_a_kernels_cpu_time_counts_all_its_processes(tmp_path):
    token = uuid.uuid4().hex
    try:
        run = grade_cells(
            tmp_path,
            SPINNERS.format(n=3, seconds=30, token=token) + "time.sleep(30)",
            "print('never')",
            limits={"cpu_time": 3},
            timeout=40,
        )
    finally:
        kill_spinners(token)
    assert "used its 3 s of CPU time" in stopped(run["outputs"][0]), run["outputs"]
    assert run["seconds"] < 20


@pytest.mark.slow  # starts real kernels
def test_without_cgroups_each_process_has_its_own_cpu_time(tmp_path, monkeypatch):
    monkeypatch.setenv(cgroups.CPU_ENV, "none")
    run = grade_cells(
        tmp_path, "while True: pass", "print('never')", limits={"cpu_time": 3}, timeout=40
    )
    assert run["events"] == ["died"], run["outputs"]
    assert run["seconds"] < 20


def test_grade_says_in_one_line_when_cpu_is_not_confined_and_require_refuses(monkeypatch):
    monkeypatch.setenv(cgroups.CPU_ENV, "none")
    cgroups.cpu_status.cache_clear()
    try:
        out = io.StringIO()
        mode = sandbox.check_for_grading("auto", out)
        assert mode == (
            "require" if sandbox.sandbox_status().level == sandbox.BUBBLEWRAP else "off"
        )
        lines = out.getvalue().splitlines()
        assert len(lines) == 1 and "cpu: not confined" in lines[0], lines
        with pytest.raises(sandbox.SandboxUnavailable, match="--require-sandbox"):
            sandbox.check_for_grading("require", io.StringIO())
        quiet = io.StringIO()
        assert sandbox.check_for_grading("off", quiet) == "off" and not quiet.getvalue()
    finally:
        monkeypatch.undo()
        cgroups.cpu_status.cache_clear()


def test_cgroup_v2_groups_go_where_the_cpu_controller_is_delegated(tmp_path, monkeypatch):
    """(This machine has cgroup v1: v2 is checked on a folder shaped like one.) A grader
    that moved itself to its leaf makes kernels' groups beside it, capped by cpu.max."""
    scope = tmp_path / "user.slice" / "grade.scope"
    (scope / cgroups.LEAF).mkdir(parents=True)
    (scope / "cgroup.controllers").write_text("cpu memory pids\n")
    (scope / "cgroup.subtree_control").write_text("cpu\n")
    (tmp_path / "cgroup.controllers").write_text("memory pids\n")
    monkeypatch.setattr(cgroups, "_own", lambda _: f"/user.slice/grade.scope/{cgroups.LEAF}")
    monkeypatch.setattr(cgroups, "_trial", lambda base, files: None)
    assert cgroups._v2_base(str(tmp_path), "/") == (scope, "")
    status = cgroups.CpuStatus(cgroups.V2, bases=(str(scope),))
    monkeypatch.setattr(cgroups, "cpu_status", lambda: status)
    group = cgroups.KernelGroup.create(1.5)
    assert group.folders[0].parent == scope
    assert (group.folders[0] / "cpu.max").read_text() == f"{150_000} {cgroups.PERIOD}"
    (group.folders[0] / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 1\n")
    assert group.cpu_seconds() == 2.5
    (scope / "cgroup.controllers").write_text("memory pids\n")
    base, why = cgroups._v2_base(str(tmp_path), "/")
    assert base is None and "no cpu controller" in why


@pytest.mark.slow
def test_local_workers_have_a_memory_bound(tmp_path):
    from autograder.grade.cluster import WORKER_MEMORY, Cluster

    cluster = Cluster(None, 1, tmp_path, f"test-{uuid.uuid4().hex}")
    cluster.start()
    try:
        workers = cluster.client().scheduler_info()["workers"].values()
        assert [w["memory_limit"] for w in workers] == [WORKER_MEMORY]
    finally:
        cluster.close()


# -- end to end ------------------------------------------------------------------------------

A = "01_value"
TOKEN = uuid.uuid4().hex
ATTACKS = {
    "hog": SPINNERS.format(n=8, seconds=90, token=TOKEN) + "\nwhile True: pass",
    "big_message": "from IPython.display import display\n"
    "display({'text/plain': 'x' * (200 << 20)}, raw=True)",
    "long_traceback": "raise ValueError('v' * (50 << 20))",
    "log_flood": "import os, sys\nfd = sys.stderr._original_stdstream_copy\n"
    "for _ in range(16):\n    os.write(fd, b'x' * (64 << 20))",
    "update_storm": "from IPython.display import display\n"
    "h = display({'text/plain': 'a'}, raw=True, display_id='d')\n"
    "for _ in range(200):\n    display({'text/plain': 'a'}, raw=True, "
    "display_id='d')\nfor _ in range(30):\n    h.update({'text/plain': "
    "'u' * 100_000}, raw=True)",
}


def grade(course: Path, *args, env=None):
    env = dict(
        os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]), **(env or {})
    )
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", A, *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode in (0, 1), proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


@pytest.mark.slow
@pytest.mark.xdist_group("grading")
def test_attackers_graded_alongside_an_honest_student_do_not_harm_it(tmp_path):
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    name = notebook_path(SOLUTIONS, A).name
    limits = ["--cell-timeout", "30", "--wall-limit", "120", "--jobs", "2"]

    def submit(student: str, code: str | None = None):
        nb = nbformat.from_dict(json.loads(json.dumps(solution)))
        if code is not None:
            nb.cells.insert(1, nbformat.v4.new_code_cell(code))
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / name)

    submit("honest")
    for student, code in ATTACKS.items():
        submit(student, code)
    proc = grade(root, *limits)
    recs = records(root)
    assert set(recs) == {"honest", *ATTACKS}, proc.stdout[-3000:]
    honest = recs["honest"]
    assert honest["score"] == honest["max_score"] > 0
    for student in ATTACKS:
        nb = nbformat.read(root / "autograded" / student / A / name, as_version=4)
        size = max(len(json.dumps(c.get("outputs", []))) for c in nb.cells)
        assert size < Limits().output + 20_000, (student, size)
    assert not spinners(TOKEN)
    assert not [
        p
        for base in CPU.bases
        for p in Path(base).glob("autograder-kernel-*")
        if not psutil.pid_exists(int(p.name.split("-")[2]))
    ]


@pytest.mark.slow
@pytest.mark.xdist_group("grading")
def test_grade_says_when_cpu_is_not_confined_and_refuses_to_grade_if_required(tmp_path):
    course = ScratchCourse(tmp_path / "course", [A])
    folder = course.path / "submitted" / "ann" / A
    folder.mkdir(parents=True)
    nbformat.write(
        nbformat.read(notebook_path(SOLUTIONS, A), as_version=4),
        folder / notebook_path(SOLUTIONS, A).name,
    )
    env = dict(
        os.environ,
        PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]),
        **{cgroups.CPU_ENV: "none"},
    )
    command = [sys.executable, "-m", "autograder", "grade", A, "--cell-timeout", "30"]
    refused = subprocess.run(
        [*command, "--require-sandbox"],
        cwd=course.path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert refused.returncode == 2 and "CPU cannot be confined" in refused.stderr
    assert not records(course.path)
    graded = subprocess.run(
        command, cwd=course.path, env=env, capture_output=True, text=True, timeout=600
    )
    said = [line for line in graded.stdout.splitlines() if "not confined" in line]
    assert len(said) == 1, graded.stdout[-3000:]
    rec = records(course.path)["ann"]
    assert rec["score"] == rec["max_score"] > 0
