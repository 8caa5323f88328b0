"""The layers of autograder/ are contracts (pyproject.toml, [tool.importlinter]), checked
by import-linter's ``lint-imports``: a module that imports across a layer fails here."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

LINT = str(Path(sys.executable).parent / "lint-imports")


def lint(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [LINT, "--no-cache", "--config", str(folder / "pyproject.toml")],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(Path(sys.executable).parent), "PYTHONPATH": str(folder)},
    )


def test_every_contract_is_kept():
    proc = lint(ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


# (module, an import it must not make, the contract that says so)
PLANTED = [
    ("verdicts/probe/runtime.py", "from ...course import ROOT", "inside a grading kernel"),
    ("kernel/launch.py", "from autograder.kernel import limits", "inside a grading kernel"),
    ("verdicts/hidden/common.py", "from ...kernel import limits", "see only the verdict API"),
    ("verdicts/hidden/quiz.py", "from ..answers import SHAPES", "see only the verdict API"),
    ("students/launcher.py", "from ..course import ROOT", "Students' launcher"),
    ("students/edition.py", "from ..grade import records", "without the grading pipeline"),
    ("grade/display.py", "from . import run", "No import cycles"),
    ("kernel/limits.py", "from ..messages import Job", "No import cycles"),
    ("verdicts/api.py", "from ..preprocessors import execute", "Grading runs downward"),
]


@pytest.mark.parametrize(("module", "line", "contract"), PLANTED, ids=[m for m, _, _ in PLANTED])
def test_an_import_across_a_layer_is_caught(tmp_path, module, line, contract):
    shutil.copytree(
        ROOT / "autograder", tmp_path / "autograder", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "autograder" / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")
    proc = lint(tmp_path)
    assert proc.returncode != 0, proc.stdout[-3000:]
    broken = [ln for ln in proc.stdout.splitlines() if ln.endswith(" BROKEN")]
    assert any(contract in ln for ln in broken), proc.stdout[-3000:]
