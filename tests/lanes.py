"""The suite's lanes (README: Tests), as markers in pyproject.toml and commands in the
Makefile: ``make quick`` (``-m "not slow and not mutation and not hub" --no-kernels``),
``make test`` (``-m "not mutation and not hub"``, what CI runs), ``make hub`` (``-m hub``:
a real JupyterHub, as root) and ``make mutation`` (``-m mutation``).

``--no-kernels`` is how the quick lane stays quick: a test that starts a kernel, nbgrader or
a grading run fails there, naming the command, instead of slowing every edit."""

import subprocess

import pytest

# What starting a kernel, nbgrader or a grading run looks like on a command line (a grading
# run's kernels start in a process of its own, where this test process cannot see them).
KERNEL_WORDS = (
    "ipykernel",
    "kernel/launch.py",
    "nbgrader",
    "autograder grade",
    "autograder watch",
    "autograder demo",
    "jupyter",
)
CONFIG_FILE = "nbgrader_config.py"  # a file's name, not nbgrader run


def pytest_addoption(parser):
    parser.addoption(
        "--no-kernels",
        action="store_true",
        help="fail any test that starts a Jupyter kernel, nbgrader or a grading run "
        "(make quick: such tests are marked slow)",
    )


@pytest.fixture(autouse=True)
def no_kernels(request, monkeypatch):
    """With --no-kernels (``make quick``), a test that starts a process whose command line
    is a kernel's, nbgrader's or ``python -m autograder``'s fails, naming it: the quick
    lane stays quick because the rule is checked, not remembered."""
    if not request.config.getoption("--no-kernels"):
        return
    real = subprocess.Popen.__init__

    def guarded(self, args, *rest, **kwargs):
        line = args if isinstance(args, str | bytes) else " ".join(map(str, args))
        line = line.decode(errors="replace") if isinstance(line, bytes) else line
        line = line.replace(CONFIG_FILE, "")  # a file named on a command line (git archive)
        if any(word in line for word in KERNEL_WORDS) and "--help" not in line:
            pytest.fail(f"make quick starts no kernel, mark this test slow: {line[:120]}")
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", guarded)
