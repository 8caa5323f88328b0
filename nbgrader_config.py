"""nbgrader configuration for the course; run nbgrader commands from this folder.

source/<assignment>/   instructor notebooks (solutions + hidden tests), written by hand
notebooks/<assignment>/ student versions, made by `nbgrader generate_assignment`
submitted/, autograded/, feedback/, gradebook.db: a class's grading state (not in git)
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))
if COURSE_ROOT not in sys.path:  # so nbgrader (CLI and formgrader) finds autograder.feedback
    sys.path.append(COURSE_ROOT)

c.CourseDirectory.root = COURSE_ROOT
c.CourseDirectory.course_id = "autograd-from-scratch"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"

# Every grading kernel first runs autograder/kernel_startup.py, which gives hidden tests
# `load_grader()`: the grading helpers and the reference engine, loaded from this folder by
# absolute path, never from the submission folder or from sys.modules. Then
# autograder/kernel_guard.py undoes, before each cell, any change a student's code made to
# builtins, math & co. or load_grader (and fails a test cell during which that happened).
_KERNEL_FILES = [os.path.join(COURSE_ROOT, "autograder", name)
                 for name in ("kernel_startup.py", "kernel_guard.py")]
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    f"--IPKernelApp.exec_files={_KERNEL_FILES!r}",
]
c.Execute.timeout = 60  # seconds per cell
c.Execute.interrupt_on_timeout = True

# A test cell a student deleted is put back before grading (and graded). With this on,
# nbgrader fails on duplicated cells unless DropEmptyMetadata runs after DeduplicateIds.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "autograder.nbgrader_fixes.DropEmptyMetadata",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Autograde copies every non-notebook file of source/<assignment>/ over the submission
# (Autograde.exclude_overwriting stays empty), so coursekit.py is always the course's copy.

# Feedback never shows hidden tests, grader tracebacks or grader source (autograder/feedback.py),
# and nothing from a submission is active in it: no script, event handler, frame or
# javascript: link (autograder/inert.py; also for formgrader's feedback button).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.feedback.HideGraderMaterial",
]
c.GenerateFeedback.exporter_class = "autograder.inert.InertHTMLExporter"
# `python -m autograder grade` keeps its record of each graded submission here; nbgrader
# leaves it out of feedback folders and releases (the other entries are nbgrader's defaults).
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback",
                            ".autograder.json"]

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
