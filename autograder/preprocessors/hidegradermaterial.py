"""``HideGraderMaterial``: before nbgrader's ``GenerateFeedback`` renders a notebook, hidden
tests, grader tracebacks and quoted grader source are taken out of it (what counts as
grading material is feedback/pages.py's)."""

from __future__ import annotations

from nbgrader.preprocessors import NbGraderPreprocessor

from .. import markers
from ..feedback.pages import REMOVED_CELL, REMOVED_TEXT, clean_output, quotes_grader


class HideGraderMaterial(NbGraderPreprocessor):
    """Remove hidden tests, grader tracebacks and quoted grader source from a notebook
    before nbgrader's GenerateFeedback renders it (see the module docstring)."""

    def preprocess_cell(self, cell, resources, index):
        cell.source = markers.without(cell.source, markers.HIDDEN)
        if quotes_grader(cell.source):
            cell.source = REMOVED_CELL if cell.cell_type == "code" else REMOVED_TEXT
        for i, out in enumerate(cell.get("outputs", [])):
            cell.outputs[i] = clean_output(out)
        return cell, resources
