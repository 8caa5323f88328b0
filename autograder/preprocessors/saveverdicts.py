"""``SaveVerdicts``: nbgrader's ``SaveAutoGrades`` with each test cell scored by the verdict
``GuardedExecute`` recorded for it (verdicts/api.py), and by nothing else."""

from __future__ import annotations

from nbgrader.preprocessors import SaveAutoGrades

from ..verdicts.api import is_test_cell


class SaveVerdicts(SaveAutoGrades):
    """nbgrader's SaveAutoGrades, with a test cell's score taken from its verdict: full
    marks when it passed, 0 otherwise (also when no verdict was recorded)."""

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
        grade.auto_score = float(grade.max_score) if result.get("passed") is True else 0.0
        grade.needs_manual_grade = grade.manual_score is not None
        self.gradebook.db.commit()
        return None
