"""Problem set 1 (07_set_gradients): relative_error and grad_check earn their shares of
exercise 3 separately, and every hidden failure of the set says what a student needs.

- A slip in one of the two functions costs exactly its half of the points; grad_check is
  judged with the course's relative_error when the student's fails (so one bug costs one
  function), and any way of guarding 0/0 that the text allows keeps full marks.
- Over every slip of the catalogue (tests/gradients_slips.py), each failing cell's message
  names the function, shows what was expected and what came out (where the result is a
  number or a list, answers aside: their key stays in the grader), and gives a hint: a
  line in parentheses, or an instruction after a colon. The table is printed (pytest -s).
"""

from __future__ import annotations

import re

import pytest
from catalogue import changed, changes_of, graded, ids
from gradients_slips import BUGS, CHECK, FAULTY, NAMES, VARIANTS
from helpers import run_cells, verdict_of

A = "07_set_gradients"

# The catalogue's slips of exercise 3, and the function each one is in.
IN_RELATIVE_ERROR = [b[0] for b in BUGS if b[3] == {CHECK} and b[0].startswith("relative")]
IN_GRAD_CHECK = [b[0] for b in BUGS if b[3] == {CHECK} and b[0].startswith("grad_check")]
EXERCISE_3_VARIANTS = [v for v in VARIANTS if v[0].startswith(("relative", "grad_check"))]


def verdict(nb, cell: str = CHECK):
    """The hidden verdict of ``cell`` on the notebook's definitions up to its exercise."""
    ns = run_cells(nb, A, until="grads_grad_check", tests=False)
    return verdict_of(ns, A, cell)


def _row(name: str):
    (row,) = [b for b in BUGS if b[0] == name]
    return row


def test_the_catalogue_has_slips_in_both_functions():
    assert len(IN_RELATIVE_ERROR) >= 8 and len(IN_GRAD_CHECK) >= 9
    assert len(IN_RELATIVE_ERROR) + len(IN_GRAD_CHECK) == sum(b[3] == {CHECK} for b in BUGS)


@pytest.mark.parametrize("name", IN_RELATIVE_ERROR + IN_GRAD_CHECK)
def test_a_slip_costs_its_functions_share(solution, name):
    result = verdict(changed(solution, changes_of(_row(name))))
    assert not result.passed and result.credit == pytest.approx(0.5), result
    other = "`grad_check`" if name in IN_RELATIVE_ERROR else "`relative_error`"
    assert f"credited: {other}" in " ".join(result.message.split()), result.message


@pytest.mark.parametrize("name, old, new", EXERCISE_3_VARIANTS, ids=ids(EXERCISE_3_VARIANTS))
def test_a_correct_variant_keeps_full_marks(solution, name, old, new):
    assert verdict(changed(solution, [(old, new)])).passed


def test_grad_check_is_judged_on_the_courses_relative_error(solution):
    """A relative_error that returns |a - b| would make a right grad_check return absolute
    differences: with the course's in its place, grad_check keeps its share."""
    nb = changed(solution, [(_row("relative error absolute")[1], "return abs(a - b)")])
    result = verdict(nb)
    assert result.credit == pytest.approx(0.5) and "credited: `grad_check`" in result.message


# ---- the messages ----------------------------------------------------------------------------

SHOWS = re.compile(r"\b(should|expected)\b.*\bgot\b|\braised\b", re.DOTALL)
INSTRUCTION = re.compile(
    r":\s+(make|nudge|replace|override|add|copy|name|use|divide|take|return|set|build|"
    r"subtract|keep|put|compare|apply|call)\b"
)
# Messages about what the code is rather than a value it returns (a method not
# overridden, a node of the wrong class, the list xs changed): nothing to show as a number.
STRUCTURE = ("still has", "still lacks", "makes a", "changed the list", "is not answered")


def has_hint(message: str) -> bool:
    lines = [line for line in message.splitlines() if not line.startswith("credited:")]
    text = "\n".join(lines)
    return (
        any(line.startswith("(") for line in lines[1:])
        or bool(INSTRUCTION.search(text))
        or "such as" in text  # an example of the form asked for
    )


def _answer(cell: str, message: str) -> bool:
    return cell == FAULTY or message.startswith("predicted_")


def test_every_hidden_message_names_shows_and_hints(solution):
    rows, total, good, exempt = [], 0, 0, 0
    for name, *_ in BUGS:
        failed = graded(changed(solution, changes_of(_row(name))), A)
        for cell, message in failed.items():
            flat = " ".join(message.split())
            names = any(n in flat for n in NAMES[cell])
            numbers = _answer(cell, message) or any(s in flat for s in STRUCTURE)
            shows = numbers or bool(SHOWS.search(flat))
            hint = has_hint(message)
            total += 1
            exempt += numbers
            ok = names and shows and hint
            good += ok
            rows.append((ok, names, shows, hint, name, cell, message.splitlines()[0]))
    print(
        f"\n{A}: {good}/{total} hidden messages name the function, show expected and got "
        f"(or are about an answer or the code's structure: {exempt}) and give a hint"
    )
    for ok, names, shows, hint, name, cell, first in rows:
        marks = "".join("✓" if x else "✗" for x in (names, shows, hint))
        print(f"{'✓' if ok else '✗'} {marks} {name} [{cell}] | {first}")
    assert total >= 60
    assert good >= 0.95 * total, [r for r in rows if not r[0]]
