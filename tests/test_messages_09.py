"""What a student reads when a hidden test of set 09 fails (issue 42): over every slip of
the set's catalogues (test_09_set_arrays' BUGS, test_contracts_09's DEPARTURES that
grading fails), the message names the function at fault on its first line, shows what
was expected and what came back (``should``/``expected`` and ``got``; for an array, a few
of its numbers and its shape), and ends with a hint in parentheses: a raised error
(numpy's broadcast ValueError, a missing attribute) never reaches the student without the
hint the grader knows. Every line under 90 characters.

The notebooks were graded once per session by the catalogue tests (tests/catalogue.py);
the table of messages is printed (pytest -s) for reading.
"""

from __future__ import annotations

import re

import test_09_set_arrays as t09
from catalogue import changed, graded, solution
from test_contracts_09 import DEPARTURES

A = t09.A
NAMES = {
    t09.COUNT: ("count_nodes",),
    t09.UNB: ("unbroadcast",),
    t09.ADD: ("`Tensor.__add__`",),
    t09.MATMUL: ("`Tensor.__matmul__`",),
    t09.TANH_SUM: ("`Tensor.tanh`", "`Tensor.sum`"),
    t09.BACKWARD: ("`Tensor.backward`",),
}
EXPECTED = re.compile(r"\b(should|expected)\b")
GOT = re.compile(r"\bgot\b")


def slips():
    """(name, its test cell, the notebook) for every slip grading fails."""
    for name, old, new, cells in t09.BUGS:
        (cell,) = cells
        yield name, cell, changed(solution(A), [(old, new)])
    for name, changes, cell, words in DEPARTURES:
        if words is not None:
            yield name, cell, changed(solution(A), changes)


def explains(cell: str, message: str) -> dict[str, bool]:
    """What the message does: names the function (first line), shows what was expected
    and what came back, gives a hint (a line in parentheses)."""
    lines = message.splitlines()
    return {
        "names": bool(lines) and any(n in lines[0] for n in NAMES[cell]),
        "expected": bool(EXPECTED.search(message)),
        "got": bool(GOT.search(message)),
        "hint": any(line.startswith("(") for line in lines[1:]),
    }


def test_every_hidden_message_names_expected_got_and_a_hint():
    rows, good, total = [], 0, 0
    for name, cell, nb in slips():
        message = graded(nb, A).get(cell)
        assert message is not None, f"grading passes {name}"
        assert all(len(line) < 90 for line in message.splitlines()), message
        found = explains(cell, message)
        total += 1
        good += all(found.values())
        rows.append((name, found, message))
    print(
        f"\n09_set_arrays: {good}/{total} hidden messages name the function, expected, got"
        " and a hint"
    )
    for name, found, message in rows:
        missing = [k for k, ok in found.items() if not ok]
        print(
            f"{'✓' if not missing else '✗ ' + ','.join(missing)} {name} | {message.splitlines()[0]}"
        )
    assert total >= 60
    assert good == total, [(n, f, m) for n, f, m in rows if not all(f.values())]


def test_a_wrong_array_is_shown_by_a_few_numbers_and_its_shape():
    """Where a message says that an array is wrong (a gradient, an output, unbroadcast's
    result), it shows a few numbers of the expected array and of what came back, each with
    its shape."""
    wrong_array = re.compile(r"(\.grad|\.data|unbroadcast\(.*\))(\[[0-9, ]*\])? should")
    shown = 0
    for name, cell, nb in slips():
        message = graded(nb, A)[cell]
        if wrong_array.search(message.splitlines()[0]):
            for word in ("expected", "got"):
                assert re.search(rf"^{word} .* of shape \(", message, re.M), (name, message)
            shown += 1
    assert shown >= 30
