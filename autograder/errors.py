"""What every command can end with: its exit code, and the error for "the grader failed"."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """The exit code of every ``python -m autograder`` command."""

    OK = 0  # done
    PROBLEMS = 1  # done, but some submissions or files had problems (each one is listed)
    FAILED = 2  # the grader itself failed, or the command line was wrong
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: run the same command again to finish

    def meaning(self) -> str:
        return {
            ExitCode.OK: "all graded",
            ExitCode.PROBLEMS: "graded; some submissions had problems (see notes)",
            ExitCode.FAILED: "the grader itself failed",
            ExitCode.INTERRUPTED: "interrupted",
        }[self]


class GraderError(RuntimeError):
    """The grader itself could not do its job (exit code 2)."""
