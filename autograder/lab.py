"""``python -m autograder lab``: JupyterLab for students, on their own working copy.

Students work in ``my-work/`` (not in git), never in ``notebooks/``: the course can then
update ``notebooks/`` (``git pull``) without clashing with anyone's answers. Each start
copies into ``my-work/`` every lesson notebook it does not have yet and refreshes the
course's helper files (``coursekit.py``); a notebook already there is never touched.

JupyterLab runs with the settings in ``autograder/student_lab/`` added to the Jupyter
config path (``JUPYTER_CONFIG_PATH``), which applies to this server only:

- nbgrader's instructor tools are off: the formgrader, the "Create Assignment" cell
  toolbar, the course and assignment lists (and their server routes), and the Nbgrader menu;
- nbgrader's **Validate** button stays (server extension ``validate_assignment``);
- JupyterLab's "news" pop-up is off.

An instructor's own ``jupyter lab`` is unaffected.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import sys
from pathlib import Path

from .course import NOTEBOOKS, ROOT, venv_path

WORK = ROOT / "my-work"
LAB_CONFIG = Path(__file__).resolve().parent / "student_lab"
SKIP = (".ipynb_checkpoints", "__pycache__")


def seed(work: Path = WORK, release: Path = NOTEBOOKS) -> list[str]:
    """Copy what ``work`` lacks from ``release``; return what changed (relative paths).

    Notebooks already in ``work`` are kept as they are; other files (the course's helper
    module) are replaced when the course's copy differs.
    """
    changed = []
    for lesson in sorted(p for p in release.iterdir() if p.is_dir() and p.name not in SKIP):
        if lesson.name.startswith("."):
            continue
        for src in sorted(p for p in lesson.iterdir() if p.is_file()):
            dest = work / lesson.name / src.name
            if dest.exists() and (src.suffix == ".ipynb" or filecmp.cmp(src, dest, False)):
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            changed.append(f"{lesson.name}/{src.name}")
    return changed


def lab_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the students' server: the student settings come first on
    JUPYTER_CONFIG_PATH, and this Python's bin/ first on PATH."""
    env = dict(os.environ if base is None else base)
    paths = [str(LAB_CONFIG), *filter(None, env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    return env


def lab_command(work: Path = WORK, extra: list[str] | None = None) -> list[str]:
    return [
        sys.executable, "-m", "jupyterlab",
        f"--ServerApp.root_dir={work}",
        "--ServerApp.ip=127.0.0.1",
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        *(extra or []),
    ]


def lab(work: Path | None = None, extra: list[str] | None = None) -> int:
    """Seed the working copy, then replace this process with JupyterLab on it."""
    work = Path(work or WORK).resolve()
    if not NOTEBOOKS.is_dir():
        print(f"no {NOTEBOOKS}: run `make generate` first")
        return 1
    changed = seed(work)
    where = work.relative_to(ROOT) if work.is_relative_to(ROOT) else work
    for path in changed:
        if path.endswith(".ipynb"):
            print(f"new lesson notebook: {where}/{path}")
    helpers = [p for p in changed if not p.endswith(".ipynb")]
    if helpers:
        print(f"course helper files copied or updated in {where}/: {len(helpers)}")
    print(f"Your notebooks are in {where}/ (your answers there are never overwritten).")
    venv_path()
    # cwd = the course root, so that Validate reads the course's nbgrader_config.py
    os.chdir(ROOT)
    os.execve(sys.executable, lab_command(work, extra), lab_env())
    return 0  # not reached
