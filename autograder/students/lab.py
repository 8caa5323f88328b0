"""``python -m autograder lab``: JupyterLab for students, on their own working copy.

Students work in ``my-work/`` (not in git), never in ``notebooks/``: the course can then
update ``notebooks/`` (``git pull``) without clashing with anyone's answers. Each start
copies into ``my-work/`` every lesson notebook it does not have yet and refreshes the
course's helper files (``coursekit.py``); a notebook already there is never touched.

JupyterLab runs with the settings in ``autograder/students/payload/jupyter/`` added to the Jupyter
config path (``JUPYTER_CONFIG_PATH``), which applies to this server only:

- nbgrader's instructor tools are off: the formgrader, the "Create Assignment" cell
  toolbar, the course and assignment lists (and their server routes), and the Nbgrader menu;
- nbgrader's **Validate** button stays (server extension ``validate_assignment``), with
  the time limit per cell in ``nbgrader_config.json``;
- JupyterLab's "news" pop-up is off; Markdown files open rendered (``settings/``), and
  the server opens on the start page, ``START-HERE.md`` (``source/.shared/``).

The student edition (``python -m autograder release``) ships the same launcher as
``lab.py`` (``autograder/students/launcher.py``) and these settings as ``jupyter/``.

An instructor's own ``jupyter lab`` is unaffected.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..course import NOTEBOOKS, ROOT, SHARED, venv_path
from . import launcher

WORK = ROOT / "my-work"
LAB_CONFIG = Path(__file__).resolve().parent / "payload" / "jupyter"
START_PAGE = SHARED / launcher.START_PAGE  # the start page JupyterLab opens on
SKIP = launcher.SKIP


def seed(work: Path = WORK, release: Path = NOTEBOOKS, start_page: Path | None = None) -> list[str]:
    """Copy what ``work`` lacks from ``release`` (and the start page, if given); return what
    changed (relative paths). Notebooks already in ``work`` are kept as they are; other
    files (the course's helper module, the start page) are replaced when the course's copy
    differs. The student edition's ``lab.py`` does the same (``autograder/students/launcher.py``).
    """
    return launcher.seed(work, release, start_page)


def lab_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the students' server: the student settings come first on
    JUPYTER_CONFIG_PATH, and this Python's bin/ first on PATH."""
    return launcher.lab_env(LAB_CONFIG, base)


def lab_command(work: Path = WORK, extra: list[str] | None = None) -> list[str]:
    return launcher.lab_command(work, LAB_CONFIG, extra)


def lab(work: Path | None = None, extra: list[str] | None = None) -> int:
    """Seed the working copy, then replace this process with JupyterLab on it."""
    work = Path(work or WORK).resolve()
    if not NOTEBOOKS.is_dir():
        print(f"no {NOTEBOOKS}: run `make generate` first")
        return 1
    launcher.seed_and_say(
        work, NOTEBOOKS, START_PAGE, work.relative_to(ROOT) if work.is_relative_to(ROOT) else work
    )
    venv_path()
    # cwd = the course root, so that Validate reads the course's nbgrader_config.py
    os.chdir(ROOT)
    os.execve(sys.executable, lab_command(work, extra), lab_env())
    return 0  # not reached
