"""The course's library checks for hidden tests written in the notebook.

A hidden region imports them from ``gradekit`` (``from gradekit import check_op``): each
is a function here whose first argument is the run's context (verdicts/region.py
``Context``: ``kernel``, ``rng``, and ``given``, the course code given to the current
test or part); the region calls it without it. They are for checks that need more than
asserts on a few values: random expression graphs compared with the reference engine,
slips named by ``diagnose``. ``LIBRARY`` lists what ``gradekit`` exports.
"""

from __future__ import annotations

LIBRARY: dict = {}
