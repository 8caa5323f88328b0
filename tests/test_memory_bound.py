"""One bound on all of a kernel's memory and on its processes (issue 40, class 5).

A kernel's memory is one cgroup's (``memory.max``, or ``memory.limit_in_bytes`` in v1):
its children and what it writes to its in-memory ``/tmp``, home, ``/dev/shm`` and memfd
files all count, and its processes are bounded by ``pids.max`` even when grading as root;
the fallback (no memory controller) caps the sandbox's tmpfs at a quarter of the memory.
Kernels run with GuardedExecute in a process of their own, as in a grading worker, with
small limits (512 MiB) so that nothing here holds more than about 1.5 GB, even on a
grader without the bound.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import ROOT

from autograder.grade.notes import compose_notes
from autograder.kernel import bounds, bwrap, cgroups, sandbox
from autograder.kernel.limits import GiB, Limits
from autograder.messages import Event, NotebookResult, Result

MiB = 1024**2
MEMORY = 512 * MiB
MEM = cgroups.memory_status()
PIDS = cgroups.pids_status()
needs_memory = pytest.mark.skipif(
    MEM.level == cgroups.NONE, reason=f"no memory controller here: {MEM.reason}"
)
needs_pids = pytest.mark.skipif(
    PIDS.level == cgroups.NONE, reason=f"no pids controller here: {PIDS.reason}"
)
needs_bwrap = pytest.mark.skipif(
    sandbox.sandbox_status().level != sandbox.BUBBLEWRAP, reason="no sandbox here"
)

RUNNER = """
import json, sys
import nbformat
from autograder.kernel.limits import Limits
from autograder.preprocessors.execute import RUNS, GuardedExecute
spec = json.loads(sys.argv[1])
nb = nbformat.v4.new_notebook(
    cells=[nbformat.v4.new_code_cell(s) for s in spec["cells"]],
    metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "py"}})
for cell in nb.cells:
    cell.metadata["nbgrader"] = {}
cfg = Limits(cell_timeout=60, sandbox="auto", **spec["limits"]).as_config()
ex = GuardedExecute(config=cfg, shutdown_kernel="immediate", iopub_timeout=10,
                    extra_arguments=["--HistoryManager.hist_file=:memory:"])
ex.preprocess(nb, {"nbgrader": {"notebook": "n"}, "metadata": {"path": spec["folder"]}})
print(json.dumps({
    "events": [[e.kind, e.cell, e.detail] for e in RUNS[-1]["events"]],
    "outputs": ["\\n".join((o.get("text") or o.get("ename", "") + ": " + o.get("evalue", ""))
                           for o in c.outputs) for c in nb.cells]}))
