"""Where things are in the course, and an nbgrader API bound to a course folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "source"
NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
REFERENCE = SOURCE / ".reference"  # the reference engine package `refgrad` lives here
SHARED = SOURCE / ".shared"  # coursekit.py, linked into every assignment folder


def assignments(source: Path = SOURCE) -> list[str]:
    """Assignment folders in course order (nbgrader skips names starting with a dot)."""
    return sorted(p.name for p in source.iterdir() if p.is_dir() and not p.name.startswith("."))


def notebooks_of(assignment: str, source: Path = SOURCE) -> list[Path]:
    return sorted((source / assignment).glob("*.ipynb"))


def venv_path() -> None:
    """Put this Python's bin/ first on PATH: nbgrader runs `alembic` from PATH."""
    bindir = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if parts[:1] != [bindir]:
        os.environ["PATH"] = os.pathsep.join([bindir, *parts])


def nbgrader_api(root: Path = ROOT, **settings):
    """nbgrader's own API for the course at ``root``, with the course's nbgrader_config.py
    and any ``CourseDirectory`` settings given as keywords (e.g. ``db_url=...``)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    venv_path()
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    config.CourseDirectory.root = str(root)
    extra = Config()
    for key, value in settings.items():
        setattr(extra.CourseDirectory, key, value)
    config.merge(extra)
    return NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
