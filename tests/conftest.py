"""Shared by every test: nothing one test's code under test changes in this process
leaks into the next; every assignment folder has its coursekit.py, as in a course opened
any other way (a fresh clone has none: git holds only source/.shared/coursekit.py)."""

import sys

import pytest

from autograder.course import place_coursekit

place_coursekit()


@pytest.fixture(autouse=True)
def keep_recursion_limit():
    """Student code under test may raise the recursion limit (lesson 2 has a bug that
    does); with it raised, a later endless recursion overflows the C stack and kills the
    test worker instead of raising RecursionError."""
    limit = sys.getrecursionlimit()
    yield
    sys.setrecursionlimit(limit)


def pytest_configure(config):
    """The session's cache of graded notebooks (tests/catalogue.py): made by the process
    that starts the session, before it starts any xdist worker (which inherits the
    variable), so that both workers share it; removed when the session ends, never kept."""
    import os
    import tempfile

    from catalogue import CACHE_ENV

    if hasattr(config, "workerinput") or os.environ.get(CACHE_ENV):
        return
    os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="catalogue-cache-")
    config._catalogue_cache = os.environ[CACHE_ENV]


def pytest_unconfigure(config):
    import os
    import shutil

    from catalogue import CACHE_ENV

    folder = getattr(config, "_catalogue_cache", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)
        os.environ.pop(CACHE_ENV, None)


def pytest_collection_modifyitems(config, items):
    """A test that takes ``solution`` runs whole notebooks (the course's, or mutants of it
    from its catalogue): an end-to-end run, so ``slow``, which ``make quick`` leaves out."""
    for item in items:
        if "solution" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def solution(request):
    """The instructor's notebook of the test module's assignment (the module's ``A``)."""
    import nbformat
    from catalogue import solution

    return nbformat.from_dict(solution(request.module.A))


# The session's hostile classes, each graded once (tests/hostile.py); make quick's rule.
from hostile import confined_class, hostile_class  # noqa: E402, F401
from lanes import no_kernels, pytest_addoption  # noqa: E402, F401
