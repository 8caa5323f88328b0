"""``SaveVerdicts``: nbgrader's ``SaveAutoGrades`` with each test cell scored by the verdict
``GuardedExecute`` recorded for it (verdicts/api.py), and by nothing else."""

from __future__ import annotations

from nbgrader.preprocessors import SaveAutoGrades

from ..verdicts.api import is_test_cell


class SaveVerdicts(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score taken from its verdict: full
    marks when it passed, its credit's share when not (an exercise of several functions),
    0 when no verdict was recorded."""

    def _add_score(self, cell, resources) -> None:
        if not is_test_cell(cell):
            return super()._add_score(cell, resources)
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"],
            self.notebook_id,
            self.assignment_id,
            self.student_id,
        )
        result = (cell.metadata.get("autograder") or {}).get("verdict") or {}
        grade.auto_score = score(result, float(grade.max_score))
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
        return None


def score(verdict: dict, max_score: float) -> float:
    """The points a recorded verdict earns (rounded to hundredths of a point)."""
    if verdict.get("passed") is True:
        return max_score
    credit = verdict.get("credit")
    if isinstance(credit, (int, float)) and not isinstance(credit, bool) and 0 < credit <= 1:
        return round(max_score * credit, 2)
    return 0.0
