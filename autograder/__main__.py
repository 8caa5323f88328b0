"""``python -m autograder <command>``: the course's instructor commands."""

from __future__ import annotations

import argparse
import sys

from .errors import ExitCode


def content_problems(selected: list[str], rebuilt=lambda assignment: True) -> list[str]:
    """What ``generate`` refuses in ``selected`` assignments' source (one line each):
    quiz points brought in line with questions.py first, then the notebooks' own checks
    (content/checks.py) and, for the assignments about to be ``rebuilt``, every hidden
    test written in a notebook run against the course's solution and the exercise's stub
    (verdicts/selftest.py)."""
    from .content import checks, quizpoints
    from .course import SOURCE
    from .verdicts import api, selftest

    found: list[str] = []
    for assignment in selected:
        if quizpoints.is_quiz(assignment):
            quizpoints.sync(assignment)
            found += quizpoints.problems(assignment)
        found += checks.problems(assignment, lambda a: set(api.hidden_tests(a)))
    if not found:  # the notebooks read right: run their hidden tests
        for assignment in [a for a in selected if rebuilt(a)]:
            found += selftest.problems(assignment, SOURCE)
    return found


def _generate(args: argparse.Namespace) -> int:
    from .content import checks
    from .content.generate import generate
    from .content.generate import stale as stale_for
    from .course import assignments
    from .verdicts.api import practice_round

    def stale(assignment: str) -> bool:
        return stale_for(assignment, practice_round, solutions=not args.no_solutions) is not None

    selected = args.assignments or assignments()
    for assignment in selected:
        for line in checks.length_notes(assignment):
            print(f"generate: note: {line}", file=sys.stderr)
    problems = content_problems(selected, rebuilt=lambda a: args.force or stale(a))
    for line in problems:
        print(f"generate: {line}", file=sys.stderr)
    if problems:
        print("generate: nothing was rebuilt; fix the lines above", file=sys.stderr)
        return ExitCode.PROBLEMS
    generate(
        args.assignments or None,
        solutions=not args.no_solutions,
        practice=practice_round,
        force=args.force,
    )
    return ExitCode.OK


def _check_generated(args: argparse.Namespace) -> int:
    from .content.generate import check_generated
    from .verdicts.api import practice_round

    problems = check_generated(args.assignments or None, practice=practice_round)
    for line in problems:
        print(f"stale: {line}")
    if problems:
        print("run `make generate` (python -m autograder generate) and commit the result")
        return ExitCode.PROBLEMS
    print("notebooks/ and solutions/ are up to date with source/")
    return ExitCode.OK


def _sync_points(args: argparse.Namespace) -> int:
    from .content import quizpoints
    from .course import assignments

    quizzes = [a for a in assignments() if quizpoints.is_quiz(a)]
    problems = [f"{a}: not a quiz (no questions.py)" for a in args.assignments if a not in quizzes]
    for assignment in [a for a in args.assignments or quizzes if a in quizzes]:
        changed = quizpoints.sync(assignment)
        print(f"{assignment}: {'points written' if changed else 'up to date'} (from questions.py)")
        problems += quizpoints.problems(assignment)
    for line in problems:
        print(f"problem: {line}")
    return ExitCode.PROBLEMS if problems else ExitCode.OK


def _self_check(args: argparse.Namespace) -> int:
    from .students.selfcheck import self_check

    return self_check(args.folder)


def _lab(args: argparse.Namespace) -> int:
    from .students.lab import lab

    extra = [a for a in args.jupyter_args if a != "--"]
    if args.port:
        extra.append(f"--ServerApp.port={args.port}")
    if args.no_browser:
        extra.append("--no-browser")
    return lab(args.work, extra)


def _slides(args: argparse.Namespace) -> int:
    from pathlib import Path

    from .content.slides import main

    return main(
        args.assignments or None,
        Path(args.out) if args.out else None,
        instructor=args.instructor,
        only_check=args.check,
    )


