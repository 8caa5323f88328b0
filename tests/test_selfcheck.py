"""The students' self-check: ``self_check()`` (last cell of every lesson) and
``python -m autograder self-check``: a progress table of every notebook's visible checks."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import time
import types

import nbformat
import pytest
from helpers import (
    KIT_MODULES,
    NOTEBOOKS,
    ROOT,
    SOLUTIONS,
    SOURCE,
    autograder_cli,
    copy_kit,
    load_kit,
)

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
    return autograder_cli("self-check", str(folder), cwd=ROOT, env=student_env(), timeout=600)


def rows(stdout: str) -> list[str]:
    """The table's exercise rows, without their indent."""
    return [line.strip() for line in stdout.splitlines() if line.lstrip()[:1] in ("✓", "✗")]


def check_cells(folder, pattern: str = "*/*.ipynb") -> int:
    return sum(
        bool(c.metadata.get("nbgrader", {}).get("grade"))
        for path in folder.glob(pattern)
        for c in nbformat.read(path, as_version=4).cells
    )


def load_selfcheck():
    return load_kit("checkkit")


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
        copy_kit(path.parent)  # this session's kit
    return work


# ---- fast ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "lesson", sorted(p.name for p in SOURCE.iterdir() if p.is_dir() and not p.name.startswith("."))
)
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
    kit = load_selfcheck()
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
    kit = load_selfcheck()
    monkeypatch.delenv("COURSEKIT_NO_SELF_CHECK", raising=False)
    monkeypatch.chdir(tmp_path)
    kit.self_check()
    out = capsys.readouterr()
    assert out.out.startswith("self_check: no lesson folders") and out.out.count("\n") == 1
    assert out.err == ""


def test_full_self_check_without_nbclient_says_how_to_install(monkeypatch, capsys):
    kit = load_selfcheck()
    monkeypatch.delenv("COURSEKIT_NO_SELF_CHECK", raising=False)
    monkeypatch.setitem(sys.modules, "nbclient", None)  # import nbclient -> ImportError
    kit.self_check(full=True)
    assert "pip install nbclient" in capsys.readouterr().out


# ---- the quick self-check: this notebook's checks again, other lessons one line each ---


class FakeShell:
    """What self_check reads from IPython: the cells run so far, and their namespace."""

    def __init__(self):
        self.user_ns: dict = {"__name__": "__main__"}
        self.history_manager = types.SimpleNamespace(input_hist_raw=[""], hist_file="h.db")

    def run(self, cell_source: str) -> bool:
        """Run a cell as a kernel would; False if it raised."""
        self.history_manager.input_hist_raw.append(cell_source)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(cell_source, "<cell>", "exec"), self.user_ns)
        except Exception:
            return False
        return True


def run_like_run_all(shell: FakeShell, path, monkeypatch) -> None:
    """Run the notebook's code cells in order, stopping at the first error (as Run All
    does), except the final self-check cell; in the lesson folder, with its coursekit."""
    monkeypatch.chdir(path.parent)
    monkeypatch.syspath_prepend(str(path.parent))
    for kit in KIT_MODULES:
        monkeypatch.delitem(sys.modules, kit, raising=False)
    code = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    for cell in code[:-1]:
        if not shell.run(cell.source):
            break


@pytest.fixture
def course(tmp_path):
    """A student's course folder: the blank release, with this session's coursekit."""
    work = tmp_path / "my-work"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for lesson in lessons():
        copy_kit(work / lesson)
    return work


def quick_check(kit, shell, monkeypatch) -> list[str]:
    monkeypatch.delenv("COURSEKIT_NO_SELF_CHECK", raising=False)
    monkeypatch.setattr(kit, "_shell", lambda: shell)
    lines: list[str] = []
    kit.self_check_overview(show=lines.append)
    return lines


def test_quick_self_check_of_a_solved_lesson(course, monkeypatch):
    first = lessons()[0]
    path = next((course / first).glob("*.ipynb"))
    shutil.copy(SOLUTIONS / first / path.name, path)
    kit, shell = load_selfcheck(), FakeShell()
    run_like_run_all(shell, path, monkeypatch)
    start = time.perf_counter()
    lines = quick_check(kit, shell, monkeypatch)
    print(f"quick self-check of solved {first}: {time.perf_counter() - start:.3f} s")
    n = check_cells(course / first, "*.ipynb")
    assert lines[0] == f"{first} (this notebook, run again now): {n} of {n} pass", lines
    assert all(line.startswith("  ✓ ") for line in lines[1 : n + 1]), lines
    others = lines[n + 2 : -1]
    assert lines[n + 1] == "Other lessons, as last saved:"
    assert [line.split() for line in others] == [
        [name, "not", "started"] for name in lessons()[1:]
    ], lines
    assert lines[-1] == f"Course: {n} of {check_cells(course)} exercises pass their visible checks."
    assert all(len(line) < 90 for line in lines)


