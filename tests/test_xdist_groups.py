"""The suite's ``xdist_group`` marks hold: ``make test`` runs ``pytest -n 2 --dist
loadgroup``, and a test module whose tests share an expensive module fixture (a graded
class, a JupyterLab server, an exchange) or must not run beside each other relies on
them. A pytest that pytest-xdist cannot suffix ids for ignores them silently (pytest 9
with xdist 3.8: every fixture then ran once per worker, ~4 minutes of the suite)."""

import subprocess
import sys

import pytest

GROUPED = """
import pytest

pytestmark = pytest.mark.xdist_group("together")


@pytest.mark.parametrize("n", range(6))
def test_where(n):
    pass
"""


@pytest.mark.slow  # a pytest of its own, on two workers
def test_tests_of_one_group_run_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-v",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    workers = {w for w in proc.stdout.split() if w.startswith("[gw") and w.endswith("]")}
    assert len(workers) == 1, proc.stdout[-2000:]  # "[gw0] [ 16%] PASSED ...", every line
