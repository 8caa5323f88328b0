"""Feedback pages for students: nbgrader's feedback with no grading material in it
(``pages``: hidden tests, grader tracebacks and quoted grader code removed) and nothing
active from a submission (``inert``, ``sanitize``), math drawn offline (``offline_math``).
Runs in the grader (``python -m autograder feedback``) and in nbgrader's feedback."""