def test_quick_self_check_of_a_lesson_stopped_at_its_first_failing_check(course, monkeypatch):
    first = lessons()[0]
    path = next((course / first).glob("*.ipynb"))
    kit, shell = load_selfcheck(), FakeShell()
    run_like_run_all(shell, path, monkeypatch)  # stops at the first check cell
    lines = quick_check(kit, shell, monkeypatch)
    table = rows("\n".join(lines))
    assert table[0].startswith("✗ ") and table[0].endswith("not written yet")
    assert all(line.startswith("✗ ") and line.endswith("not run yet") for line in table[1:])
    assert len(table) == check_cells(course / first, "*.ipynb")


def test_quick_self_check_before_the_cells_ran_reads_the_saved_notebook(course, monkeypatch):
    second = lessons()[1]
    path = next((course / second).glob("*.ipynb"))
    shutil.copy(SOLUTIONS / second / path.name, path)  # executed and saved, all ✓
    kit, shell = load_selfcheck(), FakeShell()
    monkeypatch.chdir(path.parent)
    lines = quick_check(kit, shell, monkeypatch)
    n = check_cells(course / second, "*.ipynb")
    assert (
        lines[0] == f"{second} (this notebook, as last saved: run its cells first): {n} of {n} pass"
    ), lines


def test_other_lessons_get_one_line_from_their_saved_outputs(course, monkeypatch):
    first, second = lessons()[:2]
    path = next((course / second).glob("*.ipynb"))
    nb = nbformat.read(SOLUTIONS / second / path.name, as_version=4)
    checks = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    checks[0].outputs = [
        nbformat.v4.new_output(
            "error", ename="CheckFailed", evalue="x.grad: expected 1, got 0.", traceback=[]
        )
    ]
    checks[1].outputs, checks[1].execution_count = [], None
    nbformat.write(nb, path)
    kit = load_selfcheck()
    monkeypatch.chdir(course)  # no notebook in hand: every lesson gets one line
    lines = quick_check(kit, FakeShell(), monkeypatch)
    n = len(checks)
    assert lines[0] == "Lessons, as last saved:"
    assert lines[1].split() == [first, "not", "started"]
    assert lines[2].split() == [second, f"{n - 2}/{n}", "✓,", "1", "✗"], lines
    assert len(lines) == len(lessons()) + 2


def test_the_students_guide_shows_what_the_self_check_prints(course, monkeypatch):
    """docs/students.md's example, made for real: lesson 1 with w1.grad slipped in
    backprop_by_hand and the last check cell not run yet, nothing else started."""
    doc = (ROOT / "docs" / "students.md").read_text()
    shown = doc.split("prints something like:\n\n```\n", 1)[1].split("```", 1)[0]
    first = lessons()[0]
    path = next((course / first).glob("*.ipynb"))
    nb = nbformat.read(SOLUTIONS / first / path.name, as_version=4)
    (slip,) = [c for c in nb.cells if c.source.startswith("def backprop_by_hand")]
    slip.source = slip.source.replace("w1.grad = g.x1.data *", "w1.grad = g.w1.data *")
    assert "g.w1.data *" in slip.source
    nbformat.write(nb, path)
    kit, shell = load_selfcheck(), FakeShell()
    monkeypatch.chdir(path.parent)
    monkeypatch.syspath_prepend(str(path.parent))
    for kit_module in KIT_MODULES:
        monkeypatch.delitem(sys.modules, kit_module, raising=False)
    code = [c for c in nb.cells if c.cell_type == "code"]
    last_check = max(i for i, c in enumerate(code) if c.source.startswith('"""Check'))
    for cell in code[:last_check]:  # from the last check cell on, nothing is run
        shell.run(cell.source)
    lines = quick_check(kit, shell, monkeypatch)
    total = check_cells(course)
    assert shown.replace("of 73 exercises", f"of {total} exercises").splitlines() == lines


def test_a_check_that_loops_forever_is_stopped(monkeypatch):
    kit = load_selfcheck()
    monkeypatch.setattr(kit, "CHECK_SECONDS", 0.2)
    ok, message = kit._run_check("while True:\n    pass", {})
    assert not ok and "did not finish in time" in message


