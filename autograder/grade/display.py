"""What ``grade`` shows: progress while it runs, then the class table and the report."""

from __future__ import annotations

import sys
import time

from .report import GradeReport, Outcome


class Display:
    """A progress bar per submission being graded, a line per finished one."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total = total
        self.done = 0
        self.stream = stream or sys.stdout
        self.tty = enabled and hasattr(self.stream, "isatty") and self.stream.isatty()
        self.enabled = enabled
        self.drawn = 0
        self.last = 0.0

    def _clear(self) -> None:
        if self.tty and self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def finished(self, o: Outcome) -> None:
        if not self.enabled:
            return
        self.done += 1
        self._clear()
        width = len(str(self.total))
        score = f"{num(o.score)}/{num(o.max_score)}"
        line = (
            f"[{self.done:>{width}}/{self.total}] {o.mark} {o.student:<16} "
            f"{o.assignment:<22} {score:>9}  {o.seconds:5.1f} s"
        )
        if o.note and o.problem:
            line += f"  {o.note[:100]}"
        self.stream.write(line + "\n")
        self.stream.flush()

    def draw(self, rows: list[tuple[str, str, float]]) -> None:
        """Redraw the bars: (label, notebook, fraction done) per submission in progress."""
        if not self.tty or time.monotonic() - self.last < 0.2:
            return
        self.last = time.monotonic()
        self._clear()
        for label, notebook, frac in rows:
            filled = int(frac * 20)
            bar = "█" * filled + "░" * (20 - filled)
            self.stream.write(f"  {label[:34]:<34} {bar} {notebook[:16]}\n")
        self.drawn = len(rows)
        self.stream.flush()

    def close(self) -> None:
        self._clear()


def num(x: float) -> str:
    return f"{x:g}" if x == int(x) else f"{x:.2f}"


def summary_table(outcomes: list[Outcome]) -> str:
    if not outcomes:
        return "nothing to show"
    rows = [("student", "assignment", "score", "status", "note")]
    for o in sorted(outcomes, key=lambda o: (o.assignment, o.student)):
        status = "FAILED" if o.status == "failed" else ("problem" if o.problem else "ok")
        if o.status == "unchanged":
            status += " (unchanged)"
        rows.append((o.student, o.assignment, f"{num(o.score)}/{num(o.max_score)}", status, o.note))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = []
    for i, r in enumerate(rows):
        head = "  ".join(
            f"{c:<{w}}" if k != 2 else f"{c:>{w}}" for k, (c, w) in enumerate(zip(r[:4], widths))
        )
        lines.append(f"{head}  {r[4]}".rstrip())
        if i == 0:
            lines.append("-" * min(120, len(lines[0]) + 20))
    return "\n".join(lines)


def print_report(report: GradeReport, stream=None) -> None:
    """The class table, the problems and failures, and what the exit code means."""
    stream = stream or sys.stdout
    if report.outcomes:
        print("\n" + summary_table(report.outcomes), file=stream)
    for line in report.problems:
        print(f"problem: {line}", file=stream)
    for line in report.failures:
        print(f"GRADER FAILURE: {line}", file=stream)
    n_problem = sum(1 for o in report.outcomes if o.problem)
    print(
        f"\n{report.graded} graded, {report.unchanged} unchanged, {n_problem} with "
        f"problems, in {report.seconds:.0f} s",
        file=stream,
    )
    code = report.exit_code
    print(f"exit code {int(code)}: {code.meaning()}", file=stream)
