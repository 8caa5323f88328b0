"""The grading material: what a worker needs to grade an assignment, besides the Python
environment (the workers' image has the course's environment and nothing of the course).

``material_files`` is the one place that says what it holds. ``pack`` zips it with its
digest; ``GradingMaterial`` (plugins.py) unpacks it on every worker and checks the
digest; each ``Job`` names the digest of its assignment's material, and the task refuses
to run without exactly that material.

The material is laid out like the course itself (``nbgrader_config.py``, ``autograder/``,
``source/``), so the grader finds everything where it would in the course folder: the
kernels' start-up files and hidden tests under ``autograder/``, the reference engine
under ``source/.reference`` (where ``autograder/verdicts/hidden/common.py`` looks), the assignment's
source folder, and its template gradebook (``templates/<assignment>.db``). Every material
also holds the instructor notebooks of the lessons that the course's engine of a lesson is
read from (verdicts/hidden/lessons.py), and every assignment's files other than its
notebooks (a quiz's questions.py, a problem set's data): a worker imports the grader once,
from the first material it gets, and its hidden tests read the course's files from there,
whichever assignment they grade.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..course import ROOT, SHARED, SOURCE, Course, assignments
from ..verdicts.api import engine_lessons
from .plugins import CODE, PREFIX, GradingMaterial, files_digest, read_tree


def shared_files() -> dict[str, bytes]:
    """What every assignment's material holds: the grader (its package, with the probe and
    the hidden tests, and nbgrader_config.py), the reference engine, the students' helper
    module, the lessons the course's engine of a lesson is read from, and every
    assignment's files that are not notebooks (hidden tests read them from whichever
    material the worker imported the grader from: module docstring). A run reads them
    once, so that all its workers grade with one version of the grader even if its files
    change meanwhile."""
    files: dict[str, bytes] = {"nbgrader_config.py": (ROOT / "nbgrader_config.py").read_bytes()}
    lessons = sorted({lesson for a in assignments() for lesson in engine_lessons(a)})
    for folder, prefix in [
        (ROOT / CODE, f"{CODE}/"),
        (SOURCE / ".reference", "source/.reference/"),
        (SHARED, "source/.shared/"),
        *((SOURCE / lesson, f"source/{lesson}/") for lesson in lessons),
    ]:
        files.update(read_tree(folder, prefix))
    for a in assignments():
        given = read_tree(SOURCE / a, f"source/{a}/")
        files.update((rel, data) for rel, data in given if not rel.endswith(".ipynb"))
    return files


def material_files(
    course: Course, assignment: str, template: Path, shared: dict[str, bytes] | None = None
) -> dict[str, bytes]:
    """Everything a worker needs to grade ``assignment``, as {path: bytes}: the
    ``shared_files()`` (read now unless given), the assignment's source folder (links
    followed) and its template gradebook."""
    files = dict(shared if shared is not None else shared_files())
    files.update(read_tree(course.source / assignment, f"source/{assignment}/"))
    files[template_path(assignment)] = template.read_bytes()
    return files


def template_path(assignment: str) -> str:
    """Where the assignment's template gradebook is in the material."""
    return f"templates/{assignment}.db"


@dataclass
class Material:
    """One assignment's grading material, zipped."""

    assignment: str
    digest: str  # of the files (plugins.files_digest)
    code: str  # digest of the grader's package among them
    archive: bytes

    def plugin(self) -> GradingMaterial:
        return GradingMaterial(self.digest, self.code, self.archive)

    @property
    def name(self) -> str:
        return PREFIX + self.digest


def pack(assignment: str, files: dict[str, bytes]) -> Material:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for rel in sorted(files):
            zf.writestr(rel, files[rel])
    code = files_digest((k, v) for k, v in files.items() if k.startswith(f"{CODE}/"))
    return Material(assignment, files_digest(files.items()), code, buffer.getvalue())


def send_by_value() -> None:
    """Workers may not have the course: send plugins.py itself along with its plugin."""
    import cloudpickle

    from . import plugins

    if plugins.__name__ not in cloudpickle.list_registry_pickle_by_value():
        cloudpickle.register_pickle_by_value(plugins)
