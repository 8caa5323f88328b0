"""The lanes hold: ``make quick`` fails a test that starts a kernel (naming it) and passes
one that does not; the Makefile's lanes use pyproject's markers and nothing else."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STARTS_A_KERNEL = """
import subprocess, sys

def test_starts_a_kernel():
    subprocess.run([sys.executable, "-m", "ipykernel_launcher", "--version"], check=False)

def test_starts_a_grading_run():
    subprocess.run([sys.executable, "-m", "autograder", "grade", "--course", "x"])

def test_asks_for_help_only():
    subprocess.run([sys.executable, "-m", "autograder", "watch", "--help"], capture_output=True)

def test_runs_python():
    assert subprocess.run([sys.executable, "-c", "print(1)"], capture_output=True).stdout
"""


def lane(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "lanes", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env={"PYTHONPATH": f"{ROOT / 'tests'}:{ROOT}", "PATH": str(Path(sys.executable).parent)},
    )


@pytest.mark.slow  # a pytest of its own
def test_no_kernels_fails_exactly_the_tests_that_start_one(tmp_path):
    (tmp_path / "test_some.py").write_text(STARTS_A_KERNEL)
    quick = lane(tmp_path, "--no-kernels", "test_some.py")
    assert "2 failed, 2 passed" in quick.stdout, quick.stdout[-3000:]
    assert "mark this test slow: " in quick.stdout and "ipykernel_launcher" in quick.stdout
    failed = set(re.findall(r"FAILED test_some.py::(\w+)", quick.stdout))
    assert failed == {"test_starts_a_kernel", "test_starts_a_grading_run"}, quick.stdout


def test_the_makefile_lanes_use_pyprojects_markers():
    make = (ROOT / "Makefile").read_text()
    markers = re.findall(r'^\s+"(\w+):', (ROOT / "pyproject.toml").read_text(), re.M)
    assert {"slow", "mutation", "browser", "hub"} <= set(markers)
    lanes = {
        name: re.search(rf"^{name}:.*\n\t(.*)$", make, re.M).group(1)
        for name in ("quick", "test", "hub", "mutation")
    }
    assert '-m "not slow and not mutation and not hub" --no-kernels' in lanes["quick"]
    assert '-m "not mutation and not hub"' in lanes["test"]
    assert lanes["hub"].endswith("-m hub")
    assert "-m mutation" in lanes["mutation"]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line[:1] != "#"]
    assert ci[-1] == "make test"  # the suite, in its 15 minutes; the hub lane runs apart
