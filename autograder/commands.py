"""The instructor's grading commands: ``python -m autograder
collect|grade|feedback|export|report|watch|demo``.

Exit codes (every command, ``errors.ExitCode``): 0 done, 1 done but some submissions or
files had problems (each one is listed), 2 the grader itself failed (or the command line
was wrong), 130 interrupted.
"""

from __future__ import annotations

import argparse
import sys
import traceback

from .errors import ExitCode, GraderError


def _common(p: argparse.ArgumentParser, db: bool = True) -> None:
    p.add_argument(
        "--course",
        metavar="DIR",
        default=None,
        help="course folder holding submitted/, autograded/, ... (default: the repository root)",
    )
    if db:
        p.add_argument(
            "--db",
            metavar="URL",
            default=None,
            help="gradebook database URL (default: nbgrader_config.py's, "
            "sqlite:///<course>/gradebook.db)",
        )


def _limits(args: argparse.Namespace):
    """``Limits``' defaults, the course's settings (``c.Limits`` in nbgrader_config.py),
    then what the command line gave."""
    from .course import nbgrader_config
    from .kernel.limits import Limits, parse_size

    memory = None
    if args.memory is not None:
        try:
            memory = parse_size(args.memory)
        except ValueError:
            raise GraderError(
                f"--memory {args.memory!r} is not a size such as 3G or 512M"
            ) from None
    return Limits.for_course(
        nbgrader_config(),
        cell_timeout=args.cell_timeout,
        wall=args.wall_limit,
        memory=memory,
        attempts=args.attempts,
        sandbox=args.sandbox,
    )


