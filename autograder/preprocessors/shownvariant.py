"""``ShownVariant``: which student's variant a quiz notebook showed, read before nbgrader
clears the outputs (configured first among nbgrader's sanitizing preprocessors).

A checkpoint quiz shows everyone the variant of their own id (``quizkit.Quiz``), and
its setup cell's output names that id under ``QUIZ_MIME``. Grading always uses the id a
submission was handed in under; when an answer is wrong and the notebook showed another
id's variant, the hidden test's message says so (``Kernel.shown``). This keeps that id,
from the saved outputs, in ``metadata.autograder.shown_id``. It is what the student's file
says, so it is untrusted: only a short plain string is kept, and it only ever adds a
sentence to a message about an answer that is already wrong. The id is kept as variants
are drawn from it (``roster.fold``, the same as ``quizkit.quiz_id``): a notebook that
showed ``'Bob'`` showed the variant of ``bob``.
"""

from __future__ import annotations

import json

from nbgrader.preprocessors import NbGraderPreprocessor

from ..roster import fold

QUIZ_MIME = "application/vnd.autograd-course.quiz+json"  # quizkit.QUIZ_MIME
MOST = 100  # characters of an id


def shown_id(nb) -> str:
    """The id the notebook's last quiz-variant output names ("" if none or malformed)."""
    found = ""
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {}) if isinstance(output, dict) else {}
            value = data.get(QUIZ_MIME) if isinstance(data, dict) else None
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    continue
            student = value.get("id") if isinstance(value, dict) else None
            if isinstance(student, str) and 0 < len(student) <= MOST and student.isprintable():
                found = fold(student) or found
    return found


class ShownVariant(NbGraderPreprocessor):
    """Keep the id a quiz notebook showed (see the module docstring)."""

    def preprocess(self, nb, resources):
        record = nb.metadata.get("autograder")
        record = dict(record) if isinstance(record, dict) else {}
        record.pop("shown_id", None)  # only ever what the outputs say
        student = shown_id(nb)
        if student:
            record["shown_id"] = student
        if record:
            nb.metadata["autograder"] = record
        else:
            nb.metadata.pop("autograder", None)
        return nb, resources
