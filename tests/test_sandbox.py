"""Grading kernels under bubblewrap (autograder/kernel/sandbox.py).

With nbclient directly: what a sandboxed kernel can see, write, reach and kill, that it
leaves nothing behind, that the limits still hold, and that numpy, matplotlib and Graphviz
work inside. The fallback ("none") is forced with AUTOGRADER_BWRAP. End to end (slow):
`python -m autograder grade` on a class of attacks, and without a sandbox.

These tests check operating-system effects, never the scores of honest students: whether
hidden tests run inside the kernel is not the sandbox's business.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import nbformat
import psutil
import pytest
from helpers import (
    ROOT,
    SOLUTIONS,
    VENV_BIN,
    ScratchCourse,
    gradebook_scores,
    notebook_path,
    records,
)
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from traitlets.config import Config

from autograder.kernel import bwrap, cgroups, sandbox
from autograder.kernel.limits import Limits
from autograder.kernel.sandbox import SandboxedKernelManager, sandbox_status

STATUS = sandbox_status()
needs_bwrap = pytest.mark.skipif(
    STATUS.level != sandbox.BUBBLEWRAP, reason=f"no sandbox here: {STATUS.reason}"
)
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
MiB = 1024**2


def notebook(*sources: str) -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_code_cell(textwrap.dedent(s)) for s in sources]
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})


def client(nb, folder: Path, timeout: int = 60, **config) -> NotebookClient:
    cfg = Config()
    for name, value in config.items():
        setattr(cfg.SandboxedKernelManager, name, value)
    return NotebookClient(
        nb,
        kernel_manager_class=SandboxedKernelManager,
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        config=cfg,
        resources={"metadata": {"path": str(folder)}},
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
    )


def run(folder: Path, *sources: str, **kw) -> nbformat.NotebookNode:
    nb = notebook(*sources)
    client(nb, folder, **kw).execute()
    return nb


def stdout(cell) -> str:
    return "".join(
        o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stdout"
    )


def stderr(cell) -> str:
    return "".join(
        o.get("text", "") for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"
    )


def errors(cell) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for o in cell.outputs if o.output_type == "error"]


def answer(cell):
    """The JSON a probe cell printed last."""
    assert not errors(cell), errors(cell)
    return json.loads(stdout(cell).strip().splitlines()[-1])


def leftovers() -> set[str]:
    """Sandbox folders in /tmp of processes that are gone (tests run side by side)."""
    return {
        p.name
        for p in Path(tempfile.gettempdir()).glob("autograder-*-*")
        if not psutil.pid_exists(int(p.name.split("-")[1]))
    }


def our_sandboxes() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"autograder-{os.getpid()}-*")}


def processes_with(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if token in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return [p for p in found if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.fixture
def folder(tmp_path):
    """A notebook's folder inside a course copy, next to the course's private files."""
    course = tmp_path / "course"
    work = course / "autograded" / "alice" / "01_value"
    work.mkdir(parents=True)
    (work / "coursekit.py").write_text("GIVEN = 42\n")
    (work / "data").mkdir()
    (work / "data" / "points.csv").write_text("1,2\n")
    (work / "value.ipynb").write_text("{}")
    (course / "gradebook.db").write_text("grades")
    (course / "source").mkdir()
    (course / "source" / "answers.txt").write_text("q1: c")
    return work


# -- inside the sandbox ------------------------------------------------------------------------


PROBE_FILES = """
import json, os, sys, glob
def writable(path):
    try:
        with open(path, "w") as fh:
            fh.write("x")
        return True
    except OSError:
        return False
