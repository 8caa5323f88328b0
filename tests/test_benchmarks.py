"""benchmarks/ stays runnable and listed (issue 41): every script imports (a refactor of
benchmarks/common.py or of what a script imports breaks here, not in a 30-minute
``make bench``), answers ``--help``, and is in the Makefile's ``bench`` target and in
benchmarks/README.md. No kernel is started, nothing is measured."""

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
COMMON = "common"  # the shared plumbing, not a benchmark
SCRIPTS = sorted(p.stem for p in BENCHMARKS.glob("*.py") if p.stem != COMMON)


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 11, SCRIPTS


@pytest.mark.parametrize("name", [COMMON, *SCRIPTS])
def test_imports(name, monkeypatch):
    """As ``python benchmarks/<name>.py`` finds its imports: benchmarks/ first on the path."""
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    for module in [COMMON, *SCRIPTS]:
        monkeypatch.delitem(sys.modules, module, raising=False)
    module = importlib.import_module(name)
    assert module.__doc__, f"benchmarks/{name}.py says what it measures in its docstring"
    if name != COMMON:
        assert callable(module.main)


@pytest.mark.parametrize("name", SCRIPTS)
def test_help(name):
    """``--help`` parses the command line and exits without measuring anything; run from
    the repository's root as the Makefile runs it."""
    proc = subprocess.run(
        [sys.executable, f"benchmarks/{name}.py", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("usage:"), proc.stdout[:500]


def bench_target() -> str:
    """The recipe of the Makefile's ``bench`` target."""
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("bench:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line)
    return "\n".join(recipe)


def test_every_script_is_in_make_bench_and_the_readme():
    recipe = bench_target()
    readme = (BENCHMARKS / "README.md").read_text()
    missing_make = [n for n in SCRIPTS if f"benchmarks/{n}.py" not in recipe]
    missing_readme = [n for n in SCRIPTS if f"| `{n}.py` |" not in readme]
    assert not missing_make, f"not in the Makefile's bench target: {missing_make}"
    assert not missing_readme, f"no row in benchmarks/README.md's table: {missing_readme}"
    assert f"benchmarks/{COMMON}.py" not in recipe, "common.py is not a benchmark"


def benchmark(name: str, monkeypatch):
    """benchmarks/<name>.py imported as its script finds its imports."""
    monkeypatch.setattr(sys, "path", [str(BENCHMARKS), *sys.path])
    for module in [COMMON, *SCRIPTS]:
        monkeypatch.delitem(sys.modules, module, raising=False)
    return importlib.import_module(name)


def git_show(commit: str, path: str) -> bytes | None:
    proc = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


@pytest.mark.parametrize(
    ("name", "attribute"), [("class_scale", "BASELINE"), ("grading_dask", "BEFORE_DASK")]
)
def test_old_course_has_its_own_kit(name, attribute, monkeypatch, tmp_path):
    """The old grader a benchmark compares with runs with its own commit's kit (its hidden
    tests use the kit's insides: today's coursekit.py made 5e389c6's grader crash on
    ``kit._builder``), placed in every assignment folder, and none of today's kit files."""
    commit = getattr(benchmark(name, monkeypatch), attribute)
    old_kit = git_show(commit, "source/.shared/coursekit.py")
    if old_kit is None:
        pytest.skip(f"{commit} is not in this clone's history")
    common = benchmark(COMMON, monkeypatch)
    course = common.old_course(tmp_path / "old", commit)
    shared = course / "source" / ".shared"
    assert (shared / "coursekit.py").read_bytes() == old_kit
    today = {p.name for p in (ROOT / "source" / ".shared").iterdir()}
    theirs = {p.name for p in shared.iterdir()}
    for folder in sorted((ROOT / "source").iterdir()):
        if not folder.is_dir() or folder.name.startswith("."):
            continue
        placed = course / "source" / folder.name
        assert (placed / "coursekit.py").read_bytes() == old_kit, placed
        stray = sorted(n for n in today - theirs if (placed / n).exists())
        assert not stray, f"today's kit files in {commit}'s course: {placed}: {stray}"
        assert {p.name for p in folder.glob("*.ipynb")} == {p.name for p in placed.glob("*.ipynb")}


def test_sandbox_overhead_runs_what_grading_runs(monkeypatch):
    """sandbox_overhead.py runs each solution alone in a folder of its own (a sandboxed
    kernel sees only that folder): no cell it runs may read another lesson's notebook
    (``engine("mine", ...)``: grading runs the course's engine there) or the notebook
    beside it (a quiz's practice round: grading skips those cells)."""
    from autograder.course import SOLUTIONS

    module = benchmark("sandbox_overhead", monkeypatch)
    paths = sorted(SOLUTIONS.glob("*/*.ipynb"))
    if not paths:
        pytest.skip("no solutions/: run make generate")
    for path in paths:
        nb = module.cleared(path)
        for cell in nb.cells:
            assert not re.search(r"\bengine\(\s*['\"]", cell.source), (path.name, cell.source[:200])
            assert not re.search(r"\.practice\(", cell.source), (path.name, cell.source[:200])
