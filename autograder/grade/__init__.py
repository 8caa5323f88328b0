"""The grading pipeline on the instructor's machine: ``python -m autograder grade``.

It finds pending submissions, sends each to a Dask worker as a job, and records each
result in nbgrader's gradebook and in ``autograded/``, with notes and review flags."""