site = [p for p in sys.path if p.endswith("site-packages")][0]
print(json.dumps({
    "cwd": os.getcwd(), "here": sorted(os.listdir(".")), "data": os.listdir("data"),
    "uid": os.getuid(), "home": os.environ["HOME"],
    "env": sorted(os.environ), "self_check": os.environ.get("COURSEKIT_NO_SELF_CHECK"),
    "pid1_env": open("/proc/1/environ").read(),
    "exists": {p: os.path.exists(p) for p in HOST},
    "writable": {p: writable(p) for p in [
        "here.txt", "/tmp/t.txt", os.path.expanduser("~/h.txt"), "/dev/shm/s",
        "/x.txt", "/etc/x.txt", "/usr/x.txt", "/dev/x",
        os.path.join(site, "evil.pth"), os.path.join(sys.base_prefix, "x.txt"),
        os.path.join(os.path.dirname(sys.argv[sys.argv.index("-f") + 1]), "x.txt")]},
    "given": __import__("coursekit").GIVEN,
}))
"""


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_a_kernel_sees_only_its_copy_of_its_folder_and_writes_only_there(folder, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_WORKER", "secret-marker")
    monkeypatch.setenv("SOME_PASSWORD", "hunter2")
    course = folder.parents[2]
    host = [
        str(ROOT / "autograder"),
        str(ROOT / "source"),
        str(ROOT / "nbgrader_config.py"),
        str(course / "gradebook.db"),
        str(course / "source"),
        str(folder),
        str(Path.home() / ".cache"),
        "/etc/shadow",
    ]
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    nb = run(folder, f"HOST = {host!r}", PROBE_FILES, "open('coursekit.py', 'w').write('')")
    seen = answer(nb.cells[1])
    assert seen["cwd"] == bwrap.WORK and seen["home"] == bwrap.HOME
    assert seen["here"] == ["coursekit.py", "data"]  # no notebook
    assert seen["data"] == ["points.csv"] and seen["given"] == 42
    assert seen["uid"] == bwrap.UID
    assert not any(seen["exists"].values()), seen["exists"]
    assert seen["self_check"] == "1"
    assert not [n for n in seen["env"] if n.startswith("AUTOGRADER") or n == "SOME_PASSWORD"]
    assert "secret-marker" not in seen["pid1_env"] and "hunter2" not in seen["pid1_env"]
    writable = [p for p, ok in seen["writable"].items() if ok]
    expected = ["here.txt", "/tmp/t.txt", f"{bwrap.HOME}/h.txt", "/dev/shm/s"]
    if os.geteuid() != 0:  # the ipc folder is handed to nobody only when grading as root
        expected += [p for p in writable if p.endswith("/ipc/x.txt")]
    assert writable == expected, seen["writable"]
    # The kernel wrote and emptied files in its copy: the real folder did not change.
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_no_network_no_capabilities_no_way_out(folder):
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    try:
        nb = run(
            folder,
            f"""
            import ctypes, json, os, socket
            def fails(f):
                try:
                    f()
                    return False
                except OSError:
                    return True
            libc = ctypes.CDLL(None, use_errno=True)
            caps = {{l.split(":")[0]: int(l.split()[1], 16) for l in open("/proc/self/status")
                    if l.startswith("Cap")}}
            print(json.dumps({{
                "host_port": fails(lambda: socket.create_connection(("127.0.0.1", {port}), 2)),
                "internet": fails(lambda: socket.create_connection(("1.1.1.1", 53), 2)),
                "dns": fails(lambda: socket.getaddrinfo("pypi.org", 443)),
                "interfaces": [n for _, n in socket.if_nameindex()],
                "caps": caps,
                "userns": libc.unshare(0x10000000),  # CLONE_NEWUSER
                "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                "hostname": socket.gethostname(),
            }}))
            """,
        )
    finally:
        listener.close()
    seen = answer(nb.cells[0])
    assert seen["host_port"] and seen["internet"] and seen["dns"]
    assert seen["interfaces"] == ["lo"]
    assert set(seen["caps"].values()) == {0}, seen["caps"]
    assert seen["userns"] == -1
    assert len(seen["pids"]) < 10 and max(seen["pids"]) < 100, seen["pids"]
    assert seen["hostname"] == "grading"


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_killing_every_visible_process_hurts_only_the_kernel(folder):
    bystander = subprocess.Popen(["sleep", "120"])
    try:
        nb = notebook("""
            import os, signal
            os.kill(os.getppid(), signal.SIGKILL)
            for pid in sorted(int(p) for p in os.listdir("/proc") if p.isdigit()):
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            os.kill(os.getpid(), signal.SIGKILL)
            """)
        with pytest.raises(DeadKernelError):
            client(nb, folder, timeout=30).execute()
        assert bystander.poll() is None
        assert psutil.Process().is_running()
    finally:
        bystander.kill()
        bystander.wait()
    assert not our_sandboxes()


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_nothing_outlives_the_kernel(folder):
    token = uuid.uuid4().hex
    nb = notebook(
        f"""
        import os, subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"],
                         start_new_session=True)
        if os.fork() == 0:  # a double-forked daemon
            os.setsid()
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c",
                         "import time; time.sleep(600)", "{token}"])
            os._exit(0)
        os.wait()
        """,
        """
        block = b"x" * (1 << 20)
        for path in ("/tmp/big", "big", os.path.expanduser("~/big")):
            with open(path, "wb") as fh:
                for _ in range(200):
                    fh.write(block)
        print("wrote", sum(os.path.getsize(p) for p in ("/tmp/big", "big")) >> 20)
        """,
    )
    c = client(nb, folder)
    with c.setup_kernel():
        for index, cell in enumerate(nb.cells):
            c.execute_cell(cell, index)
        deadline = time.monotonic() + 10
        while len(processes_with(token)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(processes_with(token)) == 2  # they ran, outside the kernel's group
        assert stdout(nb.cells[1]).strip() == "wrote 400"
        assert len(our_sandboxes()) == 1
    deadline = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(token) == []
    assert our_sandboxes() == set()
    assert not (folder / "big").exists()


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_writable_space_is_capped(folder):
    nb = run(
        folder,
        """
        def fill(path, mib):
            try:
                with open(path, "wb") as fh:
                    for _ in range(mib):
                        fh.write(b"x" * (1 << 20))
                return "ok"
            except OSError as exc:
                return exc.strerror
        print(fill("/tmp/a", 100), fill("/tmp/b", 100), fill("big", 100), fill("/dev/shm/a", 100))
        """,
        scratch_size=150 * MiB,
    )
    full = ["No", "space", "left", "on", "device"]
    from autograder.kernel import bounds  # with a memory cgroup, its bound is /dev/shm's

    shm = ["ok"] if bounds.by_cgroup() else full
    assert stdout(nb.cells[0]).split() == ["ok", *full, "ok", *shm]


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_numpy_matplotlib_and_graphviz_work_quietly(folder):
    nb = run(
        folder,
        """
        import numpy as np
        print(np.linalg.solve(np.eye(2) * 2, np.ones(2)).tolist())
        """,
        """
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots()
        ax.plot([0, 1], [1, 0])
        fig.savefig("plot.png")
        plt.show()
        print("plotted")
        """,
        """
        import subprocess, graphviz
        g = graphviz.Digraph()
        g.edge("a", "b")
        svg = g.pipe(format="svg").decode()
        dot = subprocess.run(["dot", "-V"], capture_output=True, text=True)
        print("<svg" in svg, dot.returncode)
        """,
    )
    for cell in nb.cells:
        assert not errors(cell) and not stderr(cell), (errors(cell), stderr(cell))
    assert stdout(nb.cells[0]).strip() == "[0.5, 0.5]"
    assert "plotted" in stdout(nb.cells[1])
    assert any(o.output_type == "display_data" for o in nb.cells[1].outputs)
    assert stdout(nb.cells[2]).split() == ["True", "0"]


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_an_endless_loop_is_interrupted_and_the_kernel_goes_on(folder):
    nb = run(folder, "x = 1", "while True:\n    pass", "print('alive', x)", timeout=3)
    assert any("KeyboardInterrupt" in e or "CellTimeoutError" in e for e in errors(nb.cells[1]))
    assert stdout(nb.cells[2]).strip() == "alive 1"


@needs_bwrap
@pytest.mark.skipif(cgroups.cpu_status().level == cgroups.NONE, reason="no CPU groups here")
@pytest.mark.slow  # starts real kernels
def test_a_sandboxed_kernel_cannot_leave_its_cpu_group(folder):
    nb = notebook("""
        import ctypes, json, os, subprocess, sys
        os.makedirs("/tmp/cg", exist_ok=True)
        libc = ctypes.CDLL(None, use_errno=True)
        mounted = [libc.mount(b"none", b"/tmp/cg", kind, 0, None) for kind in
                   (b"cgroup2", b"cgroup")]
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                         start_new_session=True)
        print(json.dumps([os.path.exists("/sys/fs/cgroup"), mounted,
                          open("/proc/self/cgroup").read()]))
        """)
    c = client(nb, folder)
    with c.setup_kernel():
        c.execute_cell(nb.cells[0], 0)
        group = c.km._group.folders[0].name
        kernel = psutil.Process(c.km.provisioner.pid)
        inside = [kernel, *kernel.children(recursive=True)]
        assert len(inside) >= 4  # bwrap, its init, the kernel, the sleeper
        assert all(group in Path(f"/proc/{p.pid}/cgroup").read_text() for p in inside)
    exists, mounted, seen = answer(nb.cells[0])
    assert not exists and mounted == [-1, -1] and "autograder" not in seen
    assert not any(Path(base, group).exists() for base in cgroups.cpu_status().bases)


@needs_bwrap
@pytest.mark.slow  # starts real kernels
def test_a_kernel_that_ignores_interrupts_is_killed_with_everything_it_started(folder):
    from autograder.preprocessors.execute import RUNS, GuardedExecute

    token = uuid.uuid4().hex
    nb = notebook(
        f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{token}"],
                         start_new_session=True)
        """,
        """
        import signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            pass
        """,
        "print('never')",
    )
    for cell in nb.cells:
        cell.metadata["nbgrader"] = {}
    limits = Limits(cell_timeout=3, sandbox="require")
    ex = GuardedExecute(
        config=limits.as_config(),
        shutdown_kernel="immediate",
        extra_arguments=["--HistoryManager.hist_file=:memory:"],
    )
    resources = {"nbgrader": {"notebook": "stuck"}, "metadata": {"path": str(folder)}}
    del RUNS[:]
    ex.preprocess(nb, resources)
    assert RUNS[-1]["isolation"] == sandbox.BUBBLEWRAP
    assert [e.kind for e in RUNS[-1]["events"]] == ["stuck"]
    assert errors(nb.cells[2]) and "never" not in stdout(nb.cells[2])
    deadline = time.monotonic() + 10
    while processes_with(token) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with(token) == []
    assert not our_sandboxes()


