"""The code stays ruff-clean and ruff-formatted (configuration in pyproject.toml)."""

import subprocess
import sys

from helpers import ROOT


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_ruff_check_passes():
    """Lint rules, with C901: no function with more than 15 paths through it."""
    proc = ruff("check")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_code_is_formatted():
    """`ruff format --check`: the tests check, they never rewrite (run `ruff format .`)."""
    proc = ruff("format", "--check")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_grading_modules_stay_readable():
    """One responsibility per module: none of autograder/ grows past about 600 lines."""
    sizes = {
        p.relative_to(ROOT): len(p.read_text().splitlines())
        for p in (ROOT / "autograder").rglob("*.py")
    }
    assert {p: n for p, n in sizes.items() if n > 600} == {}
