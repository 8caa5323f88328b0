"""nbgrader's region markers are read in one module (autograder/markers.py), the way
nbgrader itself reads them."""

from __future__ import annotations

import re

import nbformat
import pytest
from helpers import ROOT, SOURCE
from nbgrader.preprocessors import ClearHiddenTests, ClearSolutions

from autograder import markers

CELL = """x = 1
### BEGIN SOLUTION
y = 2
### END SOLUTION
assert x == 1
### BEGIN HIDDEN TESTS
assert y == 2
### END HIDDEN TESTS"""


def test_each_line_is_read_with_its_region():
    regions = [(ln.region, ln.marker) for ln in markers.read(CELL)]
    assert regions == [
        (None, False),
        ("solution", True),
        ("solution", False),
        ("solution", True),
        (None, False),
        ("hidden", True),
        ("hidden", False),
        ("hidden", True),
    ]
    assert markers.inside(CELL, markers.SOLUTION) == "y = 2"
    assert markers.inside(CELL, markers.HIDDEN) == "assert y == 2"
    assert markers.visible(CELL) == CELL[: CELL.index("\n### BEGIN HIDDEN")]
    assert markers.solved(CELL) == "x = 1\ny = 2\nassert x == 1"
    assert markers.has(CELL, markers.HIDDEN) and not markers.has("x = 1", markers.SOLUTION)


def test_a_marker_anywhere_in_a_line_counts_as_nbgrader_says():
    source = "a = 1  # BEGIN HIDDEN TESTS (indented, after code)\nsecret = 1\n  # END HIDDEN TESTS"
    assert markers.visible(source) == ""
    assert markers.inside(source, markers.HIDDEN) == "secret = 1"


def _instructor_cells():
    for path in sorted(SOURCE.glob("[0-9]*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and "nbgrader" in cell.metadata:
                yield path.parent.name, cell


@pytest.mark.parametrize("cell", [c for _, c in _instructor_cells()][::7])
def test_what_students_see_is_what_nbgrader_releases(cell):
    nb = nbformat.v4.new_notebook(cells=[nbformat.from_dict(dict(cell))])
    nb, _ = ClearHiddenTests().preprocess(nb, {})
    released = nb.cells[0].source
    assert markers.visible(cell.source) == released.rstrip()
    nb, _ = ClearSolutions().preprocess(nb, {"language": "python"})
    for line in markers.inside(cell.source, markers.SOLUTION).splitlines():
        if line.strip():
            assert line not in nb.cells[0].source.splitlines(), line


def test_no_other_module_spells_a_marker():
    spelled = re.compile("|".join(re.escape(m) for m in markers.ALL))
    found = [
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "autograder").rglob("*.py")
        if p.name != "markers.py" and spelled.search(p.read_text())
    ]
    assert found == []
