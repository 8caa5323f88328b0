"""nbgrader configuration for the course; run nbgrader commands from this folder.

source/<assignment>/   instructor notebooks (solutions + hidden tests), written by hand
notebooks/<assignment>/ student versions, made by `nbgrader generate_assignment`
source/.shared/coursekit.py  the students' helper module, linked into each assignment folder
submitted/, autograded/, feedback/, gradebook.db: a class's grading state (not in git)
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

COURSE_ROOT = os.path.dirname(os.path.abspath(__file__))
if COURSE_ROOT not in sys.path:  # so nbgrader (CLI and formgrader) finds autograder.feedback
    sys.path.append(COURSE_ROOT)

# coursekit.py is in git once, source/.shared/coursekit.py: every assignment folder in
# source/, notebooks/ and solutions/ gets it as a link (a copy where links are impossible)
# here, before any nbgrader command (formgrader too) copies an assignment's files.
from autograder.course import CoursekitError, place_coursekit  # noqa: E402

try:
    place_coursekit(COURSE_ROOT)
except CoursekitError as exc:
    print(f"warning: {exc}", file=sys.stderr)

c.CourseDirectory.root = COURSE_ROOT
c.CourseDirectory.course_id = "autograd-from-scratch"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "notebooks"

# Hidden tests never run in the student's kernel: at each test cell, GuardedExecute runs
# the visible checks in the kernel, then the cell's hidden test (autograder/verdicts/hidden/)
# runs in this process, asks the probe in the kernel for plain values and compares them with the
# reference engine. SaveVerdicts scores each test cell by that verdict alone. Both replace
# nbgrader's Execute and SaveAutoGrades here, so `nbgrader autograde` and formgrader's
# Autograde button grade exactly like `python -m autograder grade` (autograder/verdicts/api.py).
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:"]
c.Execute.timeout = 60  # seconds per cell: also grading's (Limits.cell_timeout, below)
c.Execute.interrupt_on_timeout = True

# What one submission may use while it is graded, read alike by `python -m autograder grade`,
# `nbgrader autograde` and formgrader's Autograde button (autograder/kernel/limits.py lists
# every limit and its default; these are the defaults). `grade --wall-limit/--memory/
# --attempts/--cell-timeout/--no-sandbox` override them for one run. The per-cell limit is
# Execute.timeout above, which `nbgrader validate` uses too: set c.Limits.cell_timeout only to
# grade with another one.
c.Limits.wall = 300  # seconds a whole notebook may run
c.Limits.memory = "3G"  # address space of each grading kernel
c.Limits.file_size = "1G"  # the largest file a kernel may write
c.Limits.output = 1_000_000  # bytes of output kept per cell
c.Limits.cpus = 1.0  # cores a kernel and everything it starts share
c.Limits.attempts = 3  # runs of a notebook whose kernel crashes or hangs (skipping that cell)
c.Limits.sandbox = "auto"  # kernels under bubblewrap: auto (when possible), require or off

# When each assignment reaches students (autograder/schedule.py): `python -m autograder release`
# ships those whose release date has come, and with them, in the edition's course/ folder, the
# course's version of every lesson that is past (its due date has passed or, without one, the
# next assignment is out). No dates: every assignment at once, none past. For example:
# c.Schedule.dates = {
#     "01_value": {"release": "2026-09-07", "due": "2026-09-14"},
#     "02_backward": {"release": "2026-09-15", "due": "2026-09-21"},
# }
# Dates are YYYY-MM-DD (a due date lasts to the end of its day) or YYYY-MM-DD HH:MM, in the
# course's time zone (default: this machine's local time):
# c.Schedule.timezone = "Europe/Berlin"
# Extensions, per assignment and student (the id in submitted/): a later due date, or days
# added to the assignment's (0: none). `grade` writes the due dates and extensions into
# nbgrader's gradebook; without a due date here, nbgrader's own (`nbgrader db assignment add
# --duedate`, UTC) and its extensions count.
# c.Schedule.extensions = {"01_value": {"ada": "2026-09-16", "grace": 2}}
# The late policy, applied by `export` (grades.csv's late_penalty and final_score) and shown
# on the feedback pages; the gradebook keeps the raw scores, so changing it needs no
# regrading. {} (the default): lateness is shown, no points taken. {"per_day": 0.1}: a tenth
# of the assignment's points lost per day or part of a day late (never below 0).
# {"zero_after": 3}: full score up to 3 days late, 0 after.
# c.Schedule.late_policy = {"per_day": 0.1}

c.Autograde.autograde_preprocessors = [
    "autograder.preprocessors.execute.GuardedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "autograder.preprocessors.saveverdicts.SaveVerdicts",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# A test cell a student deleted is put back before grading (and graded). With this on,
# nbgrader fails on duplicated cells unless DropEmptyMetadata runs after DeduplicateIds.
c.OverwriteCells.add_missing_cells = True
# ShownVariant notes, before the outputs are cleared, which student's variant a quiz
# notebook showed (a wrong answer's message says when it was another id's).
c.Autograde.sanitize_preprocessors = [
    "autograder.preprocessors.shownvariant.ShownVariant",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "autograder.preprocessors.dropemptymetadata.DropEmptyMetadata",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Autograde copies every non-notebook file of source/<assignment>/ over the submission
# (Autograde.exclude_overwriting stays empty), so coursekit.py is always the course's copy
# (nbgrader copies what the link points to; so does release_assignment, into the exchange).

# Feedback never shows hidden tests, grader tracebacks or grader source
# (autograder/feedback/pages.py), and nothing from a submission is active in it: no script,
# event handler, frame or javascript: link (autograder/feedback/inert.py; also for
# formgrader's feedback button).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "autograder.preprocessors.hidegradermaterial.HideGraderMaterial",
    # the course's CSS, so that every reader can read the page (contrast, links)
    "autograder.feedback.accessible.AccessibleStyle",
]
# Math in feedback pages and the formgrader reads the same offline: LaTeX in markdown becomes
# MathML and no MathJax is loaded from a CDN (autograder/feedback/offline_math.py).
from autograder.feedback.offline_math import configure as offline_math  # noqa: E402

offline_math(c)

c.GenerateFeedback.exporter_class = "autograder.feedback.inert.InertHTMLExporter"
# `python -m autograder grade` keeps its record of each graded submission here; nbgrader
# leaves it out of feedback folders and releases (the other entries are nbgrader's defaults).
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints",
    "*.pyc",
    "__pycache__",
    "feedback",
    ".autograder.json",
]

c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Which LMS column each assignment's grades go to in `python -m autograder export --to canvas`
# and `--to moodle` (autograder/grade/lms.py; default: a column named after the assignment,
# "Assignment: <name> (Real)" for Moodle). For example, existing assignments:
# c.LMS.canvas_columns = {"01_value": "Lesson 1: The Value node (4401)"}  # as Canvas exports it
# c.LMS.moodle_columns = {"01_value": "Assignment: Lesson 1"}  # as Moodle's import lists it

# On a JupyterHub (`python -m autograder hub`), this folder is one course of the hub's plan:
# nbgrader_config_hub.py, written by the hub, sets its course id and its exchange last.
load_subconfig("nbgrader_config_hub.py")  # noqa: F821 (nothing when the file is absent)
