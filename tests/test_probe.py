"""The probe in a real grading kernel (GuardedExecute, unsandboxed: tests/test_sandbox.py
covers the sandbox): it answers the hidden tests and leaves the student's namespace as it
was, so that no later cell of the student's sees a name of the probe's."""

import json

import nbformat
import pytest
from helpers import SOLUTIONS, grade_in_kernel, is_test_cell, notebook_path

A = "01_value"
# Names the probe defines for itself; a student may well use them for their own helpers.
NAMES = ("build", "plain", "lookup", "attach", "serve", "failure", "MIME", "OPERATIONS")


@pytest.mark.slow  # starts real kernels
def test_the_probe_keeps_to_a_namespace_of_its_own(tmp_path):
    nb = nbformat.read(notebook_path(SOLUTIONS, A), as_version=4)
    first_test = next(i for i, cell in enumerate(nb.cells) if is_test_cell(cell))
    mine = "; ".join(f"{name} = 'mine'" for name in NAMES)
    check = (
        f"assert [{', '.join(NAMES)}] == ['mine'] * {len(NAMES)}, "
        f"[{', '.join(NAMES)}]\nprint('untouched')"
    )
    nb.cells.insert(first_test, nbformat.v4.new_code_cell(mine))
    nb.cells.append(nbformat.v4.new_code_cell(check))
    verdicts = grade_in_kernel(nb, A)
    assert verdicts and all(v["passed"] for v in verdicts.values()), json.dumps(verdicts)
    last = nb.cells[-1].outputs
    # (one print may reach the notebook as two stream outputs when the machine is busy)
    assert {o.output_type for o in last} == {"stream"}, last
    assert "".join(o.text for o in last) == "untouched\n", last
