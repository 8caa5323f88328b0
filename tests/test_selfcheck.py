"""The students' self-check: ``self_check()`` (last cell of every lesson) and
``python -m autograder self-check``: a progress table of every notebook's visible checks."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from helpers import NOTEBOOKS, ROOT, SOLUTIONS, SOURCE

SHARED = SOURCE / ".shared" / "coursekit.py"
SELF_CHECK_CELL = "from coursekit import self_check\nself_check()"
SKIPPED = "self_check: skipped"


def lessons() -> list[str]:
    return sorted(p.name for p in NOTEBOOKS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def student_env() -> dict[str, str]:
    """This environment as a student's would be: no grading switch set."""
    env = dict(os.environ)
    env.pop("COURSEKIT_NO_SELF_CHECK", None)
    env["PATH"] = os.pathsep.join([str(ROOT / ".venv" / "bin"), env.get("PATH", "")])
    return env


def self_check_cli(folder) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", "self-check", str(folder)],
        cwd=ROOT, env=student_env(), capture_output=True, text=True, timeout=600,
    )


def rows(stdout: str) -> list[str]:
    """The table's exercise rows, without their indent."""
    return [line.strip() for line in stdout.splitlines() if line.lstrip()[:1] in ("✓", "✗")]


def check_cells(folder) -> int:
    return sum(
        bool(c.metadata.get("nbgrader", {}).get("grade"))
        for path in folder.glob("*/*.ipynb")
        for c in nbformat.read(path, as_version=4).cells
    )


def load_coursekit():
    spec = importlib.util.spec_from_file_location("_coursekit_test", SHARED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def solved_copy(tmp_path):
    """A copy of notebooks/ with every notebook replaced by its solution."""
    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for path in work.glob("*/*.ipynb"):
        solved = SOLUTIONS / path.parent.name / path.name
        if not solved.exists():
            pytest.skip(f"no solutions/{path.parent.name}/{path.name}: run make generate")
        shutil.copy(solved, path)
    return work


# ---- fast ----------------------------------------------------------------------------


@pytest.mark.parametrize("lesson", sorted(p.name for p in SOURCE.iterdir()
                                          if p.is_dir() and not p.name.startswith(".")))
def test_every_lesson_ends_with_the_self_check_cell(lesson):
    for path in sorted((SOURCE / lesson).glob("*.ipynb")):
        code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        assert code, f"{path.name} has no code cells"
        lines = [line.strip() for line in code[-1].source.splitlines() if line.strip()]
        assert lines == SELF_CHECK_CELL.splitlines(), (
            f"source/{lesson}/{path.name}: the last code cell must be {SELF_CHECK_CELL!r}"
        )
        assert not code[-1].metadata.get("nbgrader", {}).get("grade"), "not a graded cell"


def test_self_check_does_nothing_while_grading(monkeypatch, capsys):
    kit = load_coursekit()
    monkeypatch.setenv("COURSEKIT_NO_SELF_CHECK", "1")
    monkeypatch.setattr(kit, "self_check_table", lambda *a, **k: pytest.fail("ran the table"))
    kit.self_check()
    out = capsys.readouterr()
    assert out.out.startswith(SKIPPED) and out.out.count("\n") == 1
    assert out.err == ""


def test_grading_kernels_turn_self_check_off():
    """Grading kernels keep their history in memory (nbgrader_config.py), which is how
    coursekit.self_check() knows to do nothing there."""
    from autograder.course import nbgrader_config

    assert "--HistoryManager.hist_file=:memory:" in nbgrader_config().Execute.extra_arguments


def test_self_check_outside_a_course_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    kit = load_coursekit()
    monkeypatch.delenv("COURSEKIT_NO_SELF_CHECK", raising=False)
    monkeypatch.chdir(tmp_path)
    kit.self_check()
    out = capsys.readouterr()
    assert out.out.startswith("self_check: no lesson folders") and out.out.count("\n") == 1
    assert out.err == ""


def test_self_check_without_nbclient_says_how_to_install(monkeypatch, capsys):
    kit = load_coursekit()
    monkeypatch.delenv("COURSEKIT_NO_SELF_CHECK", raising=False)
    monkeypatch.setitem(sys.modules, "nbclient", None)  # import nbclient -> ImportError
    kit.self_check()
    assert "pip install nbclient" in capsys.readouterr().out


def test_cli_on_an_empty_folder_exits_2(tmp_path):
    proc = self_check_cli(tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no lesson folders" in proc.stdout


# ---- running real notebooks ----------------------------------------------------------


@pytest.mark.slow
def test_self_check_skips_in_a_kernel_run_by_nbclient(tmp_path):
    """nbgrader validate, nbconvert --execute and generate run notebooks with nbclient:
    the self-check cell must not start running every notebook there."""
    from nbclient import NotebookClient

    lesson = tmp_path / "course" / "01_x"
    lesson.mkdir(parents=True)
    shutil.copy(SHARED, lesson / "coursekit.py")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SELF_CHECK_CELL)])
    nbformat.write(nb, lesson / "x.ipynb")
    NotebookClient(nb, timeout=60, kernel_name="python3",
                   resources={"metadata": {"path": str(lesson)}}).execute(env=student_env())
    (output,) = nb.cells[0].outputs
    assert output.output_type == "stream" and output.name == "stdout"
    assert output.text.startswith(SKIPPED)


@pytest.mark.slow
def test_self_check_cell_in_an_interactive_kernel_prints_the_table(solved_copy, tmp_path):
    """What a student sees: the cell run in a JupyterLab-like kernel, in a lesson folder."""
    from jupyter_client.manager import start_new_kernel

    lesson = solved_copy / lessons()[0]
    env = dict(student_env(), IPYTHONDIR=str(tmp_path / "ipython"))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(lesson), env=env)
    streams: dict[str, str] = {"stdout": "", "stderr": ""}
    errors = []

    def on_output(msg):
        if msg["msg_type"] == "stream":
            streams[msg["content"]["name"]] += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            errors.append(msg["content"])

    try:
        kc.execute_interactive(SELF_CHECK_CELL, output_hook=on_output, timeout=600)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not errors and streams["stderr"] == ""
    table = rows(streams["stdout"])
    assert table and all(line.startswith("✓") for line in table), streams["stdout"]
    assert len(table) == check_cells(solved_copy)
    assert "exercises pass their visible checks" in streams["stdout"]


@pytest.mark.slow
def test_cli_on_solutions_passes_everything(solved_copy):
    proc = self_check_cli(solved_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = rows(proc.stdout)
    assert len(table) == check_cells(solved_copy), proc.stdout
    assert all(line.startswith("✓ ") for line in table), proc.stdout
    n = len(table)
    assert f"{n} of {n} exercises pass" in proc.stdout
    assert all(len(line) < 90 for line in proc.stdout.splitlines())


@pytest.mark.slow
def test_cli_on_the_blank_release_fails_every_exercise_with_one_line(tmp_path):
    work = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    proc = self_check_cli(work)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert all(len(line) < 90 for line in lines), proc.stdout
    table = rows(proc.stdout)
    assert len(table) == check_cells(work)
    assert all(line.startswith("✗ ") for line in table), proc.stdout
    stripped = [line.strip() for line in lines]
    for row in table:  # the message is on the row, or alone on the next line
        parts = row.split(maxsplit=2)
        message = parts[2] if len(parts) == 3 else stripped[stripped.index(row) + 1]
        assert message and not message.startswith(("✓", "✗")), row
        assert "Traceback" not in message
    assert f"0 of {len(table)} exercises pass" in proc.stdout
