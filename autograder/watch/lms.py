"""Scores to the LMS after each cycle (``c.Watch.lti_scores``): what ``export --to lti``
sends (LTI Assignment and Grade Services, autograder/lti/ags.py), for the students just
graded. A failure is logged and reported, never stops the watcher."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..course import Course
from ..errors import GraderError


def send_scores(
    course: Course, graded: list[tuple[str, str]], out: Path, log: Callable[[str], None]
) -> list[str]:
    """Send the scores of ``graded`` ((student, assignment) pairs); the failures, one line
    each. ``out``/lti.csv says what was sent last."""
    from ..grade.export import export

    failures = []
    for assignment in sorted({a for _, a in graded}):
        students = [s for s, a in graded if a == assignment]
        try:
            sent = export(
                [assignment],
                root=course.root,
                db_url=course.db_url,
                to="lti",
                students=students,
                out=out,
            )
        except GraderError as exc:
            failures.append(f"{assignment}: scores not sent to the LMS: {exc}")
            log(f"{assignment}: scores not sent to the LMS: {exc}")
            continue
        for line in [*sent.notes[:1], *sent.problems]:
            log(f"{assignment}: LMS: {line}")
    return failures
