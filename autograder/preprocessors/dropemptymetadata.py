"""Small preprocessors that keep nbgrader's own autograde from failing on what students
submit (configured in nbgrader_config.py, so `nbgrader autograde` and formgrader use them).
"""

from nbgrader.preprocessors import NbGraderPreprocessor


class DropEmptyMetadata(NbGraderPreprocessor):
    """After ``DeduplicateIds``: a duplicated cell is left with ``nbgrader: {}``, on which
    ``OverwriteCells(add_missing_cells=True)`` raises KeyError and fails the submission.
    Remove such metadata (the cell is an ordinary cell from then on)."""

    def preprocess_cell(self, cell, resources, index):
        md = cell.metadata.get("nbgrader")
        if md is not None and (not isinstance(md, dict) or "grade_id" not in md):
            del cell.metadata["nbgrader"]
        return cell, resources
