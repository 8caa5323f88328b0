"""benchmarks/ stays runnable and listed (issue 41): every script imports (a refactor of
benchmarks/common.py or of what a script imports breaks here, not in a 30-minute
``make bench``), answers ``--help``, and is in the Makefile's ``bench`` target and in
benchmarks/README.md. No kernel is started, nothing is measured."""

import importlib
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
