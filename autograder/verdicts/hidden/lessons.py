"""What lessons 2, 3 and 5 start from when graded: the course's own earlier lessons.

In the lab, a lesson's cell tagged ``engine`` (``Value = engine("mine", "Value")``, see
coursekit) runs the student's own notebooks of the lessons before it. Grading runs the
course's version of those lessons in its place, as it does for a problem set
(``ENGINE = lesson_engine("03_activations", "Value", ...)`` in the lesson's hidden module;
GuardedExecute runs its ``code``), so that the visible checks of a graded notebook run
on the engine its hidden tests assume, and a bug in lesson 1 costs nothing in lesson 2.

The code is the course's solutions: the engine cells (setup, given code and exercises,
``coursekit.engine_cells``) of the instructor notebooks of every lesson that builds the
engine (``coursekit.ENGINE_LESSONS``), up to the one the lesson starts from, run as one
piece, of which only what the names need is kept (needed.py: lesson 1's
``backprop_by_hand`` or lesson 2's ``grad_check`` are none of lesson 5's business); a
name no lesson builds (``dot``) is coursekit's. It is what a student's
``engine("course", ...)`` runs from the course's past lessons, less what the notebook
cannot reach anyway (the cell keeps only the names). No request carries it:
the kernel's own ``Value`` is already the course's, with the student's new methods on it.
This runs in the grader; only the code it makes goes into a kernel.
"""

from __future__ import annotations

import functools

from ..api import solution_code
from .common import COURSE, kit
from .needed import needed
from .sets import CourseEngine

SOURCE = COURSE / "source"


@functools.cache
def _lesson_code(folder: str, notebook: str) -> str:
    """A lesson's engine cells as the course's solution runs them, without the cell that
    loads the lesson before it (the lessons before it run first, in the same piece)."""
    nb = kit.read_notebook(SOURCE / folder / notebook)
    cells = [c for c in kit.engine_cells(nb) if kit.ENGINE_TAG not in c.metadata.get("tags", [])]
    return "\n\n".join(solution_code(c.source) for c in cells)


def lesson_engine(assignment: str, *names: str) -> CourseEngine:
    """The course's ``names`` for the ``engine`` cell of ``assignment`` (a lesson)."""
    built = {n for _, _, made in kit.ENGINE_LESSONS for n in made}
    from_lessons = [n for n in names if n in built]
    from_kit = [n for n in names if n not in built]
    unknown = [n for n in from_kit if n not in kit.__all__]
    if not from_lessons or unknown:
        raise ValueError(f"lesson_engine: unknown names {unknown} (or no engine name given)")
    last, _ = kit.engine_lesson(from_lessons, assignment)
    lessons = [(f, nb) for f, nb, _ in kit.ENGINE_LESSONS if f <= last]
    code = needed("\n\n".join(_lesson_code(f, nb) for f, nb in lessons), from_lessons)
    listed = ", ".join(from_lessons)
    cell = (
        f"exec(compile({code!r}, '<the course engine>', 'exec'), _course := {{}})\n"
        f"{listed}, = (_course[_name] for _name in {tuple(from_lessons)!r})\n"
        "del _course\n" + (f"from coursekit import {', '.join(from_kit)}\n" if from_kit else "")
    )
    return CourseEngine(tuple(names), None, cell, tuple(f for f, _ in lessons))
