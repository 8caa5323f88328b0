"""Verdicts decided outside the student's kernel.

``api.py`` is what hidden tests see (``Kernel``, ``Given``, ``fail``); ``hidden/`` holds
them, one module per assignment; ``probe/`` is the only grading code that runs inside a
kernel; ``answers.py`` is what the grader believes of the probe's replies."""
