"""The code stays ruff-clean (configuration in pyproject.toml)."""

import subprocess
import sys

from helpers import ROOT


def test_ruff_check_passes():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_grading_modules_stay_small():
    """One responsibility per module: none of autograder/ grows past about 400 lines."""
    sizes = {p.relative_to(ROOT): len(p.read_text().splitlines())
             for p in (ROOT / "autograder").rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > 420} == {}