LIMITED = """
import json, resource, sys
from nbclient import NotebookClient
import nbformat
from autograder.kernel.sandbox import SandboxedKernelManager
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))
resource.setrlimit(resource.RLIMIT_FSIZE, (50 << 20, resource.RLIM_INFINITY))
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sys.argv[2:]],
                              metadata={"kernelspec": {"name": "python3", "language": "python",
                                                       "display_name": "py"}})
NotebookClient(nb, kernel_manager_class=SandboxedKernelManager, allow_errors=True, timeout=60,
               resources={"metadata": {"path": sys.argv[1]}}).execute()
print(json.dumps([[o.get("text") or o.get("ename") for o in c.outputs] for c in nb.cells]))
"""


@needs_bwrap
def test_the_graders_memory_and_file_limits_hold_and_cannot_be_raised(folder):
    """As in a grading worker (which sets them for its kernels), in a process of its own."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            LIMITED,
            str(folder),
            "import resource; print(resource.getrlimit(resource.RLIMIT_AS))",
            "x = bytearray(4 << 30)",
            "resource.setrlimit(resource.RLIMIT_AS, (-1, -1))",
            "open('/tmp/f', 'wb').write(b'x' * (60 << 20))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    outs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert outs[0] == [f"({3 << 30}, {3 << 30})\n"]
    assert outs[1] == ["MemoryError"]
    assert outs[2] == ["ValueError"]
    assert outs[3] == ["OSError"]


# -- what the grader decides -----------------------------------------------------------------


@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    """This process behaves as on a machine without a usable bubblewrap."""

    def use(program: str):
        monkeypatch.setenv(sandbox.BWRAP_ENV, program)
        sandbox.sandbox_status.cache_clear()

    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely "
        "because the kernel does not allow non-privileged user namespaces.' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    yield use, fake
    monkeypatch.undo()
    sandbox.sandbox_status.cache_clear()


def test_without_bubblewrap_the_level_is_none_with_the_reason(no_bwrap, tmp_path):
    use, fake = no_bwrap
    use(str(tmp_path / "missing" / "bwrap"))
    status = sandbox_status()
    assert status.level == sandbox.NONE and "not installed" in status.reason
    use(str(fake))
    status = sandbox_status()
    assert status.level == sandbox.NONE
    assert "No permissions to create new namespace" in status.reason
    assert sandbox.isolation_for("auto") == sandbox.NONE
    assert sandbox.isolation_for("off") == sandbox.NONE
    with pytest.raises(sandbox.SandboxUnavailable, match="not available"):
        sandbox.isolation_for("require")
    assert sandbox.kernel_manager_class(sandbox.NONE) is sandbox.LimitedKernelManager


def test_grade_says_it_in_one_line_or_fails_when_required(no_bwrap, capsys):
    import io

    use, fake = no_bwrap
    use(str(fake))
    out = io.StringIO()
    assert sandbox.check_for_grading("auto", out) == "off"
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].startswith("isolation: none")
    assert "No permissions" in lines[0]
    with pytest.raises(sandbox.SandboxUnavailable, match="--require-sandbox"):
        sandbox.check_for_grading("require", out)
    out = io.StringIO()
    assert sandbox.check_for_grading("off", out) == "off" and out.getvalue() == ""


@needs_bwrap
def test_with_bubblewrap_grade_requires_it_of_its_workers_silently():
    import io

    out = io.StringIO()
    assert sandbox.check_for_grading("auto", out) == "require"
    assert sandbox.check_for_grading("require", out) == "require"
    assert out.getvalue() == ""


def test_binds_are_the_python_environment_and_never_the_course():
    binds = bwrap.environment_binds()
    dests = {dest for _, dest in binds}
    assert sys.prefix in dests or any(sys.prefix.startswith(d + "/") for d in dests)
    real = os.path.realpath(sys.base_prefix)
    assert any(real == src or real.startswith(src + "/") for src, _ in binds)
    root = str(ROOT)
    for src, dest in binds:
        for path in (src, dest):
            assert not (root == path or root.startswith(path.rstrip("/") + "/")), path
            assert not path.startswith((str(ROOT / "autograder"), str(ROOT / "source")))


def test_a_kernel_gets_an_empty_folder_rather_than_the_course(tmp_path):
    assert bwrap.work_folder(None) is None
    assert bwrap.work_folder(str(ROOT)) is None
    assert bwrap.work_folder(str(ROOT.parent)) is None
    assert bwrap.work_folder("/") is None
    assert bwrap.work_folder(str(tmp_path)) == tmp_path.resolve()


def test_startup_files_from_the_course_are_dropped():
    binds = bwrap.environment_binds()
    inside = os.path.join(sys.prefix, "etc", "startup.py")
    cmd = [
        "python",
        "-m",
        "ipykernel_launcher",
        "-f",
        "k.json",
        "--HistoryManager.hist_file=:memory:",
        f"--IPKernelApp.exec_files={[str(ROOT / 'autograder' / 'kernel_startup.py')]!r}",
        f"--IPKernelApp.exec_files={[str(ROOT / 'x.py'), inside]!r}",
    ]
    assert bwrap.kernel_arguments(cmd, binds) == [
        *cmd[:6],
        f"--IPKernelApp.exec_files={[inside]!r}",
    ]


# -- end to end ------------------------------------------------------------------------------

A = "01_value"
LIMITS = ["--cell-timeout", "15", "--wall-limit", "120", "--memory", "2G"]


def grade(course: Path, *args, env=None, codes=(0, 1)):
    env = dict(
        os.environ, PATH=os.pathsep.join([VENV_BIN, os.environ.get("PATH", "")]), **(env or {})
    )
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        cwd=course,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode in codes, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def _environ(proc) -> dict:
    try:
        return proc.environ()
    except (psutil.Error, OSError):
        return {}


def with_cell(nb, source: str):
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.cells.insert(1, nbformat.v4.new_code_cell(textwrap.dedent(source)))
    return nb


def snapshot(folder: Path, skip=()) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not any(part in skip for part in p.relative_to(folder).parts)
    }


def attacks(course: Path, token: str) -> dict[str, str]:
    """Cells that try what students tried, by student name."""
    c = str(course)
    return {
        "reads_course": f"""
            import os
            print("FOUND", os.path.exists({c!r}), sum(len(f) for _, _, f in os.walk({c!r})))
            print(open({c!r} + "/autograder/verdicts/hidden/quiz.py").read())
            """,
        "writes_course": f"""
            for path in ["/autograder/verdicts/hidden/quiz.py", "/source/{A}/coursekit.py",
                         "/nbgrader_config.py", "/submitted/victim/{A}/value.ipynb",
                         "/autograded/victim/{A}/.autograder.json", "/gradebook.db"]:
                try:
                    open({c!r} + path, "w").write("pwned")
                except OSError as exc:
                    print(path, exc)
            import sqlite3
            db = sqlite3.connect({c!r} + "/gradebook.db")
            db.execute("create trigger t after insert on grade begin "
                       "update grade set auto_score = 1000; end")
            db.commit()
            """,
        "plants_startup": """
            import os, site, sys
            startup = os.path.expanduser("~/.ipython/profile_default/startup")
            os.makedirs(startup, exist_ok=True)
            open(os.path.join(startup, "00-evil.py"), "w").write(
                "import builtins; builtins.abs = lambda x: 0")
            for folder in site.getsitepackages() + [site.getusersitepackages()]:
                try:
                    os.makedirs(folder, exist_ok=True)
                    open(os.path.join(folder, "evil.pth"), "w").write(
                        "import builtins; builtins.abs = lambda x: 0")
                except OSError as exc:
                    print(exc)
            """,
        "daemon": f"""
            import os, subprocess, sys
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)", "{token}"],
                             start_new_session=True)
            if os.fork() == 0:
                os.setsid()
                os.execv(sys.executable, [sys.executable, "-c",
                         "import time; time.sleep(900)", "{token}"])
            """,
        "fills_disk": """
            import os
            block = b"x" * (1 << 20)
            for path in ("/tmp/fill", "fill", os.path.expanduser("~/fill")):
                try:
                    with open(path, "wb") as fh:
                        for _ in range(3500):
                            fh.write(block)
                except OSError as exc:
                    print(path, exc)
            """,
        "kills_grader": """
            import os, signal
            os.kill(os.getppid(), signal.SIGKILL)
            for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
                if pid != os.getpid():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            """,
        "network": """
            import socket
            for host in [("1.1.1.1", 53), ("127.0.0.1", 22), ("pypi.org", 443)]:
                try:
                    socket.create_connection(host, 3)
                    print("connected", host)
                except OSError as exc:
                    print(host, exc)
            """,
    }


PROBE_LATER = """
import builtins, os
startup = os.path.expanduser("~/.ipython/profile_default/startup")
print("PROBE", builtins.abs(-3), sorted(os.listdir(startup)) if os.path.isdir(startup) else [])
"""


@pytest.mark.slow
@pytest.mark.xdist_group("grading")
@needs_bwrap
def test_a_class_of_attacks_changes_nothing_outside_each_kernel(tmp_path):
    token = uuid.uuid4().hex
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    name = notebook_path(SOLUTIONS, A).name
    victim = root / "submitted" / "victim" / A
    victim.mkdir(parents=True)
    nbformat.write(solution, victim / name)
    # The victim is graded first, alone: its results must not change after the attacks.
    grade(root, "grade", A, *LIMITS)
    victim_record = records(root)["victim"]
    for student, source in attacks(root, token).items():
        folder = root / "submitted" / student / A
        folder.mkdir(parents=True)
        nbformat.write(with_cell(solution, source), folder / name)
    for i in range(2):  # kernels after the attacks, in the same workers
        folder = root / "submitted" / f"zz_later{i}" / A
        folder.mkdir(parents=True)
        nbformat.write(with_cell(solution, PROBE_LATER), folder / name)
    skip = {"autograded", "gradebook.db", "__pycache__"}
    book_before = gradebook_scores(root)
    course_before = snapshot(root, skip)
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    proc = grade(root, "grade", A, *LIMITS, "--require-sandbox", env={"SANDBOX_TEST_RUN": token})

    recs = records(root)
    assert set(recs) == {p.name for p in (root / "submitted").iterdir()}
    assert {r["isolation"] for r in recs.values()} == {sandbox.BUBBLEWRAP}, proc.stdout
    assert "isolation: none" not in proc.stdout
    # Course files, other students' submissions and results: untouched.
    assert snapshot(root, skip) == course_before
    assert records(root)["victim"] == victim_record
    assert gradebook_scores(root)["victim"] == book_before["victim"]
    import sqlite3

    db = sqlite3.connect(root / "gradebook.db")
    try:
        assert db.execute("select name from sqlite_master where type = 'trigger'").fetchall() == []
    finally:
        db.close()
    # What the attackers saw and did.
    outputs = {}
    for student in recs:
        nb = nbformat.read(root / "autograded" / student / A / name, as_version=4)
        outputs[student] = "\n".join(
            stdout(c) + "\n".join(errors(c)) for c in nb.cells if c.cell_type == "code"
        )
    assert "FOUND False 0" in outputs["reads_course"]
    assert "FileNotFoundError" in outputs["reads_course"]
    assert "connected" not in outputs["network"]
    assert "Read-only file system" in outputs["plants_startup"]
    said = outputs["fills_disk"]
    note = str(recs["fills_disk"].get("note", ""))
    # Files are bounded: by the disk's size, the file size limit, or (in memory: /tmp and
    # home are tmpfs) the kernel's memory bound, which stops the kernel, noted as such.
    stopped = "No space left on device" in said or "File too large" in said
    assert stopped or "out of memory" in note, (said, note)
    for i in range(2):
        assert "PROBE 3 [" in outputs[f"zz_later{i}"], outputs[f"zz_later{i}"]
        assert "evil" not in outputs[f"zz_later{i}"]
    # Nothing of the run is left: its processes and their files in /tmp.
    assert processes_with(token) == []
    assert not [p for p in psutil.process_iter() if _environ(p).get("SANDBOX_TEST_RUN") == token]
    new = set(os.listdir(tempfile.gettempdir())) - tmp_before
    assert not (leftovers() & new), new

    # exports/grades.csv has the isolation of every row.
    grade(root, "export", codes=(0,))
    rows = list(csv.DictReader((root / "exports" / "grades.csv").open(encoding="utf-8")))
    assert {r["isolation"] for r in rows} == {sandbox.BUBBLEWRAP}


@pytest.mark.slow
@pytest.mark.xdist_group("grading")
def test_without_a_sandbox_grade_says_so_and_records_none(tmp_path):
    course = ScratchCourse(tmp_path / "course", [A])
    root = course.path
    solution = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    folder = root / "submitted" / "ann" / A
    folder.mkdir(parents=True)
    nbformat.write(solution, folder / notebook_path(SOLUTIONS, A).name)
    env = {sandbox.BWRAP_ENV: str(tmp_path / "no" / "bwrap")}

    refused = grade(root, "grade", A, *LIMITS, "--require-sandbox", env=env, codes=(2,))
    assert "--require-sandbox" in refused.stderr and "not installed" in refused.stderr
    assert not records(root)

    proc = grade(root, "grade", A, *LIMITS, env=env)
    said = [line for line in proc.stdout.splitlines() if "isolation" in line]
    assert len(said) == 1 and said[0].startswith("isolation: none"), proc.stdout
    assert "not installed" in said[0]
    rec = records(root)["ann"]
    assert rec["isolation"] == sandbox.NONE
    assert rec["score"] == rec["max_score"] > 0  # unsandboxed grading is as before
    grade(root, "export", codes=(0,))
    rows = list(csv.DictReader((root / "exports" / "grades.csv").open(encoding="utf-8")))
    assert [r["isolation"] for r in rows] == [sandbox.NONE]
