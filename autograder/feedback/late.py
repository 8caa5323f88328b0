"""What a feedback page says about a late submission.

A late submission's pages get, under their title, a short section: when it was
submitted, how late, against which due date (the student's extended one, with the
assignment's, when they have an extension), the course's late policy, the points it
takes and the score that results (``c.Schedule``, schedule.py). An on-time page gets
nothing.

The section is written into pages nbgrader already made (``with_late_section``), in one
fixed place (right after the page's first heading, which is the template's, before any
of the notebook), and replaced there when it changes: a new policy or extension needs
another ``feedback`` run, not nbgrader again. Everything in it is escaped text.
"""

from __future__ import annotations

import html
import re

from ..schedule import Lateness, LatePolicy, Schedule, late_duration, late_penalty

SECTION_ID = "autograder-late"
STYLE = "border:1px solid #d2413a;border-radius:4px;padding:.4em .8em;margin:.6em 0;color:#222"
_HEADING_END = re.compile(r"</h[14]>", re.IGNORECASE)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def late_section(
    schedule: Schedule,
    policy: LatePolicy,
    assignment: str,
    lateness: Lateness,
    score: float,
    max_score: float,
) -> str:
    """The section for a submission (``""`` when it is not late)."""
    seconds = lateness.seconds
    if seconds <= 0 or lateness.due is None or lateness.submitted is None:
        return ""
    when = schedule.show(lateness.submitted)
    due = schedule.show(lateness.due)
    against = f"the due date, {due}"
    if lateness.extended:
        against = f"your extended due date, {due}"
        if lateness.regular is not None and lateness.regular != lateness.due:
            against += f" (the assignment's: {schedule.show(lateness.regular)})"
    penalty, why = late_penalty(score, max_score, seconds, policy)
    final = max(0.0, float(score or 0) - penalty)
    result = (
        f"{score:g} − {penalty:g} = {final:g} / {max_score:g}"
        if penalty
        else f"{final:g} / {max_score:g}"
    )
    lines = [
        f"<strong>Late submission.</strong> Submitted {_e(when)}, "
        f"{_e(late_duration(seconds))} after {_e(against)}.",
        f"Late policy: {_e(policy.describe())}. {_e(why)}.",
        f"Score for {_e(assignment)}: <strong>{_e(result)}</strong>.",
    ]
    body = "".join(f"<p style='margin:.2em 0'>{line}</p>" for line in lines)
    return f'<section id="{SECTION_ID}" class="late-submission" style="{STYLE}">{body}</section>'


def with_late_section(page: str, section: str) -> str:
    """``page`` with ``section`` (or none, for ``""``) right after its first heading,
    replacing the one an earlier run put there."""
    heading = _HEADING_END.search(page)
    if heading is None:
        at = page.find(">", page.lower().find("<body")) + 1 if "<body" in page.lower() else 0
    else:
        at = heading.end()
    rest = page[at:]
    if rest.startswith(f'<section id="{SECTION_ID}"'):
        rest = rest[rest.index("</section>") + len("</section>") :]
    return page[:at] + section + rest
