"""``python -m autograder report``: the class at a glance, for instructors.

One offline page, ``reports/index.html``, from nbgrader's gradebook, the grader's records
and the autograded notebooks' verdicts: score distributions, pass rates per exercise, the
slips the hidden tests diagnosed counted across the class, quiz item statistics, missing
and late submissions, grading time; and pairs of submissions whose student-written code is
suspiciously alike (``similarity``: winnowed fingerprints, with ``copydetect``), each on a
side-by-side page of its own.
"""