def _guard(fn):
    """Run a command: grader errors and crashes exit 2, Ctrl-C exits 130."""

    def run(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except GraderError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return ExitCode.FAILED
        except KeyboardInterrupt:
            print(
                "\ninterrupted: run the same command again to finish (nothing is lost "
                "or counted twice)",
                file=sys.stderr,
            )
            return ExitCode.INTERRUPTED
        except Exception as exc:
            name = getattr(exc, "name", None) or ""
            if isinstance(exc, ModuleNotFoundError) and name.startswith(("psycopg", "pymysql")):
                print(
                    f"error: the gradebook URL needs the database driver {name!r}: install "
                    "it in this environment (see docs/grading.md)",
                    file=sys.stderr,
                )
                return ExitCode.FAILED
            traceback.print_exc()
            print("error: the grader itself failed (above)", file=sys.stderr)
            return ExitCode.FAILED

    return run


@_guard
def _grade(args: argparse.Namespace) -> int:
    from .grade.display import print_report
    from .grade.run import grade

    report = grade(
        args.assignments or None,
        args.student or None,
        root=args.course,
        db_url=args.db,
        jobs=args.jobs,
        limits=_limits(args),
        force=args.force,
        progress=not args.quiet,
        subreaper=True,
        scheduler=args.scheduler,
    )
    print_report(report)
    return report.exit_code


@_guard
def _collect(args: argparse.Namespace) -> int:
    from .intake.collect import collect, print_collect_report

    report = collect(
        args.assignment, args.paths, pattern=args.pattern, root=args.course, force=args.force
    )
    print_collect_report(report)
    return report.exit_code


@_guard
def _feedback(args: argparse.Namespace) -> int:
    from .feedback.pages import feedback, print_feedback_report

    report = feedback(
        args.assignments or None,
        args.student or None,
        root=args.course,
        db_url=args.db,
        jobs=args.jobs,
        force=args.force,
    )
    print_feedback_report(report)
    return report.exit_code


@_guard
def _export(args: argparse.Namespace) -> int:
    from .grade.export import export

    paths = export(args.assignments or None, root=args.course, db_url=args.db, to=args.to)
    for path in paths:
        print(f"wrote {path}")
    return ExitCode.OK


@_guard
def _report(args: argparse.Namespace) -> int:
    from .report.page import print_report, report

    result = report(args.assignments or None, root=args.course, db_url=args.db, out=args.out)
    print_report(result)
    return result.exit_code


@_guard
def _watch(args: argparse.Namespace) -> int:
    from .watch.service import watch

    return watch(args.course, db_url=args.db, jobs=args.jobs, once=args.once)


@_guard
def _demo(args: argparse.Namespace) -> int:
    from .demo import demo

    return demo(jobs=args.jobs, keep=args.keep)


def add_grading_commands(sub) -> None:
    """Register the grading subcommands on ``python -m autograder``'s subparsers."""
    from .intake.collect import PATTERN_HELP
    from .kernel.limits import GiB, Limits

    p = sub.add_parser(
        "collect",
        help="file LMS downloads or notebooks named by student into submitted/",
        description="Unpack LMS zip downloads (or take a folder of notebooks) and file each "
        "notebook as submitted/<student>/<assignment>/<notebook>.ipynb with "
        "nbgrader's zip_collect. Every file that could not be placed is listed.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=PATTERN_HELP,
    )
    p.add_argument("assignment")
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="zip files, folders or notebooks (any mix)"
    )
    p.add_argument(
        "--pattern",
        default="auto",
        help="a preset (auto, student, canvas, moodle, folders) or a regular "
        "expression with (?P<student_id>...) (default: auto)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace submissions already collected even if they are newer",
    )
    _common(p, db=False)
    p.set_defaults(run=_collect)

    p = sub.add_parser(
        "watch",
        help="grade each submission as it arrives (nbgrader's exchange, or an inbox)",
        description="A service: takes each new submission from nbgrader's exchange "
        "(c.Exchange.root) or the inbox folder, grades it as `grade` does, and releases "
        "its feedback (nbgrader fetch_feedback; feedback/ for the inbox). Early feedback, "
        "the score policy and the folders are c.Watch settings (docs/grading.md). Stops "
        "on SIGTERM or Ctrl-C; a restart grades nothing twice and loses nothing.",
    )
    p.add_argument(
        "--once", action="store_true", help="grade what is there now, then exit (for cron)"
    )
    p.add_argument(
        "--jobs", "-j", type=int, default=None, help="submissions graded at once (default: cores)"
    )
    _common(p)
    p.set_defaults(run=_watch)

    p = sub.add_parser(
        "grade",
        help="autograde submitted work into nbgrader's gradebook",
        description="Autograde every pending submission (new or changed since it was last "
        "graded) into nbgrader's gradebook, in parallel on Dask (this machine's "
        "cores, or a cluster with --scheduler), under time and memory limits. "
        "Exit code 0: all graded; 1: graded, some submissions had problems "
        "(see the notes); 2: the grader itself failed.",
    )
    p.add_argument(
        "assignments",
        nargs="*",
        metavar="ASSIGNMENT",
        help="only these assignments (default: every one submitted)",
    )
    p.add_argument(
        "--student", action="append", metavar="ID", help="only this student (repeat for more)"
    )
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        help="submissions graded at once on this machine (default: its cores)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="grade on an existing Dask cluster instead of this machine: its "
        "scheduler's address (tcp://10.0.0.5:8786), a scheduler file "
        "(scheduler.json) or dask-gateway:CLUSTER_NAME (docs/grading.md)",
    )
    p.add_argument("--force", action="store_true", help="re-grade even unchanged submissions")
    defaults = Limits()
    p.add_argument(
        "--cell-timeout",
        type=int,
        metavar="S",
        help="seconds per cell (default: c.Limits.cell_timeout, else "
        f"c.Execute.timeout in nbgrader_config.py, else {defaults.cell_timeout})",
    )
    p.add_argument(
        "--wall-limit",
        type=int,
        metavar="S",
        help=f"seconds per notebook (default: c.Limits.wall, else {defaults.wall})",
    )
    p.add_argument(
        "--memory",
        metavar="SIZE",
        help="memory per grading kernel (default: c.Limits.memory, else "
        f"{defaults.memory // GiB}G)",
    )
    p.add_argument(
        "--attempts",
        type=int,
        metavar="N",
        help="runs of a notebook whose kernel crashes or hangs (default: "
        f"c.Limits.attempts, else {defaults.attempts})",
    )
    box = p.add_mutually_exclusive_group()
    box.add_argument(
        "--require-sandbox",
        dest="sandbox",
        action="store_const",
        const="require",
        help="fail (exit 2) if grading kernels cannot run in a bubblewrap sandbox",
    )
    box.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_const",
        const="off",
        help="run grading kernels unsandboxed (default: c.Limits.sandbox, else "
        "sandboxed when possible)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    _common(p)
    p.set_defaults(run=_grade)

    p = sub.add_parser(
        "feedback",
        help="per-student HTML feedback (without hidden tests)",
        description="Write feedback/<student>/<assignment>/<notebook>.html for graded "
        "submissions with nbgrader generate_feedback. Hidden tests, the "
        "reference engine and grader paths never reach these files, and "
        "nothing from a submission (script, event handler...) is active in "
        "them.",
    )
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    p.add_argument("--student", action="append", metavar="ID")
    p.add_argument("--jobs", "-j", type=int, default=None)
    p.add_argument("--force", action="store_true", help="rewrite feedback that is current")
    _common(p)
    p.set_defaults(run=_feedback)

    p = sub.add_parser(
        "export",
        help="grades CSV and per-test-cell CSV from the gradebook",
        description="Write grades.csv (student, assignment, score, max_score, ...) and "
        "cells.csv (one row per test cell) from nbgrader's gradebook.",
    )
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    p.add_argument(
        "--to", metavar="DIR", default=None, help="output folder (default: <course>/exports)"
    )
    _common(p)
    p.set_defaults(run=_export)

    p = sub.add_parser(
        "report",
        help="the class at a glance: one offline page, reports/index.html",
        description="Write reports/index.html, one page that opens offline: the class "
        "summary, score distributions, pass rate per exercise, the slips the hidden "
        "tests diagnosed counted across the class, quiz item statistics, missing and late "
        "submissions, grading time, and similar pairs of submissions (each with a "
        "side-by-side page). Exit code 1 lists each file it could not read (the page "
        "is written without it).",
    )
    p.add_argument(
        "assignments",
        nargs="*",
        metavar="ASSIGNMENT",
        help="only these assignments (default: every one graded or collected)",
    )
    p.add_argument(
        "--out", metavar="DIR", default=None, help="output folder (default: <course>/reports)"
    )
    _common(p)
    p.set_defaults(run=_report)

    p = sub.add_parser(
        "demo",
        help="grade a small bundled class end to end and print the table",
        description="Build demo-class/ (eight synthetic students, from the real solutions: "
        "perfect, blank, typical bugs, a kernel crash, an infinite loop, a "
        "malformed notebook, a late one), collect, grade, write feedback and "
        "CSVs, print the table, and write the class report (reports/index.html).",
    )
    p.add_argument("--jobs", "-j", type=int, default=None)
    p.add_argument(
        "--keep",
        action="store_true",
        help="keep demo-class/ from a previous run instead of rebuilding it",
    )
    p.set_defaults(run=_demo)
