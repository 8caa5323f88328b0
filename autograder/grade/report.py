"""The report of one ``grade`` run: an ``Outcome`` per submission and the run's
``GradeReport``. ``run.py`` makes them, ``display.py`` shows them."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ExitCode


@dataclass
class Outcome:
    """One submission's grade, as shown and reported."""

    student: str
    assignment: str
    score: float = 0.0
    max_score: float = 0.0
    problem: bool = False
    note: str = ""
    seconds: float = 0.0
    status: str = "graded"  # graded | unchanged | failed
    late_seconds: float = 0.0

    @property
    def mark(self) -> str:
        return "✗" if self.problem or self.status == "failed" else "✓"


@dataclass
class GradeReport:
    """What a ``grade`` run did: an outcome per submission, problems with what was
    submitted, and failures of the grader itself."""

    outcomes: list[Outcome]
    problems: list[str]
    failures: list[str]
    graded: int
    unchanged: int
    seconds: float

    @property
    def exit_code(self) -> ExitCode:
        if self.failures:
            return ExitCode.FAILED
        if self.problems or any(o.problem for o in self.outcomes):
            return ExitCode.PROBLEMS
        return ExitCode.OK