def test_rows_keep_columns_aligned_and_short():
    kit = load_selfcheck()
    long_message = "d(a * b + c)/da at a=1, b=2, c=3: expected 2, got 3. " * 3
    results = [
        ("q1", True, ""),
        ("topological_order", False, "not run yet"),
        ("a_very_long_exercise_name_indeed", False, long_message),
        ("zero_grad", False, long_message),
    ]
    lines = kit._rows(results)
    assert all(len(line) < 90 for line in lines), lines
    column = lines[1].index("not run yet")
    messages = [line for line in lines if not line.lstrip().startswith(("✓", "✗"))]
    assert messages and all(len(line) - len(line.lstrip()) == column for line in messages)
    (zero,) = [line for line in lines if "✗ zero_grad" in line]
    assert zero.index("d(a") == column


def test_exception_text_in_check_messages_is_not_cut_short():
    kit = load_kit("coursekit")

    def broken():
        raise ValueError("the learning rate must be a positive number below 10, got -0.5 here")

    with pytest.raises(kit.CheckFailed) as info:
        kit.call(broken)
    text = str(info.value)
    assert "got -0.5 here" in " ".join(text.split())
    assert all(len(line) < 90 for line in text.splitlines())


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
    copy_kit(lesson)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(SELF_CHECK_CELL)])
    nbformat.write(nb, lesson / "x.ipynb")
    NotebookClient(
        nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": str(lesson)}}
    ).execute(env=student_env())
    (output,) = nb.cells[0].outputs
    assert output.output_type == "stream" and output.name == "stdout"
    assert output.text.startswith(SKIPPED)


@pytest.mark.slow
def test_self_check_cell_in_an_interactive_kernel_is_quick_and_short(solved_copy, tmp_path):
    """What a student sees: the solved lesson run cell by cell in a JupyterLab-like kernel
    (a history file, the notebook's path in JPY_SESSION_NAME), then the self-check cell:
    a line per exercise of this lesson, all ✓, and one line for each other lesson."""
    from jupyter_client.manager import start_new_kernel

    first = lessons()[0]
    lesson = solved_copy / first
    (path,) = lesson.glob("*.ipynb")
    env = dict(student_env(), IPYTHONDIR=str(tmp_path / "ipython"), JPY_SESSION_NAME=str(path))
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(lesson), env=env)
    code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    assert code[-1].strip() == SELF_CHECK_CELL
    streams: dict[str, str] = {"stdout": "", "stderr": ""}
    errors = []

    def on_output(msg):
        if msg["msg_type"] == "stream":
            streams[msg["content"]["name"]] += msg["content"]["text"]
        elif msg["msg_type"] == "error":
            errors.append(msg["content"])

    try:
        for source in code[:-1]:
            kc.execute_interactive(source, timeout=600)
        start = time.perf_counter()
        kc.execute_interactive(SELF_CHECK_CELL, output_hook=on_output, timeout=600)
        seconds = time.perf_counter() - start
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    print(f"\nself-check cell after Run All of the solved {first}: {seconds:.2f} s")
    assert not errors and streams["stderr"] == ""
    lines = streams["stdout"].splitlines()
    n = check_cells(lesson, "*.ipynb")
    assert lines[0] == f"{first} (this notebook, run again now): {n} of {n} pass", lines
    assert len(rows(streams["stdout"])) == n and all(
        r.startswith("✓") for r in rows(streams["stdout"])
    )
    others = [line.split()[0] for line in lines[n + 2 : n + 1 + len(lessons())]]
    assert others == lessons()[1:], lines  # one line per other lesson
    assert lines[n + 1 + len(lessons()) :] == [
        f"Course: {check_cells(solved_copy)} of {check_cells(solved_copy)} exercises pass "
        "their visible checks.",
        "Well done! The hidden tests will try more cases when your work is graded.",
    ]
    assert all(len(line) < 90 for line in lines)


# Lessons, a quiz and a problem set (on the engine of lessons 1-3, engine("mine")) in make
# test; every notebook in make mutation (the training demos make it 50 s;
# test_nbgrader_integration grades every solution in make test).
SOME = ("01_value", "02_backward", "03_activations", "04_checkpoint_engine", "07_set_gradients")


@pytest.mark.slow
@pytest.mark.parametrize(
    "keep", [SOME, pytest.param(None, marks=pytest.mark.mutation)], ids=["some", "all"]
)
def test_cli_on_solutions_passes_everything(solved_copy, keep):
    for folder in [p for p in solved_copy.iterdir() if p.is_dir()]:
        if keep is not None and folder.name not in keep:
            shutil.rmtree(folder)
    proc = self_check_cli(solved_copy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = rows(proc.stdout)
    assert len(table) == check_cells(solved_copy), proc.stdout
    assert keep is None or {p.name for p in solved_copy.iterdir() if p.is_dir()} == set(keep)
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
