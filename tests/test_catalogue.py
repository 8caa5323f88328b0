"""The catalogue's shortcut (catalogue.py, ``_known``): a mutant's test cells before its
first change keep the solution's verdicts instead of running their hidden tests again.
It must decide exactly what running every hidden test decides."""

import catalogue
import pytest
import test_03_activations as t03
from helpers import failing_cells

pytestmark = pytest.mark.slow

A = t03.A


def late_slips() -> list:
    """The lesson's slips whose first change comes after at least one test cell."""
    rows = []
    for row in t03.BUGS:
        nb = catalogue.changed(catalogue.solution(A), catalogue.changes_of(row))
        if catalogue._known(nb, A, catalogue.SEED, catalogue.STUDENT, ""):
            rows.append(row)
    return rows


def test_a_mutants_early_cells_keep_the_solutions_verdicts_and_decide_the_same():
    rows = late_slips()
    assert len(rows) >= 3  # the shortcut is taken, or this test tests nothing
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        nb = catalogue.changed(catalogue.solution(A), catalogue.changes_of(row))
        every_test_run = failing_cells(nb, A)
        assert every_test_run, row[0]  # a slip the hidden tests catch
        assert catalogue.graded(nb, A) == every_test_run, row[0]


def test_a_change_in_the_first_cell_takes_no_shortcut():
    nb = catalogue.solution(A)
    first = next(c for c in nb.cells if c.cell_type == "code")
    changed = catalogue.mutate(nb, first.source[:20], first.source[:20] + " ")
    assert catalogue._known(changed, A, catalogue.SEED, catalogue.STUDENT, "") == {}
