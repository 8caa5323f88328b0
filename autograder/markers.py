"""nbgrader's region markers, read one way for the whole course.

An instructor cell marks its solution with ``### BEGIN SOLUTION`` ... ``### END SOLUTION``
and a test cell its hidden tests with ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN
TESTS``. A line is a marker when it contains the marker's text anywhere, nbgrader's own
rule (``ClearSolutions`` and ``ClearHiddenTests``), so that what this module calls a
solution or a hidden test is exactly what nbgrader removes. Regions do not nest: a marker
ends the region it is in and begins its own.
"""

from __future__ import annotations

from typing import NamedTuple

BEGIN_SOLUTION, END_SOLUTION = "BEGIN SOLUTION", "END SOLUTION"
BEGIN_HIDDEN, END_HIDDEN = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
ALL = (BEGIN_SOLUTION, END_SOLUTION, BEGIN_HIDDEN, END_HIDDEN)
SOLUTION, HIDDEN = "solution", "hidden"
_KIND = {
    BEGIN_SOLUTION: (SOLUTION, True),
    END_SOLUTION: (SOLUTION, False),
    BEGIN_HIDDEN: (HIDDEN, True),
    END_HIDDEN: (HIDDEN, False),
}


class Line(NamedTuple):
    text: str
    region: str | None  # SOLUTION, HIDDEN or None: the region the line is in (or marks)
    marker: bool  # the line is a marker (it begins or ends ``region``)


def read(source: str) -> list[Line]:
    """Every line of ``source`` with the region it belongs to."""
    out, region = [], None
    for text in source.split("\n"):
        found = next(
            (m for m in (BEGIN_HIDDEN, END_HIDDEN, BEGIN_SOLUTION, END_SOLUTION) if m in text), None
        )
        if found is None:
            out.append(Line(text, region, False))
            continue
        kind, begins = _KIND[found]
        out.append(Line(text, kind, True))
        region = kind if begins else None
    return out


def inside(source: str, *regions: str) -> str:
    """The lines of ``source`` inside the given regions, markers left out."""
    return "\n".join(ln.text for ln in read(source) if ln.region in regions and not ln.marker)


def without(source: str, *regions: str) -> str:
    """``source`` without the given regions and their markers."""
    return "\n".join(ln.text for ln in read(source) if ln.region not in regions)


def has(source: str, region: str) -> bool:
    """Whether ``source`` has a marker of ``region``."""
    return any(ln.marker and ln.region == region for ln in read(source))


def visible(source: str) -> str:
    """A test cell as students see it: without its hidden tests."""
    return without(source, HIDDEN).rstrip()


def solved(source: str) -> str:
    """An instructor cell as the solutions show it: hidden tests gone, solution markers
    dropped, the solution kept."""
    return "\n".join(
        ln.text for ln in read(source) if ln.region != HIDDEN and not ln.marker
    ).rstrip()


def is_pointer(hidden: str) -> bool:
    """A hidden region with no code of its own: only comments (a pointer to the test in
    ``autograder/verdicts/hidden/<assignment>.py``), or the old region that only raises."""
    code = [ln.strip() for ln in hidden.splitlines()]
    code = [ln for ln in code if ln and not ln.startswith("#")]
    return not code or all(ln.startswith("raise RuntimeError(") for ln in code)
