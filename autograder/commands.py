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


def _course_here(p: argparse.ArgumentParser) -> None:
    """--course on a sub-subcommand too (``roster import FILE --course DIR``), without
    hiding one given before it (``roster --course DIR import FILE``)."""
    p.add_argument(
        "--course",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="course folder (default: the repository root)",
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
        args.assignment,
        args.paths,
        pattern=args.pattern,
        root=args.course,
        force=args.force,
        worksheet=args.worksheet,
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

    written = export(
        args.assignments or None, root=args.course, db_url=args.db, out=args.out, to=args.to
    )
    for path in written:
        print(f"wrote {path}")
    for line in written.notes:
        print(f"note: {line}")
    for line in written.problems:
        print(f"problem: {line}")
    return ExitCode.PROBLEMS if written.problems else ExitCode.OK


@_guard
def _roster(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .course import ROOT
    from .roster import (
        ROSTER,
        import_roster,
        print_import_report,
        read_roster,
        roster_notes,
    )

    root = Path(args.course or ROOT)
    if getattr(args, "file", None):
        report = import_roster(root, Path(args.file), args.source)
        print_import_report(report)
        return report.exit_code
    roster = read_roster(root)
    if not (root / ROSTER).exists():
        print(
            f"no {root / ROSTER} yet: `roster import FILE` makes it from a Canvas or Moodle "
            "export (and collecting a Canvas download adds its students)"
        )
        return ExitCode.OK
    print(f"{root / ROSTER}: {len(roster)} students")
    for note in roster_notes(roster):
        print(f"note: {note}")
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
def _hub(args: argparse.Namespace) -> int:
    from .hub.launch import hub

    return hub(args.plan, check_only=args.check)


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
        "nbgrader's zip_collect, under the student's id in roster.csv (Canvas: by the "
        "Canvas user id in the file name, adding users the roster lacks; Moodle: by name, "
        "or by --worksheet). Every file that could not be placed is listed.",
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
    p.add_argument(
        "--worksheet",
        metavar="FILE",
        default=None,
        help="Moodle's grading worksheet of this assignment (CSV): tells apart students "
        "of one name, by their email in roster.csv",
    )
    _common(p, db=False)
    p.set_defaults(run=_collect)

    p = sub.add_parser(
        "roster",
        help="the class list (roster.csv): students by stable id, imported from the LMS",
        description="Without a subcommand (or with `show`): how many students roster.csv "
        "holds, and what to know about it. `import FILE`: merge a Canvas gradebook export "
        "or a Moodle grades export into roster.csv; students already there keep their id, "
        "new ones get one, no row is ever dropped. Exit code 1: some rows could not be "
        "taken (each is listed).",
    )
    _common(p, db=False)
    p.set_defaults(run=_roster, file=None)
    roster_sub = p.add_subparsers(dest="roster_command", metavar="SUBCOMMAND")
    q = roster_sub.add_parser("show", help="count the students and list what to know")
    _course_here(q)
    q.set_defaults(run=_roster, file=None)
    q = roster_sub.add_parser(
        "import",
        help="merge a Canvas gradebook export or a Moodle grades export into roster.csv",
        description="Canvas: Grades > Export > Export Entire Gradebook (a CSV). Moodle: "
        "Grades > Export > Plain text file. New students get an id from the export "
        "(Canvas: SIS Login ID, else SIS User ID, else the name; Moodle: ID number, else "
        "the email before the @, else the name).",
    )
    q.add_argument("file", metavar="FILE", help="the exported CSV file")
    q.add_argument(
        "--from",
        dest="source",
        choices=("canvas", "moodle", "auto"),
        default="auto",
        help="which LMS wrote FILE (default: auto, from its header)",
    )
    _course_here(q)
    q.set_defaults(run=_roster)

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
        "hub",
        help="run the course's JupyterHub: courses, students, formgrader, watch (as root)",
        description="Check the hub's plan (TOML: autograder/hub/example-hub.toml), prepare "
        "each course's folder and exchange, then run JupyterHub in the foreground: students "
        "fetch, validate and submit in the Assignments tab, each course's watch service "
        "grades on submit, instructors grade in their course's formgrader. Ctrl-C stops it.",
    )
    p.add_argument("--plan", required=True, metavar="FILE", help="the hub's plan (TOML)")
    p.add_argument(
        "--check", action="store_true", help="only check the plan (one line per problem)"
    )
    p.set_defaults(run=_hub)

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
        help="grades as CSV, or as Canvas's or Moodle's gradebook import file",
        description="Write grades.csv (student, assignment, score, max_score, ...), "
        "cells.csv (one row per test cell) and items.csv (quiz item statistics) from "
        "nbgrader's gradebook; with --to canvas or --to moodle, canvas.csv or moodle.csv "
        "to import into the LMS's gradebook, students named by roster.csv (exit code 1: "
        "some students could not be named and are listed).",
    )
    p.add_argument("assignments", nargs="*", metavar="ASSIGNMENT")
    p.add_argument(
        "--to",
        metavar="FORMAT",
        default="csv",
        help="csv (default), canvas (Canvas's gradebook import CSV) or moodle (Moodle's "
        "grade import CSV)",
    )
    p.add_argument(
        "--out", metavar="DIR", default=None, help="output folder (default: <course>/exports)"
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