"""


def run_cells(folder, *sources: str, extra_env: dict | None = None, **limits) -> dict:
    """GuardedExecute on ``sources`` in a process of its own, under ``limits``."""
    spec = {
        "cells": [textwrap.dedent(s) for s in sources],
        "limits": {"memory": MEMORY, **limits},
        "folder": str(folder),
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env.update(PYTHONPATH=str(ROOT), **(extra_env or {}))
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(spec)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def note_of(run: dict, limits: Limits) -> list[str]:
    """The notes ``grade`` would write for this run (one notebook, one run)."""
    events = [Event(kind, cell, None, None, detail) for kind, cell, detail in run["events"]]
    result = Result(notebooks={"n": NotebookResult(graded=True, events=events)})
    return [text for text, _ in compose_notes(result, [], limits, None)["n"]]


def leftover_groups() -> list:
    return [
        folder
        for status in (cgroups.cpu_status(), MEM, PIDS)
        for base in status.bases
        for folder in Path(base).glob(f"{cgroups.PREFIX}{os.getpid()}-*")
    ]


# -- fast: the groups, the sizes, what grade says ------------------------------------------


@needs_memory
def test_a_kernels_group_bounds_all_its_memory_and_its_processes():
    km = sandbox.LimitedKernelManager(config=Limits(memory=MEMORY, processes=20).as_config())
    km.limited(["true"])
    try:
        level, folder = km._group.memory
        name = "memory.max" if level == cgroups.V2 else "memory.limit_in_bytes"
        assert int((folder / name).read_text()) == MEMORY
        if PIDS.level != cgroups.NONE:
            assert int((km._group.tasks[1] / "pids.max").read_text()) == 20 + bounds.BASE_TASKS
        assert km.bounds_hit() == (0, 0)
    finally:
        km._remove_group()
    assert not leftover_groups()


def test_the_bound_fits_every_kernel_running_at_once_on_the_machine():
    assert bounds.fit_memory(3 * GiB, 2, total=24 * GiB) == 3 * GiB
    small = bounds.fit_memory(3 * GiB, 4, total=8 * GiB)  # 8 kernels, 8 GiB
    assert small == (8 * GiB - bounds.RESERVE - 4 * bounds.PER_WORKER) // 8 < 3 * GiB
    assert bounds.fit_memory(3 * GiB, 64, total=8 * GiB) == bounds.MIN_MEMORY
    assert bounds.fit_memory(100 * MiB, 64, total=8 * GiB) == 100 * MiB
    fitted, said = bounds.for_grading(Limits(memory=64 * GiB), 2)
    assert fitted.memory < bounds.machine_memory() // 2 and "not the 64 GiB asked" in said
    assert bounds.for_grading(Limits(), None)[0].memory == 3 * GiB  # a cluster: as asked


def test_grade_says_which_bound_applies(monkeypatch):
    said = bounds.describe(Limits(memory=3 * GiB))
    assert said.startswith("memory: 3 GiB per ")
    if MEM.level != cgroups.NONE:
        assert "per kernel, all its processes and in-memory files (cgroup" in said
    fallback = cgroups.CpuStatus(cgroups.NONE, "no memory controller")
    monkeypatch.setattr(cgroups, "memory_status", lambda: fallback)
    monkeypatch.setattr(cgroups, "pids_status", lambda: fallback)
    said = bounds.describe(Limits(memory=512 * MiB))
    assert "512 MiB per process (address space), in-memory files 320 MiB more" in said
    assert "(fallback: no memory controller)" in said
    if os.geteuid() == 0:
        assert "processes: not bounded when grading as root" in said
    else:
        assert "processes: 256 more than the user runs (RLIMIT_NPROC)" in said


def test_the_fallback_caps_in_memory_files_at_a_quarter_of_the_memory(monkeypatch):
    monkeypatch.setattr(cgroups, "memory_status", lambda: cgroups.CpuStatus(cgroups.NONE))
    limits = Limits(memory=512 * MiB)
    assert bounds.scratch_sizes(bwrap.SCRATCH_SIZE, limits) == (128 * MiB, bwrap.SHM_SIZE)
    assert bounds.scratch_sizes(bwrap.SCRATCH_SIZE, Limits())[0] == 768 * MiB
    monkeypatch.setattr(cgroups, "memory_status", lambda: cgroups.CpuStatus(cgroups.V2))
    assert bounds.scratch_sizes(bwrap.SCRATCH_SIZE, limits) == (bwrap.SCRATCH_SIZE,) * 2


def test_a_kernel_killed_at_its_bound_is_noted_as_out_of_memory():
    limits = Limits(memory=MEMORY)
    notes = note_of({"events": [["died", 2, "memory"]]}, limits)
    assert notes == ["cell 3 ran out of memory (limit 512 MiB); later cells were not run"]
    result = Result(notebooks={"n": NotebookResult(graded=True, events=[])})
    history = [Event("died", 2, None, "n", "memory")]
    assert compose_notes(result, history, limits, None)["n"] == [
        ("cell 3 ran out of memory (limit 512 MiB) and was skipped; the rest was graded", True)
    ]
    stops = Result(notebooks={"n": NotebookResult(events=[Event("died", 2, detail="memory")])})
    assert stops.stops()[0].detail == "memory"  # kept across runs


# -- slow: kernels that attack the bound ----------------------------------------------------

CHILDREN = """
import os
kids = []
for _ in range(4):  # 1 GiB in all, 256 MiB each: under each process's own limit
    pid = os.fork()
    if pid == 0:
        try:
            block = b"x" * (256 * 1024 * 1024)
        finally:
            os._exit(0)
    kids.append(pid)
codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]
print("children:", codes)
"""


@needs_memory
@pytest.mark.slow
def test_children_each_allocating_share_the_kernels_one_bound(tmp_path):
    run = run_cells(tmp_path, CHILDREN, "print('graded on')")
    assert "-9" in run["outputs"][0], run  # the OOM killer took children, not the machine
    assert run["outputs"][1].strip() == "graded on"
    assert ["memory", 0, None] in run["events"]
    assert note_of(run, Limits(memory=MEMORY)) == ["cell 1 ran out of memory (limit 512 MiB)"]
    assert not leftover_groups()


WRITE = """
import os
chunk, written = b"x" * (16 * 1024 * 1024), 0
try:
    with open(os.path.join({place}, "big"), "wb") as fh:
        for _ in range(256):  # 4 GiB
            fh.write(chunk)
            fh.flush()
            written += len(chunk)
finally:
    print("written", written)
"""


@needs_memory
@needs_bwrap
@pytest.mark.slow
@pytest.mark.parametrize("place", ["'/tmp'", "os.environ['HOME']", "'/dev/shm'"])
def test_writing_4_gb_to_in_memory_files_hits_the_kernels_bound(tmp_path, place):
    run = run_cells(tmp_path, "print('started')", WRITE.format(place=place), "print('after')")
    assert ["died", 1, "memory"] in run["events"], run
    assert note_of(run, Limits(memory=MEMORY)) == [
        "cell 2 ran out of memory (limit 512 MiB); later cells were not run"
    ]
    assert not leftover_groups()


MEMFD = """
import os
held = []
for _ in range(3):  # 1.5 GiB of files without a mount, beyond any tmpfs size
    fd = os.memfd_create("held")
    for _ in range(32):
        os.write(fd, b"x" * (16 * 1024 * 1024))
    held.append(fd)
print("held", len(held))
"""


@needs_memory
@pytest.mark.slow
def test_memfd_files_no_tmpfs_caps_count_against_the_bound(tmp_path):
    run = run_cells(tmp_path, MEMFD, "print('after')")
    assert ["died", 0, "memory"] in run["events"], run
    assert "held 3" not in run["outputs"][0]
    assert not leftover_groups()


FORKS = """
import os, time
top = os.getpid()
for _ in range(8):  # 256 processes wanted
    try:
        os.fork()
    except OSError:
        pass
if os.getpid() != top:
    time.sleep(4)
    os._exit(0)
time.sleep(1)
print("processes", sum(name.isdigit() for name in os.listdir("/proc")))
"""


@needs_pids
@needs_bwrap
@pytest.mark.slow
def test_a_fork_bomb_is_bounded_by_the_kernels_process_count_even_as_root(tmp_path):
    run = run_cells(tmp_path, FORKS, "print('graded on')", processes=16)
    seen = int(run["outputs"][0].split()[-1])  # its PID namespace: only its own
    assert 16 < seen <= 16 + bounds.BASE_TASKS, run
    assert run["outputs"][1].strip() == "graded on"
    assert ["processes", 0, None] in run["events"]
    assert note_of(run, Limits(processes=16)) == [
        f"cell 1 hit the limit on processes ({16 + bounds.BASE_TASKS} per kernel)"
    ]
    assert not leftover_groups()


@needs_bwrap
@pytest.mark.slow
def test_the_fallback_bounds_in_memory_files_by_the_tmpfs_size(tmp_path):
    env = {cgroups.MEMORY_ENV: "none"}  # 1 GiB: a kernel's address space needs 650 MB
    run = run_cells(tmp_path, WRITE.format(place="'/tmp'"), extra_env=env, memory=GiB)
    written = int(run["outputs"][0].split("written")[1].split()[0])
    assert written <= GiB // 4, run
    assert "No space left on device" in run["outputs"][0]
