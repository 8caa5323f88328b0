"""``python -m autograder self-check [FOLDER]``: the students' progress table, in a terminal.

The thorough version of the ``self_check()`` cell at the end of every lesson notebook (both
come from the kit's ``checkkit.py``): each notebook in FOLDER's lesson folders runs in a
fresh kernel, as saved, and every check cell gets a row with ✓ or ✗ and the first
failure's message.
(The notebook cell is quicker: it runs the notebook in hand's checks again in its own
kernel and gives every other lesson one line from its saved outputs.)
FOLDER defaults to ``my-work/`` (the students' working copy, see ``autograder lab``) when it
exists, else ``notebooks/``. Exit code: 0 when every visible check passes, 1 when one fails,
2 when FOLDER holds no lesson notebooks.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ..course import NOTEBOOKS, ROOT, SHARED

WORK = ROOT / "my-work"


def load_kit(name: str = "checkkit"):
    """The course's kit module ``name`` (checkkit, coursekit, quizkit), loaded from
    source/.shared by path."""
    spec = importlib.util.spec_from_file_location(f"_{name}_cli", SHARED / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def default_folder() -> Path:
    return WORK if WORK.is_dir() else NOTEBOOKS


def self_check(folder: Path | None = None) -> int:
    kit = load_kit("checkkit")
    rows = kit.self_check_table(Path(folder) if folder is not None else default_folder())
    if not rows:
        return 2
    return 0 if all(ok for _, _, ok, _ in rows) else 1
