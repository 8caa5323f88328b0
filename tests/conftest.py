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


# The session's hostile classes, each graded once (tests/hostile.py); make quick's rule.
from hostile import confined_class, hostile_class  # noqa: E402, F401
from lanes import no_kernels, pytest_addoption  # noqa: E402, F401