def _release(args: argparse.Namespace) -> int:
    from .students.edition import release

    return release(
        args.to,
        args.assignments or None,
        solutions=args.solutions,
        zip_=args.zip,
        git=args.git,
        as_of=args.as_of,
        upto=args.upto,
        self_paced=args.self_paced,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "generate", help="rebuild notebooks/ and solutions/ from source/ where it changed"
    )
    p.add_argument("assignments", nargs="*", help="only these (default: all)")
    p.add_argument("--no-solutions", action="store_true", help="only the student versions")
    p.add_argument(
        "--force", action="store_true", help="rebuild even the assignments that are up to date"
    )
    p.set_defaults(run=_generate)

    p = sub.add_parser("check-generated", help="exit 1 if notebooks/ or solutions/ is stale")
    p.add_argument("assignments", nargs="*", help="only these (default: all)")
    p.set_defaults(run=_check_generated)

    p = sub.add_parser(
        "sync-points",
        help="write each quiz question's points (POINTS in questions.py) into its notebook",
    )
    p.add_argument("assignments", nargs="*", help="only these quizzes (default: all)")
    p.set_defaults(run=_sync_points)

    p = sub.add_parser(
        "self-check", help="run every notebook's visible checks, print a progress table"
    )
    p.add_argument("folder", nargs="?", help="default: my-work/ if it exists, else notebooks/")
    p.set_defaults(run=_self_check)

    p = sub.add_parser("lab", help="JupyterLab for students on my-work/ (seeded from notebooks/)")
    p.add_argument("--work", help="the working copy to open (default: my-work/)")
    p.add_argument("--port", type=int, help="port (default: 8888, or the next free one)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="after --: for jupyter lab")
    p.set_defaults(run=_lab)

    from .commands import add_grading_commands  # collect, grade, feedback, export, demo

    add_grading_commands(sub)

    p = sub.add_parser("slides", help="students' slides of every lesson in slides/ (offline)")
    p.add_argument("assignments", nargs="*", help="only these lessons (default: all)")
    p.add_argument("--out", help="output folder (default: slides/, slides-instructor/)")
    p.add_argument(
        "--instructor",
        action="store_true",
        help="slides with worked answers, for lecturing (never for students)",
    )
    p.add_argument(
        "--check", action="store_true", help="only list slides with more than a screen of text"
    )
    p.set_defaults(run=_slides)

    p = sub.add_parser(
        "release",
        help="write the student edition (no answers) to a folder",
        description="Write the student edition: the assignments whose release date in "
        "c.Schedule.dates (nbgrader_config.py) has come, or all of them when no dates are "
        "set, with the course's version of each past lesson in course/.",
    )
    p.add_argument("assignments", nargs="*", help="only these (default: by the course's dates)")
    p.add_argument("--to", required=True, help="the folder to write (empty, or a release)")
    when = p.add_mutually_exclusive_group()
    when.add_argument(
        "--as-of", metavar="DATE", help="release as on DATE (YYYY-MM-DD; default: today)"
    )
    when.add_argument(
        "--upto",
        metavar="ASSIGNMENT",
        help="release every assignment up to and including this one; the ones before it "
        "are past (their course versions ship)",
    )
    when.add_argument(
        "--self-paced",
        action="store_true",
        help="for learners on their own: every assignment, and the course's version of "
        'every lesson in course/ (engine("course") works whenever they choose)',
    )
    p.add_argument(
        "--solutions",
        action="store_true",
        help="write the self-learners' solutions download instead",
    )
    p.add_argument("--zip", action="store_true", help="also write the folder as FOLDER.zip")
    p.add_argument("--git", action="store_true", help="commit the release in FOLDER's git repo")
    p.set_defaults(run=_release)

    return parser


def main(argv: list[str] | None = None) -> int:
    from .course import CoursekitError, place_coursekit

    args = build_parser().parse_args(argv)
    try:  # every assignment folder gets its coursekit.py (a link to source/.shared/)
        place_coursekit()
    except CoursekitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.FAILED
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
