"""A failing ``==`` on a student's large data: the grader's message and scrub, then and now.

A hidden region's ``assert got == expected`` used to put the whole repr of the kernel's
data into the message, and the scrub of the kernel's texts for early pages
(verdicts/heard.py ``without_heard``) then searched that message once per text the kernel
sent, extending each match one character at a time (issue 49: a blank notebook kept a
grading worker busy for 273 s). Now the message shows a cut repr (remote.py ``shown``),
is capped (api.py ``capped``), and the scrub is linear (set lookups and a bisection).

For data of N distinct strings of 106 characters (the kernel sends each, so each is a
text to scrub), this times both paths in the same run: the grader of ``--before``
(default dad6ccf) building its message and scrubbing it, in a child process stopped at
``--limit`` seconds, and this checkout's. Target: the new path in milliseconds whatever
N, the old one growing with N squared. Measured 2026-11-29, 2 cores shared with other
work (load average 5): N = 2,000: 2.6 s then, 6 ms now (413x); N = 20,000: over 60 s then
(stopped), 136 ms now (past 20,000 texts the scrub is skipped and the early page shows
none of the message; the time is reading the answer's texts).

    python benchmarks/hostile_messages.py [--sizes 2000 20000] [--limit 60] [--before dad6ccf]
"""

from __future__ import annotations

import subprocess
import sys
import time

import common

ROOT = common.ROOT

OLD = r"""
import sys, time, types
source = sys.stdin.read()
heard = types.ModuleType("old_heard")
exec(compile(source, "old_heard", "exec"), heard.__dict__)
n = int(sys.argv[1])
data = [f"{i:06d}" + "x" * 100 for i in range(n)]
start = time.perf_counter()
message = f"Value: `assert Value(1.0).data == 2.0`: got {data!r}, expected 2.0"
heard.without_heard(message, heard.heard_texts({"result": [{"v": data}]}))
print(time.perf_counter() - start)
"""


def old_path(before: str, n: int, limit: float) -> float | None:
    """Seconds of the old message and scrub (None: stopped at ``limit``)."""
    source = subprocess.run(
        ["git", "show", f"{before}:autograder/verdicts/heard.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    try:
        done = subprocess.run(
            [sys.executable, "-c", OLD, str(n)],
            input=source,
            capture_output=True,
            text=True,
            timeout=limit,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip())


def new_path(n: int) -> float:
    from autograder.verdicts import api
    from autograder.verdicts.heard import Heard, without_heard
    from autograder.verdicts.remote import shown

    data = [f"{i:06d}" + "x" * 100 for i in range(n)]
    start = time.perf_counter()
    heard = Heard()
    heard.add({"result": [{"v": data}]})
    message = api.capped(f"Value: `assert Value(1.0).data == 2.0`: got {shown(data)}, expected 2.0")
    if heard.complete:
        without_heard(message, heard.texts)
    return time.perf_counter() - start


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument("--limit", type=float, default=60.0, help="seconds for the old path")
    parser.add_argument("--before", default="dad6ccf", help="the grader to compare with")
    args = parser.parse_args()
    print(f"load average {common.load_average()}")
    for n in args.sizes:
        old = old_path(args.before, n, args.limit)
        new = new_path(n)
        then = f"{old:.3f} s" if old is not None else f"> {args.limit:g} s (stopped)"
        ratio = f"{old / new:.0f}x" if old is not None else f"> {args.limit / new:.0f}x"
        print(f"N = {n:>6}: then {then}, now {new * 1000:.1f} ms ({ratio})")


if __name__ == "__main__":
    main()
